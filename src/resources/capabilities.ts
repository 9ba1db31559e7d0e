// What a host can run, as values the probe finds (src/tender) and the fleet registry stores
// (src/fleet): one home for the shapes both modules speak, neither importing the other.

/** The solo5 tender a unikernel's ABI note asks for. */
export type TenderKind = 'hvt' | 'spt';

export interface TenderCapability {
  readonly kind: TenderKind;
  /** Absolute path of the tender executable. */
  readonly path: string;
  /** The first line of `--version` (`solo5-hvt tender, version v0.12.1`). */
  readonly version: string;
  /** N of its `ABI version N` line; a tender without such a line is not listed. */
  readonly abi: number;
}

export interface BridgeCapability {
  readonly name: string;
  /** Administratively up (`ip link` flag UP). */
  readonly up: boolean;
}

/**
 * What a host can run, as the probe finds it and the fleet registry stores it (JSON). Produced by
 * probing, never by configuration; absent is false, 0 or empty, so an unprobed host and an
 * incapable one look the same.
 */
export interface HostCapabilities {
  /** The KVM device opened read-write and answered KVM_GET_API_VERSION with 12. */
  readonly kvm: boolean;
  /** Every tender found whose `--version` printed an ABI line (hvt before spt). */
  readonly tenders: readonly TenderCapability[];
  /** The tun device opened read-write. */
  readonly tun: boolean;
  /** Every bridge, sorted by name. */
  readonly bridges: readonly BridgeCapability[];
  /** Online processors. */
  readonly cpus: number;
  /** Physical memory, MiB rounded down. */
  readonly memoryMiB: number;
  /** Total size of the file system holding `<state-dir>/block`, MiB rounded down. */
  readonly blockStorageMiB: number;
  /** A tap could really be created and deleted (CAP_NET_ADMIN). */
  readonly netAdmin: boolean;
}

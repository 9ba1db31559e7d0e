// The engine's view of the host: the EngineHost interface (every side effect a transaction
// performs, each returning its undo), its options and the jail types; createHost (host.ts) builds it.

import type { FileHandle } from 'node:fs/promises';
import type { ImageRef, StagedImage, StoreCleanup } from '../host/images.js';
import type { Undoable } from '../host/undo.js';
import type { PetrelError, Result } from '../resources/errors.js';
import type { IdRange, JailLimits } from '../resources/jail.js';
import type { Name } from '../resources/name.js';
import type { TenderKind } from '../tender/elf.js';
import type { Leftover } from './leftovers.js';
import type { TenderHost } from './tenders.js';
import type { HostResult } from './types.js';

export type { HostResult } from './types.js';

/** Host artefacts that belong to unikernels taken over at start-up: clean-up leaves them. */
export interface OwnedArtefacts {
  readonly names: readonly Name[];
  /** Jail ids of adopted tenders (their block files and cgroups stay as they are). */
  readonly jailIds?: readonly number[];
  readonly taps: readonly string[];
  /** Files: console FIFOs and image files. */
  readonly files: readonly string[];
}

export interface EngineHost extends TenderHost {
  /** Creates the run, state and block directories (0700) when missing. */
  makeDirectories(): HostResult<void>;
  /** Every host bridge exists (`interface <name> does not exist`). */
  checkBridges(bridges: readonly string[]): HostResult<void>;
  /** The tender for an image's target and ABI version, its `--version` checked. */
  findTender(kind: TenderKind, abiVersion: number): HostResult<string>;
  /**
   * Receives an image into the store's staging area: inflated when `compressed`, hashed and
   * fsynced in a temporary file (see src/host/images.ts). Bounded by the frame limit.
   */
  stageImage(
    chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
    compressed: boolean,
  ): HostResult<StagedImage>;
  /** Drops a staged image (nothing when it was moved into the store). */
  discardStaged(staged: StagedImage): Promise<void>;
  /** Moves a staged image into the store (rename, directory fsync); returns its path. */
  storeImage(staged: StagedImage): HostResult<string>;
  /** Removes an image nothing refers to from the store. */
  removeStoredImage(digest: string): HostResult<void>;
  /** Reads a stored image and checks its digest. */
  verifyImage(image: ImageRef): HostResult<void>;
  /** Opens a stored image for reading (its size checked). */
  openImage(image: ImageRef): HostResult<FileHandle>;
  storedImagePath(digest: string): string;
  /** `<run-dir>/<name>.img` → the stored image (or `file`, an image run where it is installed). */
  linkImage(name: Name, digest: string, file?: string): HostResult<Undoable<string>>;
  /**
   * Start-up: removes store temporaries and images `referenced` does not name; reports the
   * referenced ones that are missing or have another size.
   */
  cleanStore(referenced: ReadonlyMap<string, number>): HostResult<StoreCleanup>;
  makeFifo(name: Name): HostResult<Undoable<string>>;
  /** A tap on `bridge`, owned by `owner` (a jail's id) when given, so its tender attaches unprivileged. */
  createTap(bridge: string, owner?: number): HostResult<Undoable<string>>;
  /**
   * The jail of a tender about to start: its id taken, and the petrel-jail command that goes
   * before the tender's own arguments. Null when jails are off. Undo releases it (releaseJail).
   */
  makeJail(request: JailRequest): HostResult<Undoable<Jail | null>>;
  /** After its tender exited: its block files back to root, its cgroups removed, its id free. */
  releaseJail(jail: HeldJail): HostResult<void>;
  /** Which jail limit ended a tender, if one did (read before releaseJail removes its cgroups). */
  jailLimitHit(jail: HeldJail, exit: { code: number | null; signal: string | null }): Promise<string | null>;
  /** An adopted tender's jail (from the holder's meta): its id is taken again. */
  holdJail(id: number, blocks: readonly string[]): HeldJail;
  /** Its host-wide claim, written again if a crash lost it. */
  holdJailClaim(id: number): Promise<void>;
  /** What jails put in force on this host; null when jails are off. */
  jailInfo(): JailInfo | null;
  /** Release after a tender exited (semantics §5.8 order: image link, FIFO, taps). */
  removeImageLink(file: string): HostResult<void>;
  removeFifo(file: string): HostResult<void>;
  removeTap(tap: string): HostResult<void>;
  blockPath(name: Name): Result<string, PetrelError>;
  createBlock(name: Name, sizeMiB: number): HostResult<Undoable<string>>;
  removeBlock(name: Name): HostResult<Undoable<string>>;
  /** Replaces a block device's content from a stream (see src/host/blockdata.ts). */
  writeBlockData(
    name: Name,
    sizeMiB: number,
    chunks: AsyncIterable<Uint8Array>,
    compressed: boolean,
    tooLarge?: string,
  ): HostResult<void>;
  /** A block device's content in 4096-byte pieces, deflated at `level` when level > 0. */
  readBlockData(name: Name, level: number): AsyncIterable<Uint8Array>;
  /**
   * Block devices found in `<state-dir>/block` (files that are whole MiB and named by a Name),
   * after putting back a block file whose removal a crash interrupted (`recovered` says so).
   */
  scanBlocks(): HostResult<{ blocks: { name: Name; sizeMiB: number }[]; recovered: string[] }>;
  /** Petrel's state as stored: the snapshot and the journal, each null when missing. */
  readState(): HostResult<{ snapshot: Uint8Array | null; journal: Uint8Array | null }>;
  /** Appends one entry to the journal durably (cut back on failure). */
  appendJournal(entry: Uint8Array): HostResult<void>;
  /** Replaces the snapshot atomically and durably. */
  writeSnapshot(bytes: Uint8Array): HostResult<void>;
  /** Replaces the journal by an empty one, atomically and durably. */
  resetJournal(): HostResult<void>;
  /** Writes the state as read at this start to `petrel.state.started` (kept whatever happens). */
  keepStartedCopy(bytes: Uint8Array): HostResult<void>;
  /** Gives up the state directory's reserve (src/host/space.ts); true when there was one. */
  releaseReserve(): Promise<boolean>;
  /** Makes the reserve whole if space allows; true when it is. */
  refillReserve(): Promise<boolean>;
  /** Free bytes of the state directory for Petrel's writes (metrics, preflight). */
  freeBytes(): Promise<number>;
  /** `<state-dir>/state`, the Albatross-format file earlier Petrel versions wrote; null if none. */
  readLegacyState(): HostResult<Uint8Array | null>;
  /** Renames `<state-dir>/state` to `state.pre-store` once its content is in Petrel's state. */
  retireLegacyState(): HostResult<string>;
  /**
   * Removes what a previous run left behind and no adopted unikernel owns (Petrel (e), (k)):
   * temporaries, recorded tenders, taps with the prefix, FIFOs, per-unikernel files; returns
   * what it did, for the log.
   */
  cleanLeftovers(owned: OwnedArtefacts): HostResult<Leftover[]>;
}

export interface JailRequest {
  readonly kind: TenderKind;
  readonly tender: string;
  readonly memoryMiB: number;
  readonly cpuids: readonly number[];
  /** The image file the tender is given (copied into the jail). */
  readonly image: string;
  /** Its block files (their sizes bound RLIMIT_FSIZE). */
  readonly blocks: readonly string[];
  readonly nets: number;
}

/** What a running tender's jail is, for as long as it runs: what its release and its exit need. */
export interface HeldJail {
  readonly id: number;
  readonly limits: JailLimits | null;
  /** Block files it was given (chowned to its id by petrel-jail). */
  readonly blocks: readonly string[];
}

/** A jail about to start its tender. */
export interface Jail extends HeldJail {
  /**
   * petrel-jail and its options, up to and including `--`: the tender's argv follows. Not kept
   * once the tender runs (a few kilobytes of cgroup paths per unikernel).
   */
  readonly prefix: readonly string[];
}

export interface JailInfo {
  readonly ids: IdRange;
  readonly inUse: number;
  /** Resource limits and cgroup controllers in force for every jailed tender. */
  readonly limits: readonly string[];
  readonly cgroups: string;
}

export interface JailOptions {
  readonly ids: IdRange;
  /** Files bound read-only into every jail besides the tender and what it loads (test doubles). */
  readonly allow: readonly string[];
  /** The jail program. Default: the bundled native/build/petrel-jail. */
  readonly program?: string;
  /** The host-wide directory of id claims (src/host/jail-claims.ts). Default /run/petrel-ids. */
  readonly claims?: string;
  /** The KVM device an hvt jail gets at /dev/kvm: `kvmDevice`, as the probe opened it. */
  readonly kvmDevice: string;
}

export interface HostOptions {
  /** Jail every tender (docs/threat-model.md); absent or null: tenders run as petreld's user, unjailed. */
  readonly jail?: JailOptions | null;
  readonly runDir: string;
  readonly stateDir: string;
  /** Most bytes an image may arrive with (the frame limit). Default 64 MiB. */
  readonly maxImageBytes?: number;
  readonly tapPrefix: string;
  /** `--tender-hvt` / `--tender-spt`. */
  readonly tenders?: { readonly hvt?: string; readonly spt?: string };
  /** Network namespace for taps, bridges and tenders (tests); absent = the host's. */
  readonly netns?: string;
  /** Grace period for leftover tenders found at start (ms). */
  readonly stopTimeoutMs: number;
  /** Bytes of console the holder keeps per tender while no petreld is attached. Default 64 KiB. */
  readonly consoleBufferBytes?: number;
  /** The state directory's reserve (`stateReserve`). Default 1 MiB. */
  readonly reserveBytes?: number;
  /** Free bytes creates, block devices and streams leave (`stateMinFree`). Default 4 MiB. */
  readonly minFree?: number;
}

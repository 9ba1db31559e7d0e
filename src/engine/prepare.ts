// Step 2 of a create transaction: everything about a new unikernel that can be checked without
// touching the host (semantics §5.3 step 3 minus its side effects), in Albatross' order. A
// force-create or restart runs this BEFORE the old unikernel is stopped (Petrel (b)).

import { err, ok, type PetrelError, type Result, unwrap } from '../resources/errors.js';
import { type Label, type Name, parseLabel } from '../resources/name.js';
import type { Allocation } from '../resources/tree.js';
import { readSolo5Notes, type TenderKind, tenderKindOf } from '../tender/elf.js';
import { imageDigest, inflateImage } from '../tender/image.js';
import { checkManifestDevices } from '../tender/manifest.js';
import type { UnikernelConfig } from '../wire/types.js';
import type { EngineHost } from './host.js';
import { unsupportedType } from './replies.js';

/** A unikernel name: a Name with a label. */
export type VmName = Name & { readonly label: Label };

export interface Prepared {
  readonly name: VmName;
  /** As the client sent it (image possibly compressed): persisted and returned by `get`. */
  readonly config: UnikernelConfig;
  /** The inflated image the tender runs. */
  readonly image: Buffer;
  /** SHA-256 of the inflated image. */
  readonly digest: Uint8Array;
  readonly kind: TenderKind;
  readonly tender: string;
  readonly allocation: Allocation;
}

export const hostBridge = (net: { netif: string; bridge: string | null }): string => net.bridge ?? net.netif;
export const hostBlock = (block: { device: string; hostDevice: string | null }): string =>
  block.hostDevice ?? block.device;

/** The label of a block device's host name (checked by `allocationOf` before any use). */
export function blockLabel(block: { device: string; hostDevice: string | null }): Label {
  return unwrap(parseLabel(hostBlock(block)));
}

/** What the unikernel takes from the resource tree; block names must be labels. */
export function allocationOf(config: UnikernelConfig): Result<Allocation, PetrelError> {
  const blocks: Label[] = [];
  for (const block of config.blocks) {
    const label = parseLabel(hostBlock(block));
    if (!label.ok) {
      return err('E_BLOCK_NAME', `invalid block device name ${JSON.stringify(hostBlock(block))}`);
    }
    blocks.push(label.value);
  }
  return ok({
    memory: config.memory,
    cpuids: config.cpuids,
    bridges: config.bridges.map(hostBridge),
    blocks,
  });
}

/** Inflate, digest, ABI note → tender, manifest against the devices, bridges exist. */
export async function prepare(
  host: EngineHost,
  name: VmName,
  config: UnikernelConfig,
  runtimes: readonly TenderKind[] = ['hvt', 'spt'],
): Promise<Result<Prepared, PetrelError>> {
  if (config.typ !== 'solo5') return err('E_UNSUPPORTED_TYPE', unsupportedType(config.typ));
  const allocation = allocationOf(config);
  if (!allocation.ok) return allocation;
  const image = await inflateImage(config.image, config.compressed);
  if (!image.ok) return image;
  const notes = readSolo5Notes(image.value, 'image');
  if (!notes.ok) return notes;
  const kind = tenderKindOf(notes.value.abi);
  if (!kind.ok) return kind;
  if (!runtimes.includes(kind.value)) {
    const configured = runtimes.length === 0 ? 'none' : runtimes.join(',');
    return err('E_RUNTIME', `this node does not run ${kind.value} unikernels (--runtimes ${configured})`);
  }
  const tender = await host.findTender(kind.value, notes.value.abi.version);
  if (!tender.ok) return tender;
  const devices = checkManifestDevices(notes.value.devices, {
    blocks: config.blocks.map((b) => b.device),
    nets: config.bridges.map((n) => n.netif),
  });
  if (!devices.ok) return devices;
  const bridges = await host.checkBridges([...new Set(config.bridges.map(hostBridge))]);
  if (!bridges.ok) return bridges;
  return ok({
    name,
    config,
    image: image.value,
    digest: Buffer.from(imageDigest(image.value), 'hex'),
    kind: kind.value,
    tender: tender.value,
    allocation: allocation.value,
  });
}

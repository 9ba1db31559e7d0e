// Step 2 of a create transaction: everything about a new unikernel that can be checked without
// touching the host (semantics §5.3 step 3 minus its side effects), in Albatross' order. A
// force-create or restart runs this BEFORE the old unikernel is stopped (Petrel (b)).

import type { ImageRef, StagedImage } from '../host/images.js';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import type { Allocation } from '../resources/tree.js';
import { readSolo5NotesFromFile, type TenderKind, tenderKindOf } from '../tender/elf.js';
import { checkManifestDevices } from '../tender/manifest.js';
import { allocationOf, hostBridge } from '../wire/allocation.js';
import type { KeptConfig } from '../wire/petrel-state.js';
import type { EngineHost } from './host-types.js';
import { unsupportedType } from './replies.js';
import type { VmName } from './types.js';

export type { VmName } from './types.js';

/**
 * The image of a transaction: one just received (staged, or the error receiving it met, which
 * is reported in Albatross' order: after admission), or one already in the store — read again
 * (restart, force-create with the same configuration), so its digest is checked when `verify`.
 */
export type ImageInput =
  | { readonly kind: 'staged'; readonly staged: Result<StagedImage, PetrelError> }
  | { readonly kind: 'stored'; readonly image: ImageRef; readonly verify: boolean }
  /** An installed file run where it is, never stored (the boot canary: start-up writes no state). */
  | { readonly kind: 'file'; readonly file: string; readonly image: ImageRef };

/** An image already in the store, read again (restart, rollback): its digest is checked. */
export const readAgain = (image: ImageRef): ImageInput => ({ kind: 'stored', image, verify: true });

/** Runs `use` with an image being staged, then drops what staging left (nothing once stored). */
export async function withStaged<R>(
  host: EngineHost,
  staging: Promise<Result<StagedImage, PetrelError>>,
  use: (staged: Result<StagedImage, PetrelError>) => Promise<R>,
): Promise<R> {
  const staged = await staging;
  try {
    return await use(staged);
  } finally {
    if (staged.ok) await host.discardStaged(staged.value);
  }
}

export interface Prepared {
  readonly name: VmName;
  /** As the client sent it, without the image: persisted, reused by restart. */
  readonly config: KeptConfig;
  /** The image in the store (or about to enter it: `staged`). */
  readonly image: ImageRef;
  /** Moved into the store by the launch; null when the image is stored already. */
  readonly staged: StagedImage | null;
  /** The file the image link points to when it is not the store's (`kind: 'file'`). */
  readonly file: string | null;
  readonly kind: TenderKind;
  readonly tender: string;
  readonly allocation: Allocation;
}

export { allocationOf, blockLabel, hostBlock, hostBridge } from '../wire/allocation.js';

/**
 * The image received (inflated and digested while staged) or checked again, its ABI note →
 * tender, the manifest against the devices, the bridges exist. The notes are read from the
 * image's file, never from a copy in memory.
 */
export async function prepare(
  host: EngineHost,
  name: VmName,
  config: KeptConfig,
  input: ImageInput,
  runtimes: readonly TenderKind[] = ['hvt', 'spt'],
): Promise<Result<Prepared, PetrelError>> {
  if (config.typ !== 'solo5') return err('E_UNSUPPORTED_TYPE', unsupportedType(config.typ));
  const allocation = allocationOf(config);
  if (!allocation.ok) return allocation;
  let image: ImageRef;
  let staged: StagedImage | null = null;
  let file: string;
  if (input.kind === 'staged') {
    if (!input.staged.ok) return input.staged;
    staged = input.staged.value;
    image = { digest: staged.digest, size: staged.size };
    file = staged.file;
  } else if (input.kind === 'file') {
    image = input.image;
    file = input.file;
  } else {
    image = input.image;
    if (input.verify) {
      const verified = await host.verifyImage(image);
      if (!verified.ok) return verified;
    }
    file = host.storedImagePath(image.digest);
  }
  const notes = await readSolo5NotesFromFile(file, 'image');
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
    image,
    staged,
    file: input.kind === 'file' ? input.file : null,
    kind: kind.value,
    tender: tender.value,
    allocation: allocation.value,
  });
}

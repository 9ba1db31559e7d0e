// Albatross state files (albatross-wire.md §5, images inside) in and out of Petrel's state
// (petrel-differences.md (j)): an imported file's images go to the store and its unikernels
// become records naming them; an export writes State [6] with every image embedded again,
// piece by piece, so no more than one image is in memory at a time.

import { createHash } from 'node:crypto';
import { constants, open, rename } from 'node:fs/promises';
import path from 'node:path';
import { fsyncDir, ioError, temporaryName, unlinkIfPresent } from '../host/files.js';
import { readImageFrom } from '../host/images.js';
import { deflateChunks } from '../host/zstream.js';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import { printName } from '../resources/name.js';
import { encConfigWithImage } from '../wire/config.js';
import { enc, TAG, toBytes } from '../wire/der.js';
import type { PetrelState, UnikernelRecord } from '../wire/petrel-state.js';
import { upgradeState } from '../wire/shapes.js';
import { decodeState, encStatePolicies, sortStateNames, stateEntry, stateV6Head } from '../wire/state.js';
import type { StatePolicy } from '../wire/types.js';
import type { EngineHost } from './host.js';

export interface ImportedState {
  readonly unikernels: readonly UnikernelRecord[];
  readonly policies: readonly StatePolicy[];
  /** Unikernels whose image could not be taken (it does not inflate, it is too large), and why. */
  readonly failed: readonly { readonly name: string; readonly reason: string }[];
  /** SHA-256 of the file, so that the same file is not imported twice. */
  readonly digest: string;
}

/** SHA-256 of a state file, lower-case hex. */
export const fileDigest = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/**
 * Decodes an Albatross state file of any version ([0]–[6]) and moves its images into the store
 * (each stored before anything refers to it). `what` names the file in errors.
 */
export async function importAlbatrossState(
  host: EngineHost,
  bytes: Uint8Array,
  what: string,
): Promise<Result<ImportedState, PetrelError>> {
  const decoded = decodeState(bytes);
  if (!decoded.ok) return err('E_STATE_READ', `${what}: ${decoded.error.message}`, { cause: decoded.error });
  const state = upgradeState(decoded.value);
  const unikernels: UnikernelRecord[] = [];
  const failed: { name: string; reason: string }[] = [];
  for (const { name, config } of state.unikernels) {
    const { image, ...kept } = config;
    const staged = await host.stageImage([image], config.compressed);
    if (!staged.ok) {
      failed.push({ name: printName(name), reason: staged.error.message });
      continue;
    }
    const stored = await host.storeImage(staged.value);
    if (!stored.ok) {
      await host.discardStaged(staged.value);
      return stored;
    }
    unikernels.push({ name, config: kept, image: { digest: staged.value.digest, size: staged.value.size } });
  }
  return ok({ unikernels, policies: state.policies, failed, digest: fileDigest(bytes) });
}

/** The zlib level of images exported for a unikernel created with a compressed image. */
const EXPORT_LEVEL = 6;

/** The image of a record as the export embeds it: as stored, or deflated again. */
async function* exported(host: EngineHost, record: UnikernelRecord): AsyncGenerator<Uint8Array> {
  const opened = await host.openImage(record.image);
  if (!opened.ok) throw new Error(`${printName(record.name)}: ${opened.error.message}`);
  const hash = createHash('sha256');
  try {
    const raw = (async function* () {
      for await (const piece of readImageFrom(opened.value)) {
        hash.update(piece);
        yield piece;
      }
    })();
    yield* record.config.compressed ? deflateChunks(raw, EXPORT_LEVEL) : raw;
  } finally {
    await opened.value.close();
  }
  if (hash.digest('hex') !== record.image.digest)
    throw new Error(`${printName(record.name)}: image ${record.image.digest} in the store is damaged`);
}

async function exportedLength(host: EngineHost, record: UnikernelRecord): Promise<number> {
  if (!record.config.compressed) {
    // Read all the same: the digest is checked before anything is written.
    for await (const _ of exported(host, record));
    return record.image.size;
  }
  let length = 0;
  for await (const piece of exported(host, record)) length += piece.length;
  return length;
}

/**
 * Writes `state` as an Albatross State [6] file at `out` (atomically: temporary file, fsync,
 * rename), images embedded (deflated again for unikernels created with a compressed image).
 * Every image's digest is checked on the way.
 */
export async function exportAlbatrossState(
  host: EngineHost,
  state: PetrelState,
  out: string,
): Promise<Result<{ readonly unikernels: number; readonly bytes: number }, PetrelError>> {
  const records = sortStateNames(state.unikernels);
  const temp = temporaryName(out);
  try {
    const sizes: number[] = [];
    for (const record of records) {
      const length = await exportedLength(host, record);
      sizes.push(
        stateEntry(record.name, encConfigWithImage(record.config, enc.omitted(TAG.OCTET_STRING, length)))
          .size,
      );
    }
    const tail = toBytes(encStatePolicies(state.policies));
    const head = stateV6Head(
      sizes.reduce((a, b) => a + b, 0),
      tail.length,
    );
    if (!head.ok) return head;
    const handle = await open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
    let written = 0;
    try {
      const write = async (bytes: Uint8Array) => {
        await handle.write(bytes);
        written += bytes.length;
      };
      await write(head.value);
      for (const [i, record] of records.entries()) {
        const pieces: Uint8Array[] = [];
        for await (const piece of exported(host, record)) pieces.push(piece);
        const entry = toBytes(
          stateEntry(record.name, encConfigWithImage(record.config, enc.octets(Buffer.concat(pieces)))),
        );
        if (entry.length !== sizes[i])
          return err('E_STATE_EXPORT', `${printName(record.name)}: its image changed during the export`);
        await write(entry);
      }
      await write(tail);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, out);
    await fsyncDir(path.dirname(out));
    return ok({ unikernels: records.length, bytes: written });
  } catch (cause) {
    const e = cause as NodeJS.ErrnoException;
    if (e.syscall !== undefined) return { ok: false, error: ioError(e.syscall, out, cause) };
    return err('E_STATE_EXPORT', `export failed: ${e.message}`);
  } finally {
    await unlinkIfPresent(temp).catch(() => undefined);
  }
}

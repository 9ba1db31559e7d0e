// Albatross state files (albatross-wire.md §5, images inside) in and out of Petrel's state
// (petrel-differences.md (j)): at start-up an earlier Petrel's state file is migrated and a file
// given is imported, their images into the store and their unikernels records naming them; an
// export writes State [6] with every image embedded again, piece by piece, so no more than one
// image is in memory at a time.

import { createHash } from 'node:crypto';
import { constants, open, rename } from 'node:fs/promises';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import { fsyncDir, ioError, temporaryName, unlinkIfPresent } from '../host/files.js';
import { readImageFrom } from '../host/images.js';
import { deflateChunks } from '../host/zstream.js';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import { pathName, printName, printPath } from '../resources/name.js';
import { encConfigWithImage } from '../wire/config.js';
import { enc, TAG, toBytes } from '../wire/der.js';
import type { PetrelState, UnikernelRecord } from '../wire/petrel-state.js';
import { upgradeState } from '../wire/shapes.js';
import { decodeState, encStatePolicies, sortStateNames, stateEntry, stateV6Head } from '../wire/state.js';
import type { StatePolicy } from '../wire/types.js';
import type { EngineHost } from './host-types.js';
import type { StateBook } from './state-book.js';

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

/** A unikernel left out, and why (logged by the restore). */
export interface Dropped {
  readonly name: string;
  readonly reason: string;
}

/**
 * The committed state; when there is none yet, the state file an earlier Petrel wrote (images
 * inside, Albatross' format) is migrated: its images go to the store. `retire` says the old
 * file is to be renamed once the migrated state is committed.
 */
export async function committedState(
  book: StateBook,
  host: EngineHost,
  log: Logger,
  failed: Dropped[],
): Promise<Result<{ state: PetrelState; retire: boolean }, PetrelError>> {
  const loaded = await book.load();
  if (!loaded.ok) return loaded;
  if (loaded.value.ignoredBytes > 0)
    log.warn(
      { bytes: loaded.value.ignoredBytes },
      'a torn entry at the end of the state journal was ignored',
    );
  const legacy = await host.readLegacyState();
  if (!legacy.ok) return legacy;
  const { state } = loaded.value;
  if (legacy.value === null) return ok({ state, retire: false });
  if (loaded.value.found) {
    // A migration that stopped before the old file was renamed, or a file put there since.
    if (state.imported.includes(fileDigest(legacy.value))) return ok({ state, retire: true });
    log.warn(
      'the state file in the Albatross format is ignored: Petrel has its own state (import it with --import-albatross-state)',
    );
    return ok({ state, retire: false });
  }
  const migrated = await importAlbatrossState(host, legacy.value, 'state');
  if (!migrated.ok)
    return err('E_STATE_READ', `bailing out: ${migrated.error.message}`, { cause: migrated.error });
  failed.push(...migrated.value.failed);
  const { unikernels, policies, digest } = migrated.value;
  log.info({ unikernels: unikernels.length }, 'migrating the state file: images move to the store');
  return ok({ state: { unikernels, policies, imported: [digest] }, retire: true });
}

/** `state` with an Albatross state file's unikernels and policies added, once per file. */
export async function withImported(
  host: EngineHost,
  log: Logger,
  state: PetrelState,
  file: { readonly bytes: Uint8Array; readonly source: string } | undefined,
  failed: Dropped[],
): Promise<Result<PetrelState, PetrelError>> {
  if (file === undefined) return ok(state);
  if (state.imported.includes(fileDigest(file.bytes))) {
    log.info({ file: file.source }, 'Albatross state file imported before; not again');
    return ok(state);
  }
  const taken = await importAlbatrossState(host, file.bytes, file.source);
  if (!taken.ok) return err('E_STATE_IMPORT', `import: ${taken.error.message}`, { cause: taken.error });
  const names = new Set(state.unikernels.map((u) => printName(u.name)));
  for (const u of taken.value.unikernels) {
    if (names.has(printName(u.name)))
      return err('E_STATE_IMPORT', `import: ${file.source}: unikernel ${printName(u.name)} exists already`);
  }
  const policies = new Map(state.policies.map((p) => [printName(pathName(p.path)), p.policy]));
  const added = taken.value.policies.filter((p) => p.path.length > 0);
  for (const p of added) {
    const had = policies.get(printName(pathName(p.path)));
    if (had !== undefined && !isDeepStrictEqual(had, p.policy))
      return err(
        'E_STATE_IMPORT',
        `import: ${file.source}: policy ${printPath(p.path)} differs from the one here`,
      );
  }
  failed.push(...taken.value.failed);
  log.info(
    { file: file.source, unikernels: taken.value.unikernels.length },
    'importing an Albatross state file',
  );
  return ok({
    unikernels: [...state.unikernels, ...taken.value.unikernels],
    policies: [...state.policies, ...added.filter((p) => !policies.has(printName(pathName(p.path))))],
    imported: [...state.imported, taken.value.digest],
  });
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

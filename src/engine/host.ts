// The engine's host (EngineHost, host-types.ts): every side effect a transaction performs, built
// from src/host and src/tender, the jail part in host-jail.ts and the tender part in tenders.ts;
// tests wrap it to inject failures at any step (the engine never reaches the host any other way).

import { chmod, mkdir, readFile, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { readBlockData, replaceBlockData } from '../host/blockdata.js';
import { checkBridges } from '../host/bridges.js';
import { FifoPool, listFifos, makeFifo, removeFifoAt, SPARE_PREFIX } from '../host/fifo.js';
import {
  appendDurably,
  createBlockFile,
  fsyncDir,
  ioError,
  listDirectory,
  makePrivateDirs,
  recoverBlockDirectory,
  removeBlockFile,
  removeTemporaryFiles,
  unlinkIfPresent,
  writeFileAtomic,
} from '../host/files.js';
import {
  cleanStore,
  commitImage,
  discardStaged,
  imagesDir,
  linkImage,
  openImage,
  removeImage,
  stageImage,
  storedImagePath,
  verifyImage,
} from '../host/images.js';
import type { NetOptions } from '../host/ip.js';
import { blockDir, blockPath, fifoDir, pidRecordPath } from '../host/paths.js';
import { readPidRecords, removePidRecord, stopRecordedProcess } from '../host/pidrecord.js';
import { checkRunDir, inRunDir, StateSpace } from '../host/space.js';
import { listOwnedTaps, removeTap, TapNames } from '../host/tap.js';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import { type Name, parseName, printName } from '../resources/name.js';
import { findTender } from '../tender/lookup.js';
import { checkTenderAbi, TenderVersionCache } from '../tender/version.js';
import { createJailHost } from './host-jail.js';
import type { EngineHost, HostOptions } from './host-types.js';
import { createTenderHost } from './tenders.js';
import type { HostResult } from './types.js';

export type {
  EngineHost,
  HeldJail,
  HostOptions,
  HostResult,
  Jail,
  JailInfo,
  JailOptions,
  JailRequest,
  OwnedArtefacts,
} from './host-types.js';

import { type Leftover, leftover, leftoverFailed } from './leftovers.js';

const MIB = 1024 * 1024;
/** Most bytes an image may inflate to: hvt guests have at most 4 GiB, images are far smaller. */
const MAX_INFLATED = 1024 * MIB;
const DEFAULT_MAX_IMAGE = 64 * MIB;

/** Petrel's state files in the state directory (petrel-differences.md (j)). */
export const STATE_FILES = {
  snapshot: 'petrel.state',
  journal: 'petrel.journal',
  started: 'petrel.state.started',
  /** What earlier Petrel versions (and Albatross) wrote, with the images inside. */
  legacy: 'state',
  legacyRetired: 'state.pre-store',
} as const;
/** How long a tender lookup is reused before the candidates are walked again (ms). */
const LOOKUP_TTL_MS = 5_000;

export function createHost(options: HostOptions): EngineHost {
  const net: NetOptions & { prefix: string } =
    options.netns === undefined
      ? { prefix: options.tapPrefix }
      : { prefix: options.tapPrefix, netns: options.netns };
  const versions = new TenderVersionCache();
  const fifos = new FifoPool(options.runDir);
  // Its own taps, so that a create names one without listing every interface of the host.
  const tapNames = new TapNames(net);
  const lookups = new Map<string, { path: string; at: number }>();
  const stateFile = (which: keyof typeof STATE_FILES) => path.join(options.stateDir, STATE_FILES[which]);
  const space = new StateSpace({
    stateDir: options.stateDir,
    reserveBytes: options.reserveBytes ?? MIB,
    minFree: options.minFree ?? 4 * MIB,
  });
  const stageLimits = {
    maxBytes: options.maxImageBytes ?? DEFAULT_MAX_IMAGE,
    maxInflated: MAX_INFLATED,
    space,
  };
  const tenders = createTenderHost({
    runDir: options.runDir,
    stopTimeoutMs: options.stopTimeoutMs,
    ...(options.netns === undefined ? {} : { netns: options.netns }),
    ...(options.consoleBufferBytes === undefined ? {} : { consoleBufferBytes: options.consoleBufferBytes }),
  });
  const jails = createJailHost(options.jail ?? null, () => tenders.holderPid());

  return {
    ...tenders,
    async makeDirectories() {
      const dirs = await makePrivateDirs(
        options.runDir,
        options.stateDir,
        blockDir(options.stateDir),
        imagesDir(options.stateDir),
      );
      if (!dirs.ok) return dirs;
      // The console FIFOs' directory is petreld's alone (src/host/fifo.ts says why); one made
      // 0755 by an earlier version is closed here, since the run directory outlives restarts.
      const fifos = fifoDir(options.runDir);
      try {
        await mkdir(fifos, { recursive: true, mode: 0o700 });
        await chmod(fifos, 0o700);
      } catch (cause) {
        return { ok: false, error: ioError('chmod', fifos, cause) };
      }
      return ok(undefined);
    },

    checkBridges: (bridges) => checkBridges(bridges, net),

    async findTender(kind, abiVersion) {
      // The walk over the candidates costs a handful of stats per create; its result is kept
      // for a few seconds (a tender installed meanwhile is found after that), and the
      // --version check still runs against the file as it is now.
      const key = `${kind}:${abiVersion}`;
      const cached = lookups.get(key);
      let path: string;
      if (cached !== undefined && Date.now() - cached.at < LOOKUP_TTL_MS) {
        path = cached.path;
      } else {
        const explicit = options.tenders?.[kind];
        const found = await findTender({
          kind,
          abiVersion,
          stateDir: options.stateDir,
          ...(explicit === undefined ? {} : { explicit }),
        });
        if (!found.ok) return found;
        path = found.value;
      }
      const checked = await checkTenderAbi(path, abiVersion, versions);
      if (!checked.ok) {
        lookups.delete(key);
        return checked;
      }
      lookups.set(key, { path, at: cached?.path === path ? cached.at : Date.now() });
      return ok(path);
    },

    // A create that cannot have its FIFO, PID record and link in the run directory is refused
    // before its image is staged, and each run-directory step's ENOSPC names the space.
    async stageImage(chunks, compressed) {
      const room = await checkRunDir(options.runDir);
      if (!room.ok) return room;
      return stageImage(options.stateDir, chunks, { ...stageLimits, compressed });
    },
    discardStaged,
    storeImage: (staged) => commitImage(options.stateDir, staged),
    removeStoredImage: (digest) => removeImage(options.stateDir, digest),
    verifyImage: (image) => verifyImage(options.stateDir, image),
    openImage: (image) => openImage(options.stateDir, image),
    storedImagePath: (digest) => storedImagePath(options.stateDir, digest),
    async linkImage(name, digest, file) {
      const room = await checkRunDir(options.runDir);
      if (!room.ok) return room;
      const linked = await linkImage(options.runDir, options.stateDir, name, digest, file);
      return linked.ok ? linked : { ok: false, error: await inRunDir(options.runDir, linked.error) };
    },
    cleanStore: (referenced) => cleanStore(options.stateDir, referenced),
    async makeFifo(name) {
      const made = await makeFifo(options.runDir, name, fifos.create);
      return made.ok ? made : { ok: false, error: await inRunDir(options.runDir, made.error) };
    },
    async spawnTender(argv, fifo, name, meta, jailed) {
      // Its PID record is written in the run directory once it runs (src/tender/process.ts).
      const spawned = await tenders.spawnTender(argv, fifo, name, meta, jailed);
      return spawned.ok ? spawned : { ok: false, error: await inRunDir(options.runDir, spawned.error) };
    },
    createTap: (bridge, owner) => tapNames.create(bridge, owner),
    ...jails.steps,
    async removeImageLink(file) {
      try {
        await unlinkIfPresent(file);
        return ok(undefined);
      } catch (cause) {
        return { ok: false, error: ioError('unlink', file, cause) };
      }
    },
    removeFifo: (file) => removeFifoAt(file),
    removeTap: (tap) => tapNames.remove(tap),

    blockPath: (name) => blockPath(options.stateDir, name),
    async createBlock(name, sizeMiB) {
      // Sparse, but its whole size is promised to the guest: it must fit now (space.ts).
      const fits = await space.check(`block ${printName(name)}: ${sizeMiB} MiB do not fit`, sizeMiB * MIB);
      if (!fits.ok) return fits;
      return createBlockFile(options.stateDir, name, sizeMiB);
    },
    removeBlock: (name) => removeBlockFile(options.stateDir, name),
    writeBlockData: (name, sizeMiB, chunks, compressed, tooLarge) =>
      replaceBlockData(options.stateDir, name, sizeMiB, chunks, compressed, tooLarge),
    readBlockData: (name, level) => readBlockData(options.stateDir, name, level),

    async scanBlocks() {
      const recovered = await recoverBlockDirectory(options.stateDir);
      if (!recovered.ok) return recovered;
      const dir = blockDir(options.stateDir);
      const files = await listDirectory(dir);
      if (!files.ok) return files;
      const found: { name: Name; sizeMiB: number }[] = [];
      for (const file of files.value) {
        const name = parseName(file);
        if (!name.ok || name.value.label === null || printName(name.value) !== file) continue;
        const info = await stat(path.join(dir, file)).catch(() => null);
        if (info?.isFile() && info.size > 0 && info.size % MIB === 0) {
          found.push({ name: name.value, sizeMiB: info.size / MIB });
        }
      }
      return ok({ blocks: found, recovered: recovered.value });
    },

    async readState() {
      const snapshot = await readOptional(stateFile('snapshot'));
      if (!snapshot.ok) return snapshot;
      const journal = await readOptional(stateFile('journal'));
      if (!journal.ok) return journal;
      return ok({ snapshot: snapshot.value, journal: journal.value });
    },
    appendJournal: (entry) => appendDurably(stateFile('journal'), entry),
    writeSnapshot: (bytes) => written(writeFileAtomic(stateFile('snapshot'), bytes)),
    resetJournal: () => written(writeFileAtomic(stateFile('journal'), new Uint8Array(0))),
    keepStartedCopy: (bytes) => written(writeFileAtomic(stateFile('started'), bytes)),
    releaseReserve: () => space.release(),
    refillReserve: () => space.refill(),
    freeBytes: () => space.free(),
    readLegacyState: () => readOptional(stateFile('legacy')),
    async retireLegacyState() {
      const to = stateFile('legacyRetired');
      try {
        await rename(stateFile('legacy'), to);
        await fsyncDir(options.stateDir);
      } catch (cause) {
        return { ok: false, error: ioError('rename', stateFile('legacy'), cause) };
      }
      return ok(to);
    },

    async cleanLeftovers(owned) {
      const done: Leftover[] = [];
      for (const dir of [options.runDir, options.stateDir]) {
        const removed = await removeTemporaryFiles(dir);
        if (!removed.ok) return removed;
        done.push(...removed.value.map((what) => leftover('temporary file', what)));
      }
      const ownedRecords = new Set(owned.names.flatMap((n) => paths(pidRecordPath(options.runDir, n))));
      const ownedFiles = new Set(owned.files);
      const ownedTaps = new Set(owned.taps);
      tapNames.hold(ownedTaps);
      const records = readPidRecords(options.runDir);
      if (!records.ok) return records;
      for (const record of records.value.records) {
        if (ownedRecords.has(record.path)) continue;
        // A tender not under the holder (an earlier version's): stopped if it still runs.
        const stopped = await stopRecordedProcess(record, { graceMs: options.stopTimeoutMs });
        if (!stopped.ok) return stopped;
        if (stopped.value === 'stopped')
          done.push(leftover('tender', `stopped leftover tender ${record.pid}`));
        removePidRecord(record.path);
      }
      const taps = await listOwnedTaps(net);
      if (!taps.ok) return taps;
      for (const tap of taps.value.filter((t) => !ownedTaps.has(t))) {
        const removed = await removeTap(tap, net);
        done.push(
          removed.ok
            ? leftover('tap', `removed tap ${tap}`)
            : leftoverFailed('tap', `could not remove tap ${tap}: ${removed.error.message}`),
        );
      }
      done.push(...(await jails.reconcile(options.stateDir, owned.jailIds ?? [])));
      const listed = await listFifos(options.runDir);
      if (!listed.ok) return listed;
      for (const fifo of listed.value.fifos.filter((f) => !ownedFiles.has(f))) {
        await rm(fifo, { force: true });
        done.push(leftover('fifo', `removed fifo ${path.basename(fifo)}`));
      }
      for (const other of listed.value.others) {
        if (!path.basename(other).startsWith(SPARE_PREFIX)) continue;
        await rm(other, { recursive: true, force: true });
        done.push(leftover('fifo', `removed spare fifos ${path.basename(other)}`));
      }
      const entries = await listDirectory(options.runDir);
      if (!entries.ok) return entries;
      for (const entry of entries.value.filter((e) => e.endsWith('.img'))) {
        const file = path.join(options.runDir, entry);
        if (ownedFiles.has(file)) continue;
        await rm(file, { force: true });
        done.push(leftover('image link', `removed image link ${entry}`));
      }
      return ok(done);
    },
  };
}

/** The path of a Result, or none (a name that cannot have a file owns none). */
const paths = (result: Result<string, PetrelError>): string[] => (result.ok ? [result.value] : []);
async function written(result: HostResult<unknown>): HostResult<void> {
  const done = await result;
  return done.ok ? ok(undefined) : done;
}

async function readOptional(file: string): Promise<Result<Uint8Array | null, PetrelError>> {
  try {
    return ok(await readFile(file));
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'ENOENT') return ok(null);
    return err('E_HOST_IO', `reading ${file}: ${(cause as Error).message}`, { path: file });
  }
}

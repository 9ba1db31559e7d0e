// The engine's view of the host: every side effect a transaction performs, each returning its
// undo. The real implementation composes src/host and src/tender; tests wrap it to inject
// failures at any step (the engine never reaches the host any other way).

import { randomInt } from 'node:crypto';
import { chmod, type FileHandle, mkdir, readFile, rename, rm, stat } from 'node:fs/promises';
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
  type ImageRef,
  imagesDir,
  linkImage,
  openImage,
  removeImage,
  type StagedImage,
  type StoreCleanup,
  stageImage,
  storedImagePath,
  verifyImage,
} from '../host/images.js';
import type { NetOptions } from '../host/ip.js';
import {
  discoverCgroups,
  jailProgram,
  listJailCgroupIds,
  memoryLimitHit,
  ownerOf,
  ProgramFiles,
  removeJailCgroups,
  returnToRoot,
} from '../host/jail.js';
import { claimId, DEFAULT_CLAIMS_DIR, listClaims, releaseClaim } from '../host/jail-claims.js';
import { blockDir, blockPath, fifoDir, pidRecordPath } from '../host/paths.js';
import { readPidRecords, removePidRecord, stopRecordedProcess } from '../host/pidrecord.js';
import { checkRunDir, inRunDir, StateSpace } from '../host/space.js';
import { listOwnedTaps, removeTap, TapNames } from '../host/tap.js';
import type { Undoable } from '../host/undo.js';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import {
  type CgroupLayout,
  cgroupLimits,
  type IdRange,
  JailIds,
  type JailLimits,
  jailLimits,
  jailOptions,
} from '../resources/jail.js';
import { type Name, parseName, printName } from '../resources/name.js';
import type { TenderKind } from '../tender/elf.js';
import { findTender } from '../tender/lookup.js';
import { checkTenderAbi, TenderVersionCache } from '../tender/version.js';
import { createTenderHost, type TenderHost } from './tenders.js';

export type HostResult<T> = Promise<Result<T, PetrelError>>;

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
  cleanLeftovers(owned: OwnedArtefacts): HostResult<string[]>;
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
  /** Jail every tender (issue 22); absent or null: tenders run as petreld's user, unjailed. */
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
  const jail = options.jail == null ? null : jailState(options.jail);
  const tenders = createTenderHost({
    runDir: options.runDir,
    stopTimeoutMs: options.stopTimeoutMs,
    ...(options.netns === undefined ? {} : { netns: options.netns }),
    ...(options.consoleBufferBytes === undefined ? {} : { consoleBufferBytes: options.consoleBufferBytes }),
  });

  return {
    ...tenders,
    async makeDirectories() {
      const dirs = [
        options.runDir,
        options.stateDir,
        blockDir(options.stateDir),
        imagesDir(options.stateDir),
      ];
      for (const dir of dirs) {
        try {
          await mkdir(dir, { recursive: true, mode: 0o700 });
        } catch (cause) {
          return { ok: false, error: ioError('mkdir', dir, cause) };
        }
      }
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
    async makeJail(request) {
      if (jail === null) return ok({ value: null, undo: async () => undefined });
      const setup = await jail.setup;
      const program = jail.program;
      if (!program.ok) return program;
      const files = await jail.files.of([request.tender, ...jail.options.allow]);
      if (!files.ok) return files;
      const sizes: number[] = [];
      for (const block of request.blocks) {
        const info = await stat(block).catch((cause: Error) => cause);
        if (info instanceof Error) return { ok: false, error: ioError('stat', block, info) };
        sizes.push(Math.ceil(info.size / MIB));
      }
      const holder = await tenders.holderPid();
      if (!holder.ok) return holder;
      // Lowest free here and not claimed by another petreld's holder on this host.
      const id = jail.ids.take((candidate) => !claimId(jail.claims, candidate, holder.value));
      if (!id.ok) return id;
      const limits = jailLimits({
        kind: request.kind,
        memoryMiB: request.memoryMiB,
        nets: request.nets,
        blockSizesMiB: sizes,
      });
      const blocks = [...request.blocks];
      const args = jailOptions({
        id: id.value,
        kind: request.kind,
        cpus: request.cpuids,
        limits,
        layout: setup.layout,
        cpuset: setup.cpuset,
        files: [...files.value, request.image],
        writable: blocks,
        tun: request.nets > 0,
        kvmDevice: jail.options.kvmDevice,
      });
      const made: Jail = { id: id.value, prefix: [program.value, ...args, '--'], limits, blocks };
      return ok({
        value: made,
        undo: async () => {
          const released = await releaseJail(jail, made);
          if (!released.ok) throw new Error(released.error.message);
        },
      });
    },
    releaseJail: (made) => releaseJail(jail, made),
    async jailLimitHit(made, exit) {
      if (jail === null) return null;
      if (exit.signal === 'SIGXFSZ') return 'RLIMIT_FSIZE';
      if (exit.signal === 'SIGSYS') return 'system-call filter';
      if (exit.code === 125) return 'jail set-up (its console says why)';
      if (exit.signal !== 'SIGKILL') return null;
      return memoryLimitHit((await jail.setup).layout, made.id);
    },
    holdJail(id, blocks) {
      jail?.ids.hold(id);
      return { id, limits: null, blocks };
    },
    async holdJailClaim(id) {
      if (jail === null) return;
      const holder = await tenders.holderPid();
      if (holder.ok) claimId(jail.claims, id, holder.value);
    },
    jailInfo() {
      if (jail === null || jail.layoutNow === null) return null;
      const layout = jail.layoutNow;
      return {
        ids: jail.options.ids,
        inUse: jail.ids.taken.size,
        limits: [
          'RLIMIT_AS (guest memory + tender overhead)',
          'RLIMIT_NPROC',
          'RLIMIT_NOFILE',
          'RLIMIT_FSIZE',
          'RLIMIT_CORE=0',
          ...cgroupLimits(layout).map((c) => `cgroup ${c}`),
        ],
        cgroups: describeLayout(layout),
      };
    },
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
      const done: string[] = [];
      for (const dir of [options.runDir, options.stateDir]) {
        const removed = await removeTemporaryFiles(dir);
        if (!removed.ok) return removed;
        done.push(...removed.value);
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
        if (stopped.value === 'stopped') done.push(`stopped leftover tender ${record.pid}`);
        removePidRecord(record.path);
      }
      const taps = await listOwnedTaps(net);
      if (!taps.ok) return taps;
      for (const tap of taps.value.filter((t) => !ownedTaps.has(t))) {
        const removed = await removeTap(tap, net);
        done.push(
          removed.ok ? `removed tap ${tap}` : `could not remove tap ${tap}: ${removed.error.message}`,
        );
      }
      if (jail !== null) {
        const holder = await tenders.holderPid();
        const ours = holder.ok ? holder.value : null;
        done.push(...(await reconcileJails(jail, options.stateDir, owned.jailIds ?? [], ours)));
      }
      const listed = await listFifos(options.runDir);
      if (!listed.ok) return listed;
      for (const fifo of listed.value.fifos.filter((f) => !ownedFiles.has(f))) {
        await rm(fifo, { force: true });
        done.push(`removed fifo ${path.basename(fifo)}`);
      }
      for (const other of listed.value.others) {
        if (!path.basename(other).startsWith(SPARE_PREFIX)) continue;
        await rm(other, { recursive: true, force: true });
        done.push(`removed spare fifos ${path.basename(other)}`);
      }
      const entries = await listDirectory(options.runDir);
      if (!entries.ok) return entries;
      for (const entry of entries.value.filter((e) => e.endsWith('.img'))) {
        const file = path.join(options.runDir, entry);
        if (ownedFiles.has(file)) continue;
        await rm(file, { force: true });
        done.push(`removed image link ${entry}`);
      }
      return ok(done);
    },
  };
}

interface JailState {
  readonly options: JailOptions;
  readonly ids: JailIds;
  readonly files: ProgramFiles;
  readonly program: Result<string, PetrelError>;
  readonly claims: string;
  /** Where cgroups go, found once. */
  readonly setup: Promise<{ layout: CgroupLayout; cpuset: { cpus: string; mems: string } }>;
  layoutNow: CgroupLayout | null;
}

function jailState(options: JailOptions): JailState {
  const state: JailState = {
    options,
    ids: new JailIds(options.ids, randomInt(options.ids.first, options.ids.last + 1)),
    files: new ProgramFiles(),
    program: options.program === undefined ? jailProgram() : ok(options.program),
    claims: options.claims ?? DEFAULT_CLAIMS_DIR,
    setup: discoverCgroups(),
    layoutNow: null,
  };
  void state.setup.then((found) => {
    state.layoutNow = found.layout;
  });
  return state;
}

async function releaseJail(jail: JailState | null, made: HeldJail): HostResult<void> {
  if (jail === null) return ok(undefined);
  const problems: string[] = [];
  for (const block of made.blocks) {
    const back = await returnToRoot(block);
    if (!back.ok) problems.push(back.error.message);
  }
  const removed = await removeJailCgroups((await jail.setup).layout, made.id);
  if (!removed.ok) problems.push(removed.error.message);
  releaseClaim(jail.claims, made.id);
  jail.ids.free(made.id);
  return problems.length === 0 ? ok(undefined) : err('E_JAIL', problems.join('; '));
}

function describeLayout(layout: CgroupLayout): string {
  if (layout.version === 1) return `v1: ${Object.values(layout.parents).join(', ')}`;
  if (layout.version === 2) return `v2: ${layout.parent} (${layout.controllers.join(', ')})`;
  return `none: ${layout.why}`;
}

/**
 * Start-up: block files a jail's id owns that no adopted tender holds go back to root (a reused
 * id must never own another tenant's file), and jail cgroups nothing runs in are removed.
 */
async function reconcileJails(
  jail: JailState,
  stateDir: string,
  held: readonly number[],
  holder: number | null,
): Promise<string[]> {
  const done: string[] = [];
  const keep = new Set(held);
  // Claims of our holder that no adopted tender holds, and stale ones, go.
  for (const claim of listClaims(jail.claims)) {
    if (keep.has(claim.id) || (claim.holder !== null && claim.holder !== holder)) continue;
    releaseClaim(jail.claims, claim.id);
    done.push(`released the claim on jail id ${claim.id}`);
  }
  const dir = blockDir(stateDir);
  const files = await listDirectory(dir);
  for (const file of files.ok ? files.value : []) {
    const full = path.join(dir, file);
    const owner = await ownerOf(full);
    if (owner === null || owner === 0 || keep.has(owner) || !jail.ids.contains(owner)) continue;
    // Another petreld's live tender (its own state directory would not hold this file, but a
    // shared one is its business): only ids whose claim is gone are handed back.
    if (listClaims(jail.claims).some((c) => c.id === owner && c.holder !== null && c.holder !== holder))
      continue;
    const back = await returnToRoot(full);
    done.push(back.ok ? `block ${file} handed back to root from jail id ${owner}` : back.error.message);
  }
  const layout = (await jail.setup).layout;
  const claimed = new Set(listClaims(jail.claims).flatMap((c) => (c.holder === null ? [] : [c.id])));
  for (const id of await listJailCgroupIds(layout)) {
    if (keep.has(id) || claimed.has(id)) continue;
    const removed = await removeJailCgroups(layout, id);
    done.push(removed.ok ? `removed the cgroups of jail id ${id}` : removed.error.message);
  }
  return done;
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

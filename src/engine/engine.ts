// The single writer of petreld. How a command becomes a transaction:
//   1. every mutating command, every tender exit and every delayed restart runs as one task of a
//      queue with concurrency 1, so nothing interleaves with a transaction;
//   2. plan: src/resources computes the new tree (admission) or the rejection;
//   3. validate: image, ELF notes, tender, manifest, bridges (prepare.ts), still without effects;
//   4. effects: image into the store, FIFO, taps, console, tender (launch.ts), each with its undo;
//   5. commit: swap the tree, append the change to the state journal (state-book.ts); a failure
//      undoes step 4;
//   6. reply, only after the commit.
// A create's image is received into the store's staging area before its transaction queues, so
// a slow upload never holds the queue and the frame that carried it is released. Stored images
// nothing uses and the committed state does not name are removed after each task (#sweep).
// Force-create and restart check steps 2–3 for the new configuration before stopping the old
// unikernel, hold the queue while it stops, and start it again if the new one cannot start.

import { createHash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import PQueue from 'p-queue';
import type { Logger } from 'pino';
import { consoleFeed } from '../console/feed.js';
import type { ConsoleHub } from '../console/hub.js';
import { QuietCollector } from '../host/garbage.js';
import type { ImageRef, StagedImage } from '../host/images.js';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import { describeProbe, validCheck } from '../resources/liveness.js';
import { childName, type Name, type Path, pathName, printName, printPath } from '../resources/name.js';
import type { Policy } from '../resources/policy.js';
import * as T from '../resources/tree.js';
import type { TenderKind } from '../tender/elf.js';
import type { TenderExit } from '../tender/process.js';
import {
  encodeSnapshot,
  type KeptConfig,
  type PendingReplacement,
  type PetrelState,
  type StateChange,
  type UnikernelRecord,
} from '../wire/petrel-state.js';
import { createConfig, infoReply, restartArguments } from '../wire/shapes.js';
import type {
  Command,
  CreateCommand,
  InfoRelease,
  Named,
  ReplaceCheck,
  UnikernelConfig,
  UnikernelExit,
} from '../wire/types.js';
import { type Adoptable, planAdoption } from './adopt.js';
import { committedState, withImported } from './albatross.js';
import { BlockCommands } from './blocks.js';
import { publishCommand, publishRestart, publishStep } from './events.js';
import { DroppedExits, type ExitRecord, exitEntry, seenFrom } from './exits.js';
import { imageReply } from './get.js';
import type { EngineHost } from './host-types.js';
import { ImageUsers } from './image-users.js';
import { unikernelInfo } from './info.js';
import { describeExit, launch, type RunningVm, releaseHost, vmKey } from './launch.js';
import { type CheckOutcome, runCheck } from './liveness.js';
import { resolveReplacements } from './pending-replacements.js';
import { allocationOf, blockLabel, type ImageInput, type Prepared, prepare, type VmName } from './prepare.js';
import { type EngineResponse, failure, invalidLevel, reply, TEXT, text, unsupportedType } from './replies.js';
import {
  DEFAULT_RESTART,
  decideRestart,
  NO_HISTORY,
  type RestartHistory,
  type RestartOptions,
  restartsWithin,
} from './restart.js';
import { StateBook } from './state-book.js';

export interface EngineOptions {
  readonly host: EngineHost;
  readonly hub: ConsoleHub;
  readonly log: Logger;
  /** SIGTERM → SIGKILL grace when stopping a unikernel (ms). Default 10 s. */
  readonly stopTimeoutMs?: number;
  readonly restart?: Partial<RestartOptions>;
  readonly now?: () => number;
  /** The tenders this node runs unikernels with (`--runtimes`); default hvt and spt. */
  readonly runtimes?: readonly TenderKind[];
  /** Journal bytes after which the state is compacted into a snapshot (default 64 KiB, or the
   * snapshot's size when larger). */
  readonly compactStateBytes?: number;
  /** Called synchronously whenever the resource tree changes (the fleet reporter); must not throw. */
  readonly onTreeChange?: (tree: T.Tree) => void;
}

/** What start-up adds to the committed state. */
export interface RestoreOptions {
  /** An Albatross state file to import (`--import-albatross-state`); imported once. */
  readonly importState?: { readonly bytes: Uint8Array; readonly source: string };
}

export type { EngineResponse } from './replies.js';

export interface EngineRequest {
  /** The header name of the command. */
  readonly name: Name;
  readonly command: Command;
  /**
   * Raw chunks that follow the command, up to the empty chunk: block set [7], and the image of
   * a create whose image field is empty (streamed, petrel-differences.md (j)).
   */
  readonly input?: AsyncIterable<Uint8Array>;
}

const READ_ONLY: ReadonlySet<Command['type']> = new Set([
  'unikernel-info',
  'unikernel-exits',
  'unikernel-get',
  'policy-info',
  'block-info',
]);

/**
 * Answered without changing anything: a query, or the policy a TLS session re-installs on every
 * connection. Logged at debug: at info they were most of the log (the TLS endpoint logs each
 * session's request and outcome at info already), and each line costs a write.
 */
function changedNothing(type: Command['type'], response: EngineResponse): boolean {
  if (READ_ONLY.has(type)) return true;
  return (
    response.kind === 'reply' &&
    response.reply.type === 'string' &&
    response.reply.text === TEXT.policyUnchanged
  );
}

/**
 * A tender run the engine supervises, with the promise its stoppers and exit handler share. One
 * per running unikernel: the promise is made only when someone waits for it (destroy, restart,
 * the canary), not for every unikernel that runs.
 */
class Supervised {
  #exit: TenderExit | null = null;
  #shutdown: Promise<TenderExit> | null = null;
  #resolve: ((exit: TenderExit) => void) | null = null;
  /** When its tender was released (ms): a replace's console check counts lines read after it. */
  releasedAt: number | null = null;

  constructor(
    readonly vm: RunningVm,
    public history: RestartHistory,
  ) {}

  /** Resolves once the tender exited and its tap, FIFO and image are released. */
  get shutdown(): Promise<TenderExit> {
    this.#shutdown ??=
      this.#exit === null
        ? new Promise<TenderExit>((resolve) => {
            this.#resolve = resolve;
          })
        : Promise.resolve(this.#exit);
    return this.#shutdown;
  }

  released(exit: TenderExit): void {
    this.#exit ??= exit;
    this.#resolve?.(this.#exit);
  }
}

/** A replace whose check runs (Petrel (m)); `record` is what the state says of it. */
interface Replacing {
  record: PendingReplacement;
  /** Ends the check early: the replacement was given up, or the new unikernel exited. */
  readonly abort: AbortController;
  /** How the new unikernel exited during the check (`exit 3`), if it did. */
  exited: string | null;
}

interface PendingRestart {
  readonly name: VmName;
  readonly config: KeptConfig;
  readonly image: ImageRef;
  readonly timer: NodeJS.Timeout;
  /** When the timer fires (ms). */
  readonly restartAt: number;
  readonly history: RestartHistory;
}

export interface RestoreReport {
  readonly cleaned: readonly string[];
  /** Running tenders of committed unikernels taken over from an earlier petreld. */
  readonly adopted: readonly string[];
  readonly started: readonly string[];
  readonly failed: readonly { readonly name: string; readonly reason: string }[];
}

export class Engine {
  readonly #queue = new PQueue({ concurrency: 1 });
  readonly #host: EngineHost;
  readonly #hub: ConsoleHub;
  readonly #log: Logger;
  readonly #stopTimeoutMs: number;
  readonly #restart: RestartOptions;
  readonly #now: () => number;
  #runtimes: readonly TenderKind[];
  readonly #blocks: BlockCommands;
  readonly #book: StateBook;
  readonly #users = new ImageUsers();
  /** One collection once the queue has been quiet after work (see src/host/garbage.ts). */
  readonly #quiet = new QuietCollector();
  #treeValue: T.Tree = T.emptyTree;
  readonly #onTreeChange: ((tree: T.Tree) => void) | undefined;
  readonly #running = new Map<string, Supervised>();
  readonly #pending = new Map<string, PendingRestart>();
  readonly #replacing = new Map<string, Replacing>();
  /** The last exit of recently dropped unikernels (unikernel-exits, Petrel (l)). */
  readonly #dropped = new DroppedExits();
  #persisting = true;
  #shuttingDown = false;

  // Every assignment of the tree goes through this pair, so onTreeChange hears of each change.
  get #tree(): T.Tree {
    return this.#treeValue;
  }
  set #tree(tree: T.Tree) {
    if (tree === this.#treeValue) return;
    this.#treeValue = tree;
    this.#onTreeChange?.(tree);
  }

  /**
   * The runtimes this node hosts, once the probe has said (`runtimes = "auto"` is only known
   * then): set before restore(), which re-creates what the state holds.
   */
  hostRuntimes(runtimes: readonly TenderKind[]): void {
    this.#runtimes = runtimes;
  }

  constructor(options: EngineOptions) {
    this.#onTreeChange = options.onTreeChange;
    this.#host = options.host;
    this.#hub = options.hub;
    this.#log = options.log;
    this.#stopTimeoutMs = options.stopTimeoutMs ?? 10_000;
    this.#restart = { ...DEFAULT_RESTART, ...options.restart };
    this.#now = options.now ?? Date.now;
    this.#runtimes = options.runtimes ?? ['hvt', 'spt'];
    this.#book = new StateBook(this.#host, this.#log, options.compactStateBytes);
    this.#blocks = new BlockCommands({
      host: this.#host,
      log: this.#log,
      tree: () => this.#tree,
      setTree: (tree: T.Tree) => {
        this.#tree = tree;
      },
      serialize: <R>(task: () => Promise<R>) => this.#serial(task),
    });
  }

  /** The current resource tree (immutable; for listings, metrics and tests). */
  get tree(): T.Tree {
    return this.#tree;
  }

  /** Names of running unikernels. */
  get running(): string[] {
    return [...this.#running.keys()];
  }

  /** Resolves once the unikernel's tender has exited and its artefacts are released. */
  shutdownOf(name: Name): Promise<TenderExit> | undefined {
    return this.#running.get(printName(name))?.shutdown;
  }

  /** The tender pid of a running unikernel (statistics, tests). */
  pidOf(name: Name): number | undefined {
    return this.#running.get(printName(name))?.vm.tender.pid;
  }

  /** Network attachments of a running unikernel (statistics). */
  netsOf(name: Name): RunningVm['nets'] | undefined {
    return this.#running.get(printName(name))?.vm.nets;
  }

  /** Answers one command. Block streams run outside the queue; everything else inside it. */
  execute(request: EngineRequest): Promise<EngineResponse> {
    const { command, name } = request;
    switch (command.type) {
      case 'block-set':
        return this.#blocks.set(name, command.compressed, request.input);
      case 'block-dump':
        return this.#blocks.dump(name, command.level);
      case 'unikernel-create':
        return this.#receive(name, command, request.input);
      case 'unikernel-get':
        return this.#observe(name, command.type, () => this.#get(name, command.level));
      case 'console-add':
      case 'console-subscribe':
      case 'console-list-inactive':
      case 'stats-add':
      case 'stats-remove':
      case 'stats-subscribe':
      case 'stats-initial':
        return Promise.resolve(failure(TEXT.unknownCommand));
      default:
        return this.#serial(() => this.#observe(name, command.type, () => this.#dispatch(name, command)));
    }
  }

  /**
   * Runs a task in the queue, then removes from the store the images it released that nothing
   * uses and the committed state does not name (a crash in between leaves an image start-up
   * removes, never a state naming a missing one).
   */
  #serial<R>(task: () => Promise<R>): Promise<R> {
    return this.#queue.add(async () => {
      try {
        return await task();
      } finally {
        await this.#sweep();
        if (!this.#shuttingDown) this.#quiet.worked();
      }
    });
  }

  async #sweep(): Promise<void> {
    for (const digest of new Set([...this.#users.takeReleased(), ...this.#book.takeReleased()])) {
      if (this.#users.holds(digest) || this.#book.refersTo(digest)) continue;
      const removed = await this.#host.removeStoredImage(digest);
      if (removed.ok) this.#log.debug({ digest }, 'image removed from the store');
      else
        this.#log.error(
          { digest, problem: removed.error.message },
          'could not remove an image from the store',
        );
    }
    // A reserve given up for a freeing command comes back once space allows (issue 23).
    if (!this.#shuttingDown) await this.#book.refillReserve();
  }

  /** Times and logs one command. */
  async #observe(
    name: Name,
    type: Command['type'],
    run: () => Promise<EngineResponse> | EngineResponse,
  ): Promise<EngineResponse> {
    const started = this.#now();
    const response = await run();
    const fields = { command: type, name: printName(name), ms: this.#now() - started };
    publishCommand({
      command: type,
      outcome: response.kind === 'failure' ? 'refused' : 'done',
      ms: fields.ms,
    });
    if (response.kind === 'failure')
      this.#log.info({ ...fields, reason: response.message }, 'command refused');
    else if (changedNothing(type, response)) this.#log.debug(fields, 'command done');
    else this.#log.info(fields, 'command done');
    return response;
  }

  #dispatch(name: Name, command: Command): Promise<EngineResponse> | EngineResponse {
    switch (command.type) {
      case 'unikernel-info':
        return this.#info(name, command.release);
      case 'unikernel-exits':
        return this.#exits(name);
      case 'unikernel-restart':
        return this.#restartCommand(name, restartArguments(command));
      case 'unikernel-destroy':
        return this.#destroy(name);
      case 'policy-info':
        return reply({
          type: 'policies',
          entries: T.foldPolicies(this.#tree, name.path).map(([n, policy]) => ({ name: n, policy })),
        });
      case 'policy-add':
        return this.#addPolicy(name.path, command.policy);
      case 'policy-remove':
        return this.#removePolicy(name.path);
      case 'block-info':
      case 'block-add':
      case 'block-remove':
      case 'block-add-old':
      case 'block-set-old':
      case 'block-dump-old':
        return this.#blocks.handle(name, command);
      default:
        return failure(TEXT.unknownCommand);
    }
  }

  // -------------------------------------------------------------------------------------------
  // Unikernels

  #info(name: Name, release: InfoRelease): EngineResponse {
    const entries =
      name.label === null
        ? T.foldUnikernels(this.#tree, name.path).flatMap(([relative]) => {
            const full = { path: [...name.path, ...relative.path], label: relative.label } as VmName;
            const run = this.#running.get(vmKey(full));
            return run === undefined ? [] : [{ name: relative, info: unikernelInfo(run.vm, this.#tree) }];
          })
        : [this.#running.get(printName(name))].flatMap((run) =>
            run === undefined ? [] : [{ name, info: unikernelInfo(run.vm, this.#tree) }],
          );
    return reply(infoReply(release, entries));
  }

  /**
   * unikernel-exits (Petrel (l)): the last exit of each unikernel at or below the name that has
   * one: running again after a restart on failure, waiting for its restart, or dropped (kept
   * for the last KEPT_DROPS names dropped). Sorted by name.
   */
  #exits(name: Name): EngineResponse {
    const now = this.#now();
    const found: { key: string; entry: Named<UnikernelExit> }[] = [];
    const add = (
      full: VmName,
      record: ExitRecord | undefined,
      restarts: number,
      outcome: UnikernelExit['outcome'],
    ) => {
      const seen = record === undefined ? null : seenFrom(name, full);
      if (seen !== null && record !== undefined)
        found.push({ key: vmKey(full), entry: exitEntry(seen, record, restarts, outcome) });
    };
    for (const run of this.#running.values()) {
      if (run.vm.transient) continue;
      const { history } = run;
      add(run.vm.name, history.lastExit, restartsWithin(history, now, this.#restart), { kind: 'restarted' });
    }
    for (const pending of this.#pending.values()) {
      const { history } = pending;
      add(pending.name, history.lastExit, restartsWithin(history, now, this.#restart), {
        kind: 'restarting',
        restartAt: new Date(pending.restartAt),
      });
    }
    for (const dropped of this.#dropped.values())
      add(dropped.name, dropped.record, dropped.restarts, { kind: 'dropped', reason: dropped.reason });
    found.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    return reply({ type: 'unikernel-exits', entries: found.map((f) => f.entry) });
  }

  /**
   * get (semantics §5.2) from the store (get.ts), outside the queue; the file is opened inside
   * it, so a destroy that follows cannot take it away. A level above 0 is honoured also for an
   * image sent compressed (Albatross would return the client's own bytes).
   */
  async #get(name: Name, level: number): Promise<EngineResponse> {
    if (!Number.isInteger(level) || level < 0 || level > 9) return failure(invalidLevel(level));
    const found = await this.#queue.add(async () => {
      const run = this.#running.get(printName(name));
      if (run === undefined) return null;
      return { image: run.vm.image, opened: await this.#host.openImage(run.vm.image) };
    });
    if (found === null) return failure(TEXT.getNotFound);
    const replied = found.opened.ok ? await imageReply(found.opened.value, found.image, level) : found.opened;
    if (!replied.ok) {
      this.#log.error({ name: printName(name), problem: replied.error.message }, 'get: image unreadable');
      return failure(`get: ${replied.error.message}`);
    }
    return { kind: 'image', ...replied.value };
  }

  /**
   * A create (or force-create): its image, inline or as the chunks that follow, goes to the
   * store's staging area first; this function keeps no reference to the command, so the frame
   * that carried an inline image is released once the image is staged.
   */
  #receive(name: Name, command: CreateCommand, input?: AsyncIterable<Uint8Array>): Promise<EngineResponse> {
    const { image, ...config } = createConfig(command);
    const chunks = image.length > 0 || input === undefined ? [image] : input;
    const staging = this.#host.stageImage(chunks, config.compressed);
    if (command.check !== undefined) return this.#replaceChecked(name, config, command.check, staging);
    return this.#created(name, config, command.force, staging);
  }

  /**
   * Replace (Petrel (m)): in the queue, the pending replacement is committed and the new image
   * force-created; the check runs outside the queue; back in it, a pass is committed and the
   * record cleared, a failure brings back the previous unikernel. A destroy or create of the
   * name meanwhile gives the replacement up (#abandonReplacement).
   */
  async #replaceChecked(
    name: Name,
    config: KeptConfig,
    check: ReplaceCheck,
    staging: Promise<Result<StagedImage, PetrelError>>,
  ): Promise<EngineResponse> {
    const staged = await staging;
    let begun: { entry: Replacing; name: VmName; startedAt: number } | null = null;
    try {
      const first = await this.#serial(() =>
        this.#observe(name, 'unikernel-create', async () => {
          const started = await this.#beginReplace(name, config, check, { kind: 'staged', staged });
          if (!('entry' in started)) return started;
          begun = started;
          return text('replacement started');
        }),
      );
      if (begun === null) return first;
    } finally {
      if (staged.ok) await this.#host.discardStaged(staged.value);
    }
    const { entry, name: vmName, startedAt } = begun as { entry: Replacing; name: VmName; startedAt: number };
    const outcome = await runCheck(check, {
      hub: this.#hub,
      name: vmName,
      startedAt,
      signal: entry.abort.signal,
    });
    return this.#serial(() => this.#finishReplace(vmName, entry, check, outcome));
  }

  async #beginReplace(
    name: Name,
    config: KeptConfig,
    check: ReplaceCheck,
    image: ImageInput,
  ): Promise<EngineResponse | { entry: Replacing; name: VmName; startedAt: number }> {
    if (name.label === null) return failure(TEXT.pathUsed);
    if (config.typ !== 'solo5') return failure(unsupportedType(config.typ));
    const valid = validCheck(check);
    if (!valid.ok) return failure(valid.error.message);
    const vmName = name as VmName;
    const key = vmKey(vmName);
    const running = this.#running.get(key);
    if (running === undefined || running.vm.transient) return failure(`replace: unikernel ${key} not found`);
    if (this.#replacing.has(key)) return failure(`replace: a replacement of ${key} is being checked already`);
    const previous = { config: running.vm.config, image: running.vm.image };
    const wanted = check.keepConfig ? { ...previous.config, compressed: config.compressed } : config;
    const entry: Replacing = {
      record: { name: vmName, previous, passed: false },
      abort: new AbortController(),
      exited: null,
    };
    this.#replacing.set(key, entry);
    // The previous unikernel is in the state as pending before anything changes: a crash from
    // here on is resolved at the next start by bringing it back.
    const saved = await this.#commit([vmName]);
    if (!saved.ok) {
      this.#replacing.delete(key);
      return failure(`replace: could not write the state: ${saved.error.message}`);
    }
    const replaced = await this.#replace(running, wanted, image);
    const now = this.#running.get(key);
    if (replaced.kind === 'failure' || now === undefined) {
      this.#replacing.delete(key);
      await this.#commitLogged([vmName]);
      return failure(
        `replace: ${replaced.kind === 'failure' ? replaced.message : 'the new unikernel stopped'}`,
      );
    }
    this.#log.info(
      { name: key, check: describeProbe(check.probe), withinMs: check.withinMs },
      'replacement started; checking it',
    );
    publishStep(key, 'replace-checking');
    // Lines read once the old one's console was released are the new one's: its tender's own
    // start time is taken when the spawn is answered, after its first lines may have been read.
    return { entry, name: vmName, startedAt: running.releasedAt ?? now.vm.tender.startedAt.getTime() };
  }

  async #finishReplace(
    name: VmName,
    entry: Replacing,
    check: ReplaceCheck,
    outcome: CheckOutcome,
  ): Promise<EngineResponse> {
    const key = vmKey(name);
    const what = describeProbe(check.probe);
    if (this.#replacing.get(key) !== entry) {
      this.#log.info({ name: key }, 'replacement given up: the name was destroyed or created meanwhile');
      return failure(
        `replace: ${key} was destroyed or created again during the check; the replacement was given up`,
      );
    }
    if (this.#shuttingDown)
      return failure('replace: petreld is stopping; the next start brings the previous unikernel back');
    if (outcome.passed) {
      // "Passed" reaches the disk before the record goes: a crash in between keeps the new one.
      entry.record = { ...entry.record, passed: true };
      await this.#commitLogged([name]);
      publishStep(key, 'replace-passed');
      this.#replacing.delete(key);
      await this.#commitLogged([name]);
      this.#log.info(
        { name: key, check: what, detail: outcome.detail },
        'replacement passed its check; kept',
      );
      return text(`replaced unikernel ${key}: ${what} passed (${outcome.detail})`);
    }
    const { previous } = entry.record;
    // Cleared in memory first, so the commit that brings the previous one back also clears it.
    this.#replacing.delete(key);
    const running = this.#running.get(key);
    let back: EngineResponse;
    if (running !== undefined)
      back = await this.#replace(running, previous.config, this.#again(previous.image));
    else {
      this.#cancelPending(key);
      const started = await this.#start(name, previous.config, this.#again(previous.image), false);
      back = started.ok ? text(TEXT.created) : failure(started.error.message);
    }
    await this.#commitLogged([name]);
    const reason =
      entry.exited === null ? outcome.reason : `the new unikernel exited (${entry.exited}) before it passed`;
    const why = `replace: ${key} failed its check (${what}): ${reason}`;
    this.#log.warn(
      { name: key, check: what, reason, rolledBack: back.kind !== 'failure' },
      'replacement failed its check; rolled back',
    );
    if (back.kind === 'failure')
      return failure(`${why}; bringing back the previous unikernel failed: ${back.message}`);
    return failure(
      `${why}; the previous unikernel runs again (image ${previous.image.digest.slice(0, 12)}…)`,
    );
  }

  /** A destroy or create of a name whose replacement is being checked gives the replacement up. */
  #abandonReplacement(key: string): boolean {
    const entry = this.#replacing.get(key);
    if (entry === undefined) return false;
    this.#replacing.delete(key);
    entry.abort.abort();
    this.#log.info({ name: key }, 'replacement given up: its name was destroyed or created again');
    return true;
  }

  async #created(
    name: Name,
    config: KeptConfig,
    force: boolean,
    staging: Promise<Result<StagedImage, PetrelError>>,
  ): Promise<EngineResponse> {
    const staged = await staging;
    try {
      return await this.#serial(() =>
        this.#observe(name, 'unikernel-create', () =>
          this.#create(name, config, { kind: 'staged', staged }, force),
        ),
      );
    } finally {
      if (staged.ok) await this.#host.discardStaged(staged.value);
    }
  }

  async #create(name: Name, config: KeptConfig, image: ImageInput, force: boolean): Promise<EngineResponse> {
    if (name.label === null) return failure(TEXT.pathUsed);
    if (config.typ !== 'solo5') return failure(unsupportedType(config.typ));
    const vmName = name as VmName;
    const running = this.#running.get(vmKey(vmName));
    if (running !== undefined && !force) return failure(TEXT.alreadyRunning);
    // A create supersedes a restart that waits for its back-off (Petrel (d)), and a replacement
    // being checked (Petrel (m)).
    this.#cancelPending(vmKey(vmName));
    const abandoned = this.#abandonReplacement(vmKey(vmName));
    const response = await this.#createOrReplace(vmName, running, config, image);
    if (abandoned) await this.#commitLogged([vmName]);
    return response;
  }

  async #createOrReplace(
    name: VmName,
    running: Supervised | undefined,
    config: KeptConfig,
    image: ImageInput,
  ): Promise<EngineResponse> {
    if (running !== undefined) return this.#replace(running, config, image);
    const started = await this.#start(name, config, image, false);
    return started.ok ? text(TEXT.created) : failure(started.error.message);
  }

  async #restartCommand(name: Name, args: ReturnType<typeof restartArguments>): Promise<EngineResponse> {
    if (name.label === null) return failure(TEXT.pathUsed);
    const key = printName(name);
    const running = this.#running.get(key);
    if (running === undefined) {
      // As Albatross: cancelling a pending restart does not rewrite the state file here.
      if (this.#cancelPending(key)) return text(TEXT.removedFromRestarting);
      return failure(TEXT.destroyNotFound);
    }
    const old = running.vm.config;
    const config: KeptConfig = args === null ? old : { ...old, ...args };
    return this.#replace(running, config, this.#again(running.vm.image));
  }

  /** An image already in the store, read again: its digest is checked. */
  #again(image: ImageRef): ImageInput {
    return { kind: 'stored', image, verify: true };
  }

  async #destroy(name: Name): Promise<EngineResponse> {
    const key = printName(name);
    // Its commit below (or the one here) also clears the replacement from the state.
    if (this.#abandonReplacement(key) && name.label !== null) await this.#commitLogged([name as VmName]);
    const running = this.#running.get(key);
    if (running !== undefined) {
      await this.#stop(running);
      publishStep(key, 'stopped');
      await this.#commitLogged([running.vm.name]);
      publishStep(key, 'state-written');
      return text(TEXT.destroyed);
    }
    const pending = this.#pending.get(key);
    if (pending !== undefined) {
      this.#cancelPending(key);
      await this.#commitLogged([pending.name]);
      return text(TEXT.removedFromRestarting);
    }
    return failure(TEXT.destroyNotFound);
  }

  /**
   * Force-create and restart (Petrel (b)): admission with the old unikernel's resources freed
   * and every check of the new configuration first; then stop the old one and start the new; if
   * that fails, start the old configuration again and say so.
   */
  async #replace(old: Supervised, config: KeptConfig, image: ImageInput): Promise<EngineResponse> {
    const { name } = old.vm;
    const without = T.releaseUnikernel(this.#tree, name);
    if (!without.ok) return failure(without.error.message);
    const allocation = allocationOf(config);
    if (!allocation.ok) return failure(allocation.error.message);
    const admitted = T.admitUnikernel(without.value, name, allocation.value);
    if (!admitted.ok) return failure(admitted.error.message);
    const prepared = await prepare(this.#host, name, config, image, this.#runtimes);
    if (!prepared.ok) return failure(prepared.error.message);
    publishStep(vmKey(name), 'validated');

    publishStep(vmKey(name), 'old-stopping');
    await this.#stop(old);
    publishStep(vmKey(name), 'old-released');
    const started = await this.#launchPrepared(prepared.value, false);
    if (started.ok) return text(TEXT.created);

    const first = started.error.message;
    this.#log.warn(
      { name: printName(name), reason: first },
      'replacement failed to start; starting the previous unikernel',
    );
    const again = await this.#start(name, old.vm.config, this.#again(old.vm.image), false);
    if (again.ok) return failure(`${first}; the previous unikernel was started again`);
    await this.#commitLogged([name]);
    return failure(`${first}; starting the previous unikernel failed too: ${again.error.message}`);
  }

  /** Plan, validate and launch a new unikernel, then commit it. */
  async #start(
    name: VmName,
    config: KeptConfig,
    image: ImageInput,
    transient: boolean,
    persist = true,
  ): Promise<Result<Supervised, PetrelError>> {
    const allocation = allocationOf(config);
    if (!allocation.ok) return allocation;
    const admitted = T.admitUnikernel(this.#tree, name, allocation.value);
    if (!admitted.ok) return admitted;
    publishStep(vmKey(name), 'planned');
    const prepared = await prepare(this.#host, name, config, image, this.#runtimes);
    if (!prepared.ok) return prepared;
    publishStep(vmKey(name), 'validated');
    return this.#launchPrepared(prepared.value, transient, persist);
  }

  async #launchPrepared(
    prepared: Prepared,
    transient: boolean,
    persist = true,
  ): Promise<Result<Supervised, PetrelError>> {
    const { name } = prepared;
    // Admission again against the tree as it is now (a force-create has just released the old one).
    const admitted = T.admitUnikernel(this.#tree, name, prepared.allocation);
    if (!admitted.ok) return admitted;
    this.#users.hold(prepared.image.digest);
    const launched = await launch(
      {
        host: this.#host,
        hub: this.#hub,
        consoleLimit: this.#consoleLimit(name.path),
        stopTimeoutMs: this.#stopTimeoutMs,
        transient,
      },
      prepared,
    );
    if (!launched.ok) {
      this.#users.drop(prepared.image.digest);
      const { error, leftovers } = launched.error;
      for (const leftover of leftovers)
        this.#log.error({ name: printName(name), problem: leftover.message }, 'undo failed');
      this.#log.warn(
        { name: printName(name), reason: error.message, cause: error.details?.cause },
        'launch failed',
      );
      return { ok: false, error };
    }
    const before = this.#tree;
    this.#tree = admitted.value;
    const supervised = this.#supervise(launched.value.vm);
    // A new unikernel of a dropped one's name: the old one's exit is no longer its story.
    if (!transient) this.#dropped.forget(vmKey(name));
    publishStep(vmKey(name), 'committed');
    if (persist && !transient) {
      const saved = await this.#commit([name]);
      if (!saved.ok) {
        supervised.vm.state = 'stopping';
        this.#running.delete(vmKey(name));
        this.#tree = before;
        await launched.value.undo.rollback();
        this.#users.drop(prepared.image.digest);
        supervised.released({ code: null, signal: null, sentSignal: 'SIGTERM' });
        return err('E_STATE_WRITE', `could not create unikernel: ${saved.error.message}`);
      }
    }
    await launched.value.undo.commit();
    if (persist && !transient) publishStep(vmKey(name), 'state-written');
    this.#log.info(
      {
        name: printName(name),
        tenderPid: supervised.vm.tender.pid,
        taps: supervised.vm.nets.map((n) => n.tap),
      },
      'unikernel started',
    );
    return ok(supervised);
  }

  #consoleLimit(path: Path): number {
    if (path.length === 0) return Number.MAX_SAFE_INTEGER;
    const policy = T.findPolicy(this.#tree, path);
    if (policy === undefined) return 0;
    return Number(
      policy.vms > BigInt(Number.MAX_SAFE_INTEGER) ? BigInt(Number.MAX_SAFE_INTEGER) : policy.vms,
    );
  }

  #supervise(vm: RunningVm, history: RestartHistory = NO_HISTORY): Supervised {
    const supervised = new Supervised(vm, history);
    this.#running.set(vmKey(vm.name), supervised);
    void vm.tender.shutdown.then((exit) => {
      // The time of the exit, not of its turn in the queue.
      const at = this.#now();
      if (vm.state === 'running') void this.#serial(() => this.#exited(supervised, exit, at));
    });
    return supervised;
  }

  /** Stops a unikernel inside a transaction: SIGTERM, SIGKILL after the grace, release. */
  async #stop(supervised: Supervised): Promise<TenderExit> {
    supervised.vm.state = 'stopping';
    const exit = await supervised.vm.tender.stop(this.#stopTimeoutMs);
    await this.#release(supervised, exit);
    supervised.vm.tender.forget();
    return exit;
  }

  async #release(supervised: Supervised, exit: TenderExit): Promise<void> {
    const { vm } = supervised;
    const problems = await releaseHost(this.#host, this.#hub, vm);
    for (const problem of problems)
      this.#log.error({ name: printName(vm.name), problem: problem.message }, 'release failed');
    const released = T.releaseUnikernel(this.#tree, vm.name);
    if (released.ok) this.#tree = released.value;
    if (this.#running.get(vmKey(vm.name)) === supervised) this.#running.delete(vmKey(vm.name));
    this.#users.drop(vm.image.digest);
    vm.state = 'released';
    supervised.releasedAt = this.#now();
    supervised.released(exit);
  }

  /** The last line petrel-jail wrote on the unikernel's console (why its jail failed), if any. */
  #jailFailure(name: VmName): string | null {
    const lines = this.#hub.ring(name)?.last(8) ?? [];
    for (let i = lines.length - 1; i >= 0; i--) {
      const text = Buffer.from((lines[i] as (typeof lines)[number]).line).toString('utf8');
      if (text.startsWith('petrel-jail: ')) return text.slice(0, 512);
    }
    return null;
  }

  /** A tender exited on its own: release it, then restart it or let it go (§5.7, Petrel (d)). */
  async #exited(supervised: Supervised, exit: TenderExit, at: number): Promise<void> {
    const { vm } = supervised;
    if (vm.state !== 'running') return;
    vm.state = 'stopping';
    // A limit of its jail that ended it is named in every line about this exit.
    const limit = vm.jail === null ? null : await this.#host.jailLimitHit(vm.jail, exit);
    await this.#release(supervised, exit);
    // petrel-jail's reason is a line on the console: in petreld's log too, so it is never lost.
    const jailError = vm.jail !== null && exit.code === 125 ? this.#jailFailure(vm.name) : null;
    const fields = {
      name: printName(vm.name),
      tenderPid: vm.tender.pid,
      exit: describeExit(exit),
      ...(limit === null ? {} : { limit }),
      ...(jailError === null ? {} : { jailError }),
    };
    const record: ExitRecord = { exit: fields.exit, limit, at };
    // A replacement being checked fails at once when its new unikernel exits (Petrel (m)).
    const replacing = vm.transient ? undefined : this.#replacing.get(vmKey(vm.name));
    if (replacing !== undefined && replacing.exited === null) {
      replacing.exited = fields.exit;
      replacing.abort.abort();
    }
    if (this.#shuttingDown || vm.transient) {
      this.#log.info(fields, 'unikernel exited');
      vm.tender.forget();
      return;
    }
    if (exit.holderLost) {
      // Not the guest's doing: the holder died and its tenders with it (Petrel (k)). Restored
      // from the state, as the next start would, under a new holder.
      this.#log.warn(fields, 'the holder ended and its tender with it; starting the unikernel again');
      const again = await this.#start(vm.name, vm.config, this.#again(vm.image), false, false);
      if (again.ok) again.value.history = { ...supervised.history, lastExit: record };
      else {
        this.#log.warn({ ...fields, reason: again.error.message }, 'restore failed; unikernel dropped');
        this.#drop(vm.name, record, supervised.history, `restore failed: ${again.error.message}`);
        await this.#commitLogged([vm.name]);
      }
      return;
    }
    await this.#decideAfterExit(vm, exit, {
      ranForMs: this.#now() - vm.tender.startedAt.getTime(),
      history: supervised.history,
      fields,
      record,
    });
    vm.tender.forget();
  }

  /** Restart on failure for an exit (§5.7, Petrel (d)): drop, retry without --name, or restart later. */
  async #decideAfterExit(
    { name, config, image }: { name: VmName; config: KeptConfig; image: ImageRef },
    exit: TenderExit,
    context: {
      ranForMs: number;
      history: RestartHistory;
      fields: Record<string, unknown>;
      /** The exit as unikernel-exits reports it. */
      record: ExitRecord;
      elapsedMs?: number;
    },
  ): Promise<void> {
    const { fields, record } = context;
    const decision = decideRestart({
      exit,
      failBehaviour: config.failBehaviour,
      addName: config.addName,
      ranForMs: context.ranForMs,
      now: this.#now(),
      history: context.history,
      options: this.#restart,
    });
    switch (decision.kind) {
      case 'drop':
        this.#log.info({ ...fields, reason: decision.reason }, 'unikernel exited');
        this.#drop(name, record, context.history, decision.reason);
        await this.#commitLogged([name]);
        return;
      case 'retry-without-name': {
        this.#log.info(fields, 'unikernel exited 64 with --name; starting it again without --name');
        const again = await this.#start(name, { ...config, addName: false }, this.#again(image), false);
        if (again.ok) again.value.history = { ...again.value.history, lastExit: record };
        else {
          this.#log.warn({ ...fields, reason: again.error.message }, 'start without --name failed');
          this.#drop(name, record, context.history, `start without --name failed: ${again.error.message}`);
          await this.#commitLogged([name]);
        }
        return;
      }
      case 'restart': {
        const key = vmKey(name);
        // An exit while no petreld was attached: the back-off counts from the exit.
        const delayMs = Math.max(0, decision.delayMs - (context.elapsedMs ?? 0));
        this.#log.info({ ...fields, delayMs }, 'unikernel exited; restart scheduled');
        publishRestart({ name: key, delayMs });
        const timer = setTimeout(() => {
          void this.#serial(() => this.#restartPending(key));
        }, delayMs);
        timer.unref();
        // The image stays in the store while the restart waits.
        this.#users.hold(image.digest);
        this.#pending.set(key, {
          name,
          config,
          image,
          timer,
          restartAt: this.#now() + delayMs,
          history: { ...decision.history, lastExit: record },
        });
        return;
      }
    }
  }

  async #restartPending(key: string): Promise<void> {
    const pending = this.#pending.get(key);
    if (pending === undefined || this.#shuttingDown) return;
    this.#pending.delete(key);
    this.#users.drop(pending.image.digest);
    // A successful restart does not rewrite the state (Albatross #249): its record is unchanged.
    const started = await this.#start(pending.name, pending.config, this.#again(pending.image), false, false);
    if (started.ok) {
      started.value.history = pending.history;
      return;
    }
    this.#log.warn({ name: key, reason: started.error.message }, 'restart failed; unikernel dropped');
    const { lastExit } = pending.history;
    if (lastExit !== undefined)
      this.#drop(pending.name, lastExit, pending.history, `restart failed: ${started.error.message}`);
    await this.#commitLogged([pending.name]);
  }

  /** Remembers the last exit of a unikernel that is not restarted (unikernel-exits, Petrel (l)). */
  #drop(name: VmName, record: ExitRecord, history: RestartHistory, reason: string): void {
    const restarts = restartsWithin(history, this.#now(), this.#restart);
    this.#dropped.add({ name, record, reason, restarts });
  }

  #cancelPending(key: string): boolean {
    const pending = this.#pending.get(key);
    if (pending === undefined) return false;
    clearTimeout(pending.timer);
    this.#pending.delete(key);
    this.#users.drop(pending.image.digest);
    return true;
  }

  // -------------------------------------------------------------------------------------------
  // Policies

  async #addPolicy(path: Path, policy: Policy): Promise<EngineResponse> {
    const next = T.addPolicy(this.#tree, path, policy);
    if (!next.ok) return failure(next.error.message);
    if (next.value === this.#tree) return text(TEXT.policyUnchanged);
    return this.#commitTree(next.value, path, TEXT.policyAdded);
  }

  async #removePolicy(path: Path): Promise<EngineResponse> {
    const next = T.removePolicy(this.#tree, path);
    if (!next.ok) return failure(next.error.message);
    return this.#commitTree(next.value, path, TEXT.policyRemoved);
  }

  async #commitTree(next: T.Tree, path: Path, done: string): Promise<EngineResponse> {
    const before = this.#tree;
    this.#tree = next;
    const saved = await this.#commit([], [path]);
    if (saved.ok) return text(done);
    this.#tree = before;
    return failure(`could not write the state file: ${saved.error.message}`);
  }

  // -------------------------------------------------------------------------------------------
  // Persistence

  /** What the state must say about a unikernel now: running (not transient) or pending. */
  #wanted(key: string): { readonly config: KeptConfig; readonly image: ImageRef } | undefined {
    const run = this.#running.get(key);
    if (run !== undefined) return run.vm.transient ? undefined : run.vm;
    return this.#pending.get(key);
  }

  /**
   * Commits what changed about the named unikernels and policy paths: a put for each that the
   * state must now hold differently, a removal for each it must no longer hold. The write is
   * the size of these changes, whatever the number of unikernels.
   */
  async #commit(names: readonly VmName[], paths: readonly Path[] = []): Promise<Result<void, PetrelError>> {
    if (!this.#persisting) return ok(undefined);
    const changes: StateChange[] = [];
    for (const name of names) {
      const key = vmKey(name);
      const wanted = this.#wanted(key);
      const had = this.#book.unikernel(key);
      if (wanted === undefined) {
        if (had !== undefined) changes.push({ kind: 'remove-unikernel', name });
      } else if (
        had === undefined ||
        had.config !== wanted.config ||
        had.image.digest !== wanted.image.digest
      ) {
        changes.push({ kind: 'put-unikernel', record: { name, config: wanted.config, image: wanted.image } });
      }
      const replacing = this.#replacing.get(key)?.record;
      const recorded = this.#book.replacement(key);
      if (replacing === undefined) {
        if (recorded !== undefined) changes.push({ kind: 'remove-replacement', name });
      } else if (recorded !== replacing) {
        changes.push({ kind: 'put-replacement', replacement: replacing });
      }
    }
    for (const path of paths) {
      const policy = T.findPolicy(this.#tree, path);
      const had = this.#book.policy(printName(pathName(path)));
      if (policy === undefined) {
        if (had !== undefined) changes.push({ kind: 'remove-policy', path });
      } else if (had === undefined || !isDeepStrictEqual(had.policy, policy)) {
        changes.push({ kind: 'put-policy', path, policy });
      }
    }
    return this.#book.commit(changes, () => this.#currentState());
  }

  async #commitLogged(names: readonly VmName[]): Promise<void> {
    const saved = await this.#commit(names);
    if (!saved.ok) this.#log.error({ problem: saved.error.message }, 'could not write the state file');
  }

  /** The whole state as it should be now: running and pending unikernels, every policy. */
  #currentState(): Omit<PetrelState, 'imported'> {
    const unikernels: UnikernelRecord[] = [];
    for (const { vm } of this.#running.values()) {
      if (!vm.transient) unikernels.push({ name: vm.name, config: vm.config, image: vm.image });
    }
    for (const pending of this.#pending.values())
      unikernels.push({ name: pending.name, config: pending.config, image: pending.image });
    const policies = T.foldPolicies(this.#tree, []).map(([name, policy]) => ({ path: name.path, policy }));
    const replacements = [...this.#replacing.values()].map((r) => r.record);
    return { unikernels, policies, ...(replacements.length === 0 ? {} : { replacements }) };
  }

  // -------------------------------------------------------------------------------------------
  // Start-up and shutdown

  /**
   * Brings the host to the last committed state (semantics §13.2 with Petrel (e), (j)): block
   * devices from the block directory; the committed state (an earlier Petrel's state file is
   * migrated into the store once, an Albatross file given is imported once); leftovers of a
   * previous run removed, and the store checked (a unikernel whose image is missing is dropped);
   * the discovered root policy, the stored policies with full checks (a failure is fatal); then
   * the stored unikernels by startup priority (a failure is logged and the unikernel dropped).
   * The state is then written whole (a snapshot), which also drops a torn journal tail.
   */
  restore(root: Policy | null, options: RestoreOptions = {}): Promise<Result<RestoreReport, PetrelError>> {
    return this.#serial(async () => {
      this.#persisting = false;
      try {
        return await this.#restore(root, options);
      } finally {
        this.#persisting = true;
      }
    });
  }

  async #restore(root: Policy | null, options: RestoreOptions): Promise<Result<RestoreReport, PetrelError>> {
    const dirs = await this.#host.makeDirectories();
    if (!dirs.ok) return dirs;
    const blocks = await this.#host.scanBlocks();
    if (!blocks.ok) return blocks;
    for (const line of blocks.value.recovered) this.#log.info({ leftover: line }, 'start-up cleanup');
    for (const block of blocks.value.blocks) {
      const added = T.addBlock(this.#tree, block.name, block.sizeMiB);
      if (added.ok) this.#tree = added.value;
    }

    // What was committed, with an earlier Petrel's state file or an Albatross file brought in.
    const failed: { name: string; reason: string }[] = [];
    const committed = await committedState(this.#book, this.#host, this.#log, failed);
    if (!committed.ok) return committed;
    const imported = await withImported(
      this.#host,
      this.#log,
      committed.value.state,
      options.importState,
      failed,
    );
    if (!imported.ok) return imported;
    let state = imported.value;
    const started = encodeSnapshot(state);
    if (!started.ok) return started;
    // Best effort: on a full state directory the start goes on without it (issue 23).
    const kept = await this.#host.keepStartedCopy(started.value);
    if (!kept.ok)
      this.#log.warn({ problem: kept.error.message }, 'could not keep the state as read at this start');

    // Petrel (m): a replace a crash interrupted during its check is kept if the check had
    // passed and rolled back otherwise, before adoption (a tender of the new image is stopped).
    const resolved = resolveReplacements(state);
    state = resolved.state;
    for (const { name, outcome } of resolved.outcomes)
      this.#log.warn({ name, outcome }, 'replacement pending at the last stop resolved');

    // Petrel (k): the tenders an earlier petreld left under the holder. Those of committed
    // unikernels run on; the others are stopped before anything is cleaned or started.
    const held = await this.#host.heldTenders();
    if (!held.ok) return held;
    const plan = planAdoption(state.unikernels, held.value);
    const cleanedUp: string[] = [];
    for (const { held: tender, reason } of plan.dismiss) {
      const dismissed = await this.#host.dismissTender(tender);
      if (!dismissed.ok) return dismissed;
      cleanedUp.push(`${dismissed.value}: ${reason}`);
    }
    const cleaned = await this.#host.cleanLeftovers({
      names: plan.adopt.map((a) => a.name),
      jailIds: plan.adopt.flatMap((a) => (a.meta.jail === undefined ? [] : [a.meta.jail])),
      taps: plan.adopt.flatMap((a) => a.meta.nets.map((n) => n.tap)),
      files: plan.adopt.flatMap((a) => [a.meta.image, a.meta.fifo]),
    });
    if (!cleaned.ok) return cleaned;
    cleanedUp.push(...cleaned.value);

    // The store: what nothing names goes; a unikernel whose image is gone is dropped, unless its
    // tender runs on (an adopted guest is never stopped for a file; restarting it will fail).
    const store = await this.#host.cleanStore(
      new Map(state.unikernels.map((u) => [u.image.digest, u.image.size])),
    );
    if (!store.ok) return store;
    cleanedUp.push(...store.value.removed);
    const missing = new Map(store.value.missing.map((m) => [m.digest, m.reason]));
    const adopting = new Set(plan.adopt.map((a) => vmKey(a.name)));
    const gone = state.unikernels.filter(
      (u) => missing.has(u.image.digest) && !adopting.has(printName(u.name)),
    );
    for (const u of gone)
      failed.push({ name: printName(u.name), reason: missing.get(u.image.digest) as string });
    for (const a of plan.adopt) {
      const reason = missing.get(a.image.digest);
      if (reason !== undefined)
        this.#log.error(
          { name: printName(a.name), problem: reason },
          'adopted unikernel runs an image the store lacks',
        );
    }
    state = { ...state, unikernels: state.unikernels.filter((u) => !gone.includes(u)) };

    if (root !== null) {
      const placed = T.addPolicy(this.#tree, [], root);
      if (!placed.ok) return err('E_POLICY_RESTORE', `root policy: ${placed.error.message}`);
      this.#tree = placed.value;
    }
    for (const { path, policy } of state.policies) {
      if (path.length === 0 && root !== null) continue;
      const inserted = T.addPolicy(this.#tree, path, policy);
      if (!inserted.ok) {
        return err(
          'E_POLICY_RESTORE',
          `policy restore error: couldn't insert policy ${printPath(path)}: ${inserted.error.message}`,
        );
      }
      this.#tree = inserted.value;
    }

    const adopted: string[] = [];
    const handled = new Set<string>();
    // Taken over all at once: each is admitted before its first await, so the tree stays
    // consistent, and the holder answers the watches in one stream.
    const taken = await Promise.all(plan.adopt.map((adoptable) => this.#adopt(adoptable)));
    for (const [i, adoptable] of plan.adopt.entries()) {
      const key = vmKey(adoptable.name);
      handled.add(key);
      const outcome = taken[i];
      if (outcome?.ok) {
        adopted.push(key);
        continue;
      }
      // Refused by admission (the host shrank), or gone from the holder meanwhile.
      failed.push({ name: key, reason: outcome?.error.message ?? 'not adopted' });
      const dismissed = await this.#host.dismissTender(adoptable.held);
      if (dismissed.ok) cleanedUp.push(dismissed.value);
    }
    for (const away of plan.exited) {
      handled.add(vmKey(away.name));
      if (!missing.has(away.image.digest)) await this.#exitedWhileAway(away);
    }

    const order = state.unikernels
      .map((entry, index) => ({ entry, index }))
      .filter(({ entry }) => !handled.has(printName(entry.name)))
      .sort((a, b) => (a.entry.config.startup ?? 50) - (b.entry.config.startup ?? 50) || a.index - b.index);
    const running: string[] = [];
    const dropped: string[] = [];
    for (const { entry } of order) {
      const key = printName(entry.name);
      if (entry.name.label === null) {
        failed.push({ name: key, reason: TEXT.pathUsed });
        continue;
      }
      // Present with its size (checked above); its digest is checked when it is next read.
      const stored: ImageInput = { kind: 'stored', image: entry.image, verify: false };
      const run = await this.#start(entry.name as VmName, entry.config, stored, false, false);
      if (run.ok) running.push(key);
      else {
        failed.push({ name: key, reason: run.error.message });
        dropped.push(entry.image.digest);
      }
    }
    for (const f of failed) this.#log.error(f, 'stored unikernel not restarted; dropped from the state');
    // What a start drops stays in the store until the next start, with petrel.state.started
    // naming it (Albatross #203: a host broken at boot must not lose every unikernel).
    this.#book.keep(dropped);
    this.#persisting = true;
    // The state is written anew only when this start changed it (or the journal is torn or
    // long): a start that adopts every guest writes nothing to the state directory. When the
    // write fails (a full disk) the start goes on: the stored state still reads back as it was,
    // and the next commit writes the whole state.
    const now = { ...this.#currentState(), imported: state.imported };
    if (this.#book.needsWrite(now)) {
      const shrinks = now.unikernels.length <= committed.value.state.unikernels.length;
      const saved = await this.#book.replace(now, { freeing: shrinks });
      if (!saved.ok) {
        this.#log.warn(
          { problem: saved.error.message },
          'could not write the state at start; kept as it was',
        );
        return ok({ cleaned: cleanedUp, adopted, started: running, failed });
      }
    }
    // Exits dealt with are forgotten only now that the state says what became of them.
    for (const away of plan.exited) await this.#host.dismissTender(away.held);
    if (committed.value.retire) {
      const retired = await this.#host.retireLegacyState();
      if (!retired.ok) return retired;
      this.#log.info(
        { backup: retired.value },
        'the earlier state file is now in the image store; kept as a backup',
      );
    }
    return ok({ cleaned: cleanedUp, adopted, started: running, failed });
  }

  /**
   * Takes over a running tender of a committed unikernel: admission into the tree, its console
   * (history from the holder's buffer), supervision. Files it runs from are not checked beyond
   * a warning: an adopted guest is never stopped for a file (Petrel (k)).
   */
  async #adopt(adoptable: Adoptable): Promise<Result<void, PetrelError>> {
    const { name, config, image, meta, held } = adoptable;
    const allocation = allocationOf(config);
    if (!allocation.ok) return allocation;
    const admitted = T.admitUnikernel(this.#tree, name, allocation.value);
    if (!admitted.ok) return admitted;
    this.#tree = admitted.value;
    const feed = consoleFeed(this.#hub, name);
    this.#hub.attach(name, this.#consoleLimit(name.path));
    const taken = await this.#host.adoptTender(held, feed.sink);
    if (!taken.ok) {
      this.#hub.detach(name);
      const released = T.releaseUnikernel(this.#tree, name);
      if (released.ok) this.#tree = released.value;
      return taken;
    }
    feed.attach(taken.value.reader);
    this.#users.hold(image.digest);
    if (meta.jail !== undefined) await this.#host.holdJailClaim(meta.jail);
    this.#supervise({
      name,
      config,
      image,
      imageLink: meta.image,
      fifo: meta.fifo,
      nets: meta.nets,
      jail: meta.jail === undefined ? null : this.#host.holdJail(meta.jail, this.#blockFiles(name, config)),
      tender: taken.value.tender,
      reader: taken.value.reader,
      transient: false,
      state: 'running',
    });
    const fields = { name: printName(name), tenderPid: held.pid };
    for (const problem of taken.value.problems)
      this.#log.warn({ ...fields, problem }, 'adopted unikernel kept despite a missing file');
    this.#log.info(fields, 'unikernel adopted');
    return ok(undefined);
  }

  /** The block files of a unikernel's configuration. */
  #blockFiles(name: VmName, config: KeptConfig): string[] {
    return config.blocks.flatMap((block) => {
      const file = this.#host.blockPath(childName(name.path, blockLabel(block)));
      return file.ok ? [file.value] : [];
    });
  }

  /** A committed unikernel whose tender exited while no petreld was attached (Petrel (k)). */
  async #exitedWhileAway({ name, config, image, held, meta }: Adoptable): Promise<void> {
    const exit: TenderExit = {
      code: held.exit?.code ?? null,
      signal: (held.exit?.signal ?? null) as NodeJS.Signals | null,
      sentSignal: null,
    };
    const exitedAt = held.exitedAt?.getTime() ?? this.#now();
    // Its jail's limits are read as for an exit seen live (the cgroups are still there).
    const limit =
      meta.jail === undefined
        ? null
        : await this.#host.jailLimitHit({ id: meta.jail, limits: null, blocks: [] }, exit);
    const fields = {
      name: printName(name),
      tenderPid: held.pid,
      exit: describeExit(exit),
      ...(limit === null ? {} : { limit }),
      exitedAt: held.exitedAt,
    };
    this.#log.info(fields, 'unikernel exited while petreld was away');
    await this.#decideAfterExit({ name, config, image }, exit, {
      ranForMs: exitedAt - held.startedAt.getTime(),
      history: NO_HISTORY,
      fields,
      record: { exit: fields.exit, limit, at: exitedAt },
      elapsedMs: this.#now() - exitedAt,
    });
  }

  /**
   * Starts a unikernel that is not written to the state (the boot canary), through the same
   * transaction as create.
   */
  startTransient(name: VmName, config: UnikernelConfig, file?: string): Promise<Result<void, PetrelError>> {
    const { image, ...kept } = config;
    if (file !== undefined && !config.compressed) {
      // Run from its installed file: nothing is written to the state directory.
      const ref = { digest: createHash('sha256').update(image).digest('hex'), size: image.length };
      return this.#serial(async () => {
        if (this.#running.has(vmKey(name))) return err('E_NAME_TAKEN', TEXT.alreadyRunning);
        const started = await this.#start(name, kept, { kind: 'file', file, image: ref }, true);
        return started.ok ? ok(undefined) : started;
      });
    }
    const staging = this.#host.stageImage([image], config.compressed);
    return (async () => {
      const staged = await staging;
      try {
        return await this.#serial(async () => {
          if (this.#running.has(vmKey(name))) return err('E_NAME_TAKEN', TEXT.alreadyRunning);
          const started = await this.#start(name, kept, { kind: 'staged', staged }, true);
          return started.ok ? ok(undefined) : started;
        });
      } finally {
        if (staged.ok) await this.#host.discardStaged(staged.value);
      }
    })();
  }

  /** Stops a unikernel and waits for its release, not touching the state file. */
  stopTransient(name: VmName): Promise<TenderExit | null> {
    return this.#serial(async () => {
      const running = this.#running.get(vmKey(name));
      return running === undefined ? null : this.#stop(running);
    });
  }

  /**
   * Daemon shutdown (semantics §13.3 with Petrel (k)). Pending restarts are cancelled and the
   * state is not written, so they come back at next start. With `keepGuests` the tenders run on
   * under the holder, to be adopted by the next start (an upgrade is not a guest restart);
   * without, every unikernel is stopped and released, as Albatross does. Transient unikernels
   * (the canary) are stopped either way: no state names them. Either way the store keeps every
   * image the state names.
   */
  shutdown(options: { readonly keepGuests?: boolean } = {}): Promise<void> {
    this.#shuttingDown = true;
    this.#quiet.close();
    for (const key of [...this.#pending.keys()]) {
      const pending = this.#pending.get(key);
      if (pending !== undefined) clearTimeout(pending.timer);
    }
    return this.#serial(async () => {
      this.#persisting = false;
      const stopping = [...this.#running.values()].filter((run) => !options.keepGuests || run.vm.transient);
      await Promise.all(stopping.map((run) => this.#stop(run)));
      this.#host.close();
    });
  }

  /** Resolves when no task is queued or running (tests). */
  idle(): Promise<void> {
    return this.#queue.onIdle();
  }
}

// The single writer of petreld. How a command becomes a transaction, and where each step is:
//   1. queue: every mutating command, every tender exit and every delayed restart runs as one
//      task of a queue with concurrency 1 (here, #serial), so nothing interleaves with a
//      transaction; the rooms are handed a narrow context (context.ts), never the Engine;
//   2. plan: src/resources computes the new tree (admission) or the rejection (lifecycle.ts);
//   3. validate: image, ELF notes, tender, manifest, bridges (prepare.ts), still without effects;
//   4. effects: image into the store, FIFO, taps, console, tender (launch.ts), each with its undo;
//   5. commit: swap the tree, append the change to the state journal (here, #commit, through
//      state-book.ts); a failure undoes step 4 (lifecycle.ts);
//   6. reply, only after the commit (here; events.ts times, publishes and logs each command).
// The rooms: create, force-create, restart, destroy and the steps of a start and a stop in
// lifecycle.ts; exits and restart on failure in supervision.ts; replace with a liveness check in
// replace.ts; start-up's restore and adoption in restore.ts; policies in policies.ts; block
// devices in blocks.ts. A create's image is received into the store's staging area before its
// transaction queues, so a slow upload never holds the queue and the frame that carried it is
// released. Stored images nothing uses and the committed state does not name are removed after
// each task (sweepStore). Force-create and restart check steps 2–3 for the new configuration
// before stopping the old unikernel, hold the queue while it stops, and start it again if the
// new one cannot start.

import { isDeepStrictEqual } from 'node:util';
import PQueue from 'p-queue';
import type { Logger } from 'pino';
import type { ConsoleHub } from '../console/hub.js';
import { QuietCollector } from '../host/garbage.js';
import type { ImageRef } from '../host/images.js';
import { ok, type PetrelError, type Result } from '../resources/errors.js';
import { type Name, type Path, pathName, printName } from '../resources/name.js';
import type { Policy } from '../resources/policy.js';
import * as T from '../resources/tree.js';
import type { TenderKind } from '../tender/elf.js';
import type { TenderExit } from '../tender/process.js';
import type { KeptConfig, PetrelState, StateChange, UnikernelRecord } from '../wire/petrel-state.js';
import { createConfig, restartArguments } from '../wire/shapes.js';
import type { Command, CreateCommand, UnikernelConfig } from '../wire/types.js';
import { BlockCommands } from './blocks.js';
import type { EngineContext } from './context.js';
import { observeCommand } from './events.js';
import { getResponse } from './get.js';
import type { EngineHost } from './host-types.js';
import { ImageUsers, sweepStore } from './image-users.js';
import { infoResponse } from './info.js';
import { type RunningVm, vmKey } from './launch.js';
import { Lifecycle } from './lifecycle.js';
import { addPolicy, policyInfo, removePolicy } from './policies.js';
import { Replacements } from './replace.js';
import { type EngineResponse, failure, TEXT } from './replies.js';
import { DEFAULT_RESTART, type RestartOptions } from './restart.js';
import { type RestoreOptions, type RestoreReport, restoreState } from './restore.js';
import { RunningSet } from './running.js';
import { StateBook } from './state-book.js';
import { Supervision } from './supervision.js';
import type { VmName } from './types.js';

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

// Every name engine.ts exported before it was split stays reachable here.
export { type EngineResponse, failure, reply, text } from './replies.js';
export type { RestoreOptions, RestoreReport } from './restore.js';

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

export class Engine {
  readonly #queue = new PQueue({ concurrency: 1 });
  readonly #host: EngineHost;
  readonly #log: Logger;
  readonly #now: () => number;
  #runtimes: readonly TenderKind[];
  readonly #blocks: BlockCommands;
  readonly #book: StateBook;
  readonly #users = new ImageUsers();
  /** One collection once the queue has been quiet after work (see src/host/garbage.ts). */
  readonly #quiet = new QuietCollector();
  #treeValue: T.Tree = T.emptyTree;
  readonly #onTreeChange: ((tree: T.Tree) => void) | undefined;
  readonly #running = new RunningSet();
  readonly #lifecycle: Lifecycle;
  readonly #supervision: Supervision;
  readonly #replacements: Replacements;
  /** The view of the engine its rooms get: what they may read, the steps they may ask for. */
  readonly #context: EngineContext;
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
    this.#log = options.log;
    this.#now = options.now ?? Date.now;
    this.#runtimes = options.runtimes ?? ['hvt', 'spt'];
    this.#book = new StateBook(this.#host, this.#log, options.compactStateBytes);
    const engine = this;
    this.#context = {
      host: this.#host,
      hub: options.hub,
      log: this.#log,
      stopTimeoutMs: options.stopTimeoutMs ?? 10_000,
      restart: { ...DEFAULT_RESTART, ...options.restart },
      now: this.#now,
      runtimes: () => this.#runtimes,
      shuttingDown: () => this.#shuttingDown,
      tree: () => this.#tree,
      running: this.#running,
      users: this.#users,
      serial: (task) => this.#serial(task),
      observe: (name, type, run) => observeCommand({ log: this.#log, now: this.#now }, name, type, run),
      setTree: (tree) => {
        this.#tree = tree;
      },
      commit: (names, paths) => this.#commit(names, paths),
      commitLogged: (names) => this.#commitLogged(names),
      get unikernels() {
        return engine.#lifecycle;
      },
      get exits() {
        return engine.#supervision;
      },
      get replacements() {
        return engine.#replacements;
      },
    };
    this.#blocks = new BlockCommands(this.#context);
    this.#lifecycle = new Lifecycle(this.#context);
    this.#supervision = new Supervision(this.#context);
    this.#replacements = new Replacements(this.#context);
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
        return this.#context.observe(name, command.type, () =>
          getResponse(this.#context, (task) => this.#queue.add(task), name, command.level),
        );
      case 'console-add':
      case 'console-subscribe':
      case 'console-list-inactive':
      case 'stats-add':
      case 'stats-remove':
      case 'stats-subscribe':
      case 'stats-initial':
        return Promise.resolve(failure(TEXT.unknownCommand));
      default:
        return this.#serial(() =>
          this.#context.observe(name, command.type, () => this.#dispatch(name, command)),
        );
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
        await sweepStore(this.#users, this.#book, this.#host, this.#log);
        // A reserve given up for a freeing command comes back once space allows, so the next freeing command has it too.
        if (!this.#shuttingDown) await this.#book.refillReserve();
        if (!this.#shuttingDown) this.#quiet.worked();
      }
    });
  }

  #dispatch(name: Name, command: Command): Promise<EngineResponse> | EngineResponse {
    switch (command.type) {
      case 'unikernel-info':
        return infoResponse(this.#tree, this.#running, name, command.release);
      case 'unikernel-exits':
        return this.#supervision.exits(name);
      case 'unikernel-restart':
        return this.#lifecycle.restart(name, restartArguments(command));
      case 'unikernel-destroy':
        return this.#lifecycle.destroy(name);
      case 'policy-info':
        return policyInfo(this.#tree, name);
      case 'policy-add':
        return addPolicy(this.#context, name.path, command.policy);
      case 'policy-remove':
        return removePolicy(this.#context, name.path);
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

  /**
   * A create (or force-create): its image, inline or as the chunks that follow, goes to the
   * store's staging area first; this function keeps no reference to the command, so the frame
   * that carried an inline image is released once the image is staged.
   */
  #receive(name: Name, command: CreateCommand, input?: AsyncIterable<Uint8Array>): Promise<EngineResponse> {
    const { image, ...config } = createConfig(command);
    const chunks = image.length > 0 || input === undefined ? [image] : input;
    const staging = this.#host.stageImage(chunks, config.compressed);
    if (command.check !== undefined) return this.#replacements.run(name, config, command.check, staging);
    return this.#lifecycle.created(name, config, command.force, staging);
  }

  // -------------------------------------------------------------------------------------------
  // Persistence

  /** What the state must say about a unikernel now: running (not transient) or pending. */
  #wanted(key: string): { readonly config: KeptConfig; readonly image: ImageRef } | undefined {
    const run = this.#running.get(key);
    if (run !== undefined) return run.vm.transient ? undefined : run.vm;
    return this.#supervision.pendingOf(key);
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
      const replacing = this.#replacements.recordOf(key);
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
    unikernels.push(...this.#supervision.pendingRecords());
    const policies = T.foldPolicies(this.#tree, []).map(([name, policy]) => ({ path: name.path, policy }));
    const replacements = this.#replacements.records();
    return { unikernels, policies, ...(replacements.length === 0 ? {} : { replacements }) };
  }

  // -------------------------------------------------------------------------------------------
  // Start-up and shutdown

  /**
   * Brings the host to the last committed state (restore.ts): one task of the queue, during
   * which nothing is appended to the journal; the state is written whole at its end if it changed.
   */
  restore(root: Policy | null, options: RestoreOptions = {}): Promise<Result<RestoreReport, PetrelError>> {
    return this.#serial(async () => {
      this.#persisting = false;
      try {
        return await restoreState(
          { ...this.#context, book: this.#book, currentState: () => this.#currentState() },
          root,
          options,
        );
      } finally {
        this.#persisting = true;
      }
    });
  }

  /**
   * Starts a unikernel that is not written to the state (the boot canary), through the same
   * transaction as create.
   */
  startTransient(name: VmName, config: UnikernelConfig, file?: string): Promise<Result<void, PetrelError>> {
    return this.#lifecycle.startTransient(name, config, file);
  }

  /** Stops a unikernel and waits for its release, not touching the state file. */
  stopTransient(name: VmName): Promise<TenderExit | null> {
    return this.#lifecycle.stopTransient(name);
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
    this.#supervision.stopTimers();
    return this.#serial(async () => {
      this.#persisting = false;
      const stopping = [...this.#running.values()].filter((run) => !options.keepGuests || run.vm.transient);
      await Promise.all(stopping.map((run) => this.#lifecycle.stop(run)));
      this.#host.close();
    });
  }

  /** Resolves when no task is queued or running (tests). */
  idle(): Promise<void> {
    return this.#queue.onIdle();
  }
}

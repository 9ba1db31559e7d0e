// The single writer of petreld. How a command becomes a transaction:
//   1. every mutating command, every tender exit and every delayed restart runs as one task of a
//      queue with concurrency 1, so nothing interleaves with a transaction;
//   2. plan: src/resources computes the new tree (admission) or the rejection;
//   3. validate: image, ELF notes, tender, manifest, bridges (prepare.ts), still without effects;
//   4. effects: image, FIFO, taps, console, tender (launch.ts), each pushing its undo;
//   5. commit: swap the tree, write the state file atomically; a failure undoes step 4;
//   6. reply, only after the commit.
// Force-create and restart check steps 2–3 for the new configuration before stopping the old
// unikernel, hold the queue while it stops, and start it again if the new one cannot start.

import { promisify } from 'node:util';
import { deflate } from 'node:zlib';
import PQueue from 'p-queue';
import type { Logger } from 'pino';
import { consoleFeed } from '../console/feed.js';
import type { ConsoleHub } from '../console/hub.js';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import { type Name, type Path, printName, printPath } from '../resources/name.js';
import type { Policy } from '../resources/policy.js';
import * as T from '../resources/tree.js';
import type { TenderKind } from '../tender/elf.js';
import { inflateImage } from '../tender/image.js';
import type { TenderExit } from '../tender/process.js';
import { createConfig, infoReply, restartArguments, upgradeState } from '../wire/shapes.js';
import { decodeState, encodeState } from '../wire/state.js';
import type { Command, CurrentState, Data, InfoRelease, Reply, UnikernelConfig } from '../wire/types.js';
import { type Adoptable, planAdoption } from './adopt.js';
import { BlockCommands } from './blocks.js';
import { publishCommand, publishRestart, publishStep } from './events.js';
import type { EngineHost } from './host.js';
import { unikernelInfo } from './info.js';
import { describeExit, launch, type RunningVm, releaseHost, vmKey } from './launch.js';
import { allocationOf, type Prepared, prepare, type VmName } from './prepare.js';
import { invalidLevel, TEXT, unsupportedType } from './replies.js';
import {
  DEFAULT_RESTART,
  decideRestart,
  NO_HISTORY,
  type RestartHistory,
  type RestartOptions,
} from './restart.js';

const deflateAsync = promisify(deflate);

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
  /** Called synchronously whenever the resource tree changes (the fleet reporter); must not throw. */
  readonly onTreeChange?: (tree: T.Tree) => void;
}

export interface EngineRequest {
  /** The header name of the command. */
  readonly name: Name;
  readonly command: Command;
  /** Raw chunks that follow the command (block set [7]); ends at the empty chunk. */
  readonly input?: AsyncIterable<Uint8Array>;
}

export type EngineResponse =
  | { readonly kind: 'reply'; readonly reply: Reply }
  | { readonly kind: 'failure'; readonly message: string }
  /** A reply followed by data frames (block dump [6]). */
  | { readonly kind: 'stream'; readonly reply: Reply; readonly data: AsyncIterable<Data> };

export const reply = (r: Reply): EngineResponse => ({ kind: 'reply', reply: r });

const READ_ONLY: ReadonlySet<Command['type']> = new Set([
  'unikernel-info',
  'unikernel-get',
  'policy-info',
  'block-info',
]);

/**
 * Answered without changing anything: a query, or the policy a TLS session re-installs on every
 * connection. Logged at debug: at info they were most of the log (the TLS endpoint logs each
 * session's request and outcome at info already), and each line costs a write.
 */
function changedNothing(command: Command, response: EngineResponse): boolean {
  if (READ_ONLY.has(command.type)) return true;
  return (
    response.kind === 'reply' &&
    response.reply.type === 'string' &&
    response.reply.text === TEXT.policyUnchanged
  );
}
export const text = (t: string): EngineResponse => reply({ type: 'string', text: t });
export const failure = (message: string): EngineResponse => ({ kind: 'failure', message });

/** A tender run the engine supervises, with the promise its stoppers and exit handler share. */
interface Supervised {
  readonly vm: RunningVm;
  /** Resolves once the tender exited and its tap, FIFO and image are released. */
  readonly shutdown: Promise<TenderExit>;
  readonly released: (exit: TenderExit) => void;
  history: RestartHistory;
}

interface PendingRestart {
  readonly name: VmName;
  readonly config: UnikernelConfig;
  readonly timer: NodeJS.Timeout;
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
  readonly #runtimes: readonly TenderKind[];
  readonly #blocks: BlockCommands;
  #treeValue: T.Tree = T.emptyTree;
  readonly #onTreeChange: ((tree: T.Tree) => void) | undefined;
  readonly #running = new Map<string, Supervised>();
  readonly #pending = new Map<string, PendingRestart>();
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

  constructor(options: EngineOptions) {
    this.#onTreeChange = options.onTreeChange;
    this.#host = options.host;
    this.#hub = options.hub;
    this.#log = options.log;
    this.#stopTimeoutMs = options.stopTimeoutMs ?? 10_000;
    this.#restart = { ...DEFAULT_RESTART, ...options.restart };
    this.#now = options.now ?? Date.now;
    this.#runtimes = options.runtimes ?? ['hvt', 'spt'];
    this.#blocks = new BlockCommands({
      host: this.#host,
      log: this.#log,
      tree: () => this.#tree,
      setTree: (tree: T.Tree) => {
        this.#tree = tree;
      },
      serialize: <R>(task: () => Promise<R>) => this.#queue.add(task),
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
      case 'console-add':
      case 'console-subscribe':
      case 'console-list-inactive':
      case 'stats-add':
      case 'stats-remove':
      case 'stats-subscribe':
      case 'stats-initial':
        return Promise.resolve(failure(TEXT.unknownCommand));
      default:
        return this.#queue.add(() => this.#handle(name, command));
    }
  }

  async #handle(name: Name, command: Command): Promise<EngineResponse> {
    const started = this.#now();
    const response = await this.#dispatch(name, command);
    const fields = { command: command.type, name: printName(name), ms: this.#now() - started };
    publishCommand({
      command: command.type,
      outcome: response.kind === 'failure' ? 'refused' : 'done',
      ms: fields.ms,
    });
    if (response.kind === 'failure')
      this.#log.info({ ...fields, reason: response.message }, 'command refused');
    else if (changedNothing(command, response)) this.#log.debug(fields, 'command done');
    else this.#log.info(fields, 'command done');
    return response;
  }

  #dispatch(name: Name, command: Command): Promise<EngineResponse> | EngineResponse {
    switch (command.type) {
      case 'unikernel-info':
        return this.#info(name, command.release);
      case 'unikernel-get':
        return this.#get(name, command.level);
      case 'unikernel-create':
        return this.#create(name, createConfig(command), command.force);
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

  async #get(name: Name, level: number): Promise<EngineResponse> {
    if (!Number.isInteger(level) || level < 0 || level > 9) return failure(invalidLevel(level));
    const run = this.#running.get(printName(name));
    if (run === undefined) return failure(TEXT.getNotFound);
    const { config } = run.vm;
    if (config.compressed && level > 0)
      return reply({ type: 'unikernel-image', compressed: true, image: config.image });
    if (!config.compressed && level === 0)
      return reply({ type: 'unikernel-image', compressed: false, image: config.image });
    if (config.compressed) {
      const raw = await inflateImage(config.image, true);
      if (!raw.ok) return failure(raw.error.message);
      return reply({ type: 'unikernel-image', compressed: false, image: raw.value });
    }
    return reply({
      type: 'unikernel-image',
      compressed: true,
      image: await deflateAsync(config.image, { level }),
    });
  }

  async #create(name: Name, config: UnikernelConfig, force: boolean): Promise<EngineResponse> {
    if (name.label === null) return failure(TEXT.pathUsed);
    if (config.typ !== 'solo5') return failure(unsupportedType(config.typ));
    const vmName = name as VmName;
    const running = this.#running.get(vmKey(vmName));
    if (running !== undefined && !force) return failure(TEXT.alreadyRunning);
    // A create supersedes a restart that waits for its back-off (Petrel (d)).
    this.#cancelPending(vmKey(vmName));
    if (running !== undefined) return this.#replace(running, config);
    const started = await this.#start(vmName, config, false);
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
    const config: UnikernelConfig = args === null ? old : { ...old, ...args };
    return this.#replace(running, config);
  }

  async #destroy(name: Name): Promise<EngineResponse> {
    const key = printName(name);
    const running = this.#running.get(key);
    if (running !== undefined) {
      await this.#stop(running);
      publishStep(key, 'stopped');
      await this.#persistLogged();
      publishStep(key, 'state-written');
      return text(TEXT.destroyed);
    }
    if (this.#cancelPending(key)) {
      await this.#persistLogged();
      return text(TEXT.removedFromRestarting);
    }
    return failure(TEXT.destroyNotFound);
  }

  /**
   * Force-create and restart (Petrel (b)): admission with the old unikernel's resources freed
   * and every check of the new configuration first; then stop the old one and start the new; if
   * that fails, start the old configuration again and say so.
   */
  async #replace(old: Supervised, config: UnikernelConfig): Promise<EngineResponse> {
    const { name } = old.vm;
    const without = T.releaseUnikernel(this.#tree, name);
    if (!without.ok) return failure(without.error.message);
    const allocation = allocationOf(config);
    if (!allocation.ok) return failure(allocation.error.message);
    const admitted = T.admitUnikernel(without.value, name, allocation.value);
    if (!admitted.ok) return failure(admitted.error.message);
    const prepared = await prepare(this.#host, name, config, this.#runtimes);
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
    const again = await this.#start(name, old.vm.config, false);
    if (again.ok) return failure(`${first}; the previous unikernel was started again`);
    await this.#persistLogged();
    return failure(`${first}; starting the previous unikernel failed too: ${again.error.message}`);
  }

  /** Plan, validate and launch a new unikernel, then commit it. */
  async #start(
    name: VmName,
    config: UnikernelConfig,
    transient: boolean,
    persist = true,
  ): Promise<Result<Supervised, PetrelError>> {
    const allocation = allocationOf(config);
    if (!allocation.ok) return allocation;
    const admitted = T.admitUnikernel(this.#tree, name, allocation.value);
    if (!admitted.ok) return admitted;
    publishStep(vmKey(name), 'planned');
    const prepared = await prepare(this.#host, name, config, this.#runtimes);
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
    publishStep(vmKey(name), 'committed');
    if (persist && !transient) {
      const saved = await this.#persist();
      if (!saved.ok) {
        supervised.vm.state = 'stopping';
        this.#running.delete(vmKey(name));
        this.#tree = before;
        await launched.value.undo.rollback();
        supervised.released({ code: null, signal: null, sentSignal: 'SIGTERM' });
        return err('E_STATE_WRITE', `could not create unikernel: ${saved.error.message}`);
      }
    }
    await launched.value.undo.commit();
    if (persist && !transient) publishStep(vmKey(name), 'state-written');
    this.#log.info(
      { name: printName(name), pid: supervised.vm.tender.pid, taps: supervised.vm.nets.map((n) => n.tap) },
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
    let released: (exit: TenderExit) => void = () => undefined;
    const shutdown = new Promise<TenderExit>((resolve) => {
      released = resolve;
    });
    const supervised: Supervised = { vm, shutdown, released, history };
    this.#running.set(vmKey(vm.name), supervised);
    void vm.tender.shutdown.then((exit) => {
      if (vm.state === 'running') void this.#queue.add(() => this.#exited(supervised, exit));
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
    vm.state = 'released';
    supervised.released(exit);
  }

  /** A tender exited on its own: release it, then restart it or let it go (§5.7, Petrel (d)). */
  async #exited(supervised: Supervised, exit: TenderExit): Promise<void> {
    const { vm } = supervised;
    if (vm.state !== 'running') return;
    vm.state = 'stopping';
    await this.#release(supervised, exit);
    const fields = { name: printName(vm.name), pid: vm.tender.pid, exit: describeExit(exit) };
    if (this.#shuttingDown || vm.transient) {
      this.#log.info(fields, 'unikernel exited');
      vm.tender.forget();
      return;
    }
    if (exit.holderLost) {
      // Not the guest's doing: the holder died and its tenders with it (Petrel (k)). Restored
      // from the state, as the next start would, under a new holder.
      this.#log.warn(fields, 'the holder ended and its tender with it; starting the unikernel again');
      const again = await this.#start(vm.name, vm.config, false, false);
      if (again.ok) again.value.history = supervised.history;
      else {
        this.#log.warn({ ...fields, reason: again.error.message }, 'restore failed; unikernel dropped');
        await this.#persistLogged();
      }
      return;
    }
    await this.#decideAfterExit(vm.name, vm.config, exit, {
      ranForMs: this.#now() - vm.tender.startedAt.getTime(),
      history: supervised.history,
      fields,
    });
    vm.tender.forget();
  }

  /** Restart on failure for an exit (§5.7, Petrel (d)): drop, retry without --name, or restart later. */
  async #decideAfterExit(
    name: VmName,
    config: UnikernelConfig,
    exit: TenderExit,
    context: {
      ranForMs: number;
      history: RestartHistory;
      fields: Record<string, unknown>;
      elapsedMs?: number;
    },
  ): Promise<void> {
    const { fields } = context;
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
        await this.#persistLogged();
        return;
      case 'retry-without-name': {
        this.#log.info(fields, 'unikernel exited 64 with --name; starting it again without --name');
        const again = await this.#start(name, { ...config, addName: false }, false);
        if (!again.ok) {
          this.#log.warn({ ...fields, reason: again.error.message }, 'start without --name failed');
          await this.#persistLogged();
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
          void this.#queue.add(() => this.#restartPending(key));
        }, delayMs);
        timer.unref();
        this.#pending.set(key, { name: name, config: config, timer, history: decision.history });
        return;
      }
    }
  }

  async #restartPending(key: string): Promise<void> {
    const pending = this.#pending.get(key);
    if (pending === undefined || this.#shuttingDown) return;
    this.#pending.delete(key);
    // A successful restart does not rewrite the state file (Albatross #249).
    const started = await this.#start(pending.name, pending.config, false, false);
    if (started.ok) {
      started.value.history = pending.history;
      return;
    }
    this.#log.warn({ name: key, reason: started.error.message }, 'restart failed; unikernel dropped');
    await this.#persistLogged();
  }

  #cancelPending(key: string): boolean {
    const pending = this.#pending.get(key);
    if (pending === undefined) return false;
    clearTimeout(pending.timer);
    this.#pending.delete(key);
    return true;
  }

  // -------------------------------------------------------------------------------------------
  // Policies

  async #addPolicy(path: Path, policy: Policy): Promise<EngineResponse> {
    const next = T.addPolicy(this.#tree, path, policy);
    if (!next.ok) return failure(next.error.message);
    if (next.value === this.#tree) return text(TEXT.policyUnchanged);
    return this.#commitTree(next.value, TEXT.policyAdded);
  }

  async #removePolicy(path: Path): Promise<EngineResponse> {
    const next = T.removePolicy(this.#tree, path);
    if (!next.ok) return failure(next.error.message);
    return this.#commitTree(next.value, TEXT.policyRemoved);
  }

  async #commitTree(next: T.Tree, done: string): Promise<EngineResponse> {
    const before = this.#tree;
    this.#tree = next;
    const saved = await this.#persist();
    if (saved.ok) return text(done);
    this.#tree = before;
    return failure(`could not write the state file: ${saved.error.message}`);
  }

  // -------------------------------------------------------------------------------------------
  // Persistence

  /** What the state file must say now: running and pending unikernels, every policy. */
  #state(): CurrentState {
    const unikernels: CurrentState['unikernels'][number][] = [];
    for (const [relative] of T.foldUnikernels(this.#tree, [])) {
      const run = this.#running.get(printName(relative));
      if (run !== undefined && !run.vm.transient)
        unikernels.push({ name: run.vm.name, config: run.vm.config });
    }
    for (const pending of this.#pending.values())
      unikernels.push({ name: pending.name, config: pending.config });
    const policies = T.foldPolicies(this.#tree, []).map(([name, policy]) => ({ path: name.path, policy }));
    return { version: 6, unikernels, policies };
  }

  async #persist(): Promise<Result<void, PetrelError>> {
    if (!this.#persisting) return ok(undefined);
    const bytes = encodeState(this.#state());
    if (!bytes.ok) return bytes;
    return this.#host.writeState(bytes.value);
  }

  async #persistLogged(): Promise<void> {
    const saved = await this.#persist();
    if (!saved.ok) this.#log.error({ problem: saved.error.message }, 'could not write the state file');
  }

  // -------------------------------------------------------------------------------------------
  // Start-up and shutdown

  /**
   * Brings the host to the last committed state (semantics §13.2 with Petrel (e)): block
   * devices from the block directory, leftovers of a previous run removed, the discovered root
   * policy, the stored policies with full checks (a failure is fatal), then the stored
   * unikernels by startup priority (a failure is logged and the unikernel dropped).
   */
  restore(root: Policy | null): Promise<Result<RestoreReport, PetrelError>> {
    return this.#queue.add(async () => {
      this.#persisting = false;
      try {
        return await this.#restore(root);
      } finally {
        this.#persisting = true;
      }
    });
  }

  async #restore(root: Policy | null): Promise<Result<RestoreReport, PetrelError>> {
    const dirs = await this.#host.makeDirectories();
    if (!dirs.ok) return dirs;
    const blocks = await this.#host.scanBlocks();
    if (!blocks.ok) return blocks;
    for (const line of blocks.value.recovered) this.#log.info({ leftover: line }, 'start-up cleanup');
    for (const block of blocks.value.blocks) {
      const added = T.addBlock(this.#tree, block.name, block.sizeMiB);
      if (added.ok) this.#tree = added.value;
    }
    const bytes = await this.#host.readState();
    if (!bytes.ok) return bytes;
    let state: CurrentState = { version: 6, unikernels: [], policies: [] };
    if (bytes.value !== null) {
      const decoded = decodeState(bytes.value);
      if (!decoded.ok)
        return err('E_STATE_READ', `bailing out: ${decoded.error.message}`, { cause: decoded.error });
      state = upgradeState(decoded.value);
      const kept = await this.#host.keepStartedCopy(bytes.value);
      if (!kept.ok) return kept;
    }

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
      taps: plan.adopt.flatMap((a) => a.meta.nets.map((n) => n.tap)),
      files: plan.adopt.flatMap((a) => [a.meta.image, a.meta.fifo]),
    });
    if (!cleaned.ok) return cleaned;
    cleanedUp.push(...cleaned.value);

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
    const failed: { name: string; reason: string }[] = [];
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
      const key = vmKey(away.name);
      handled.add(key);
      await this.#exitedWhileAway(away);
    }

    const order = state.unikernels
      .map((entry, index) => ({ entry, index }))
      .filter(({ entry }) => !handled.has(printName(entry.name)))
      .sort((a, b) => (a.entry.config.startup ?? 50) - (b.entry.config.startup ?? 50) || a.index - b.index);
    const started: string[] = [];
    for (const { entry } of order) {
      const key = printName(entry.name);
      if (entry.name.label === null) {
        failed.push({ name: key, reason: TEXT.pathUsed });
        continue;
      }
      const run = await this.#start(entry.name as VmName, entry.config, false, false);
      if (run.ok) started.push(key);
      else failed.push({ name: key, reason: run.error.message });
    }
    for (const f of failed) this.#log.warn(f, 'stored unikernel not restarted; dropped from the state file');
    this.#persisting = true;
    const saved = await this.#persist();
    if (!saved.ok) return saved;
    // Exits dealt with are forgotten only now that the state says what became of them.
    for (const away of plan.exited) await this.#host.dismissTender(away.held);
    return ok({ cleaned: cleanedUp, adopted, started, failed });
  }

  /**
   * Takes over a running tender of a committed unikernel: admission into the tree, its console
   * (history from the holder's buffer), supervision. Files it runs from are not checked beyond
   * a warning: an adopted guest is never stopped for a file (Petrel (k)).
   */
  async #adopt(adoptable: Adoptable): Promise<Result<void, PetrelError>> {
    const { name, config, meta, held } = adoptable;
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
    this.#supervise({
      name,
      config,
      digest: Buffer.from(meta.digest, 'hex'),
      imagePath: meta.image,
      fifo: meta.fifo,
      nets: meta.nets,
      tender: taken.value.tender,
      reader: taken.value.reader,
      transient: false,
      state: 'running',
    });
    const fields = { name: printName(name), pid: held.pid };
    for (const problem of taken.value.problems)
      this.#log.warn({ ...fields, problem }, 'adopted unikernel kept despite a missing file');
    this.#log.info(fields, 'unikernel adopted');
    return ok(undefined);
  }

  /** A committed unikernel whose tender exited while no petreld was attached (Petrel (k)). */
  async #exitedWhileAway({ name, config, held }: Adoptable): Promise<void> {
    const exit: TenderExit = {
      code: held.exit?.code ?? null,
      signal: (held.exit?.signal ?? null) as NodeJS.Signals | null,
      sentSignal: null,
    };
    const exitedAt = held.exitedAt?.getTime() ?? this.#now();
    const fields = {
      name: printName(name),
      pid: held.pid,
      exit: describeExit(exit),
      exitedAt: held.exitedAt,
    };
    this.#log.info(fields, 'unikernel exited while petreld was away');
    await this.#decideAfterExit(name, config, exit, {
      ranForMs: exitedAt - held.startedAt.getTime(),
      history: NO_HISTORY,
      fields,
      elapsedMs: this.#now() - exitedAt,
    });
  }

  /**
   * Starts a unikernel that is not written to the state file (the boot canary), through the
   * same transaction as create.
   */
  startTransient(name: VmName, config: UnikernelConfig): Promise<Result<void, PetrelError>> {
    return this.#queue.add(async () => {
      if (this.#running.has(vmKey(name))) return err('E_NAME_TAKEN', TEXT.alreadyRunning);
      const started = await this.#start(name, config, true);
      return started.ok ? ok(undefined) : started;
    });
  }

  /** Stops a unikernel and waits for its release, not touching the state file. */
  stopTransient(name: VmName): Promise<TenderExit | null> {
    return this.#queue.add(async () => {
      const running = this.#running.get(vmKey(name));
      return running === undefined ? null : this.#stop(running);
    });
  }

  /**
   * Daemon shutdown (semantics §13.3 with Petrel (k)). Pending restarts are cancelled and the
   * state file is not written, so they come back at next start. With `keepGuests` the tenders
   * run on under the holder, to be adopted by the next start (an upgrade is not a guest
   * restart); without, every unikernel is stopped and released, as Albatross does. Transient
   * unikernels (the canary) are stopped either way: no state names them.
   */
  shutdown(options: { readonly keepGuests?: boolean } = {}): Promise<void> {
    this.#shuttingDown = true;
    for (const key of [...this.#pending.keys()]) {
      const pending = this.#pending.get(key);
      if (pending !== undefined) clearTimeout(pending.timer);
    }
    return this.#queue.add(async () => {
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

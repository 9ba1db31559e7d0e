// Create, force-create, restart and destroy of a unikernel, and the steps each start and stop
// takes: plan (src/resources), validate (prepare.ts), launch (launch.ts), commit; stop, release.

import { createHash } from 'node:crypto';
import type { StagedImage } from '../host/images.js';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import { type Name, type Path, printName } from '../resources/name.js';
import * as T from '../resources/tree.js';
import type { TenderExit } from '../tender/process.js';
import type { KeptConfig } from '../wire/petrel-state.js';
import type { restartArguments } from '../wire/shapes.js';
import type { UnikernelConfig } from '../wire/types.js';
import type { EngineContext, UnikernelSteps } from './context.js';
import { publishStep } from './events.js';
import { launch, releaseHost, vmKey } from './launch.js';
import { allocationOf, type ImageInput, type Prepared, prepare, readAgain, withStaged } from './prepare.js';
import { type EngineResponse, failure, TEXT, text, unsupportedType } from './replies.js';
import type { Supervised } from './running.js';
import type { VmName } from './types.js';

export type LifecycleContext = Pick<
  EngineContext,
  | 'host'
  | 'hub'
  | 'log'
  | 'stopTimeoutMs'
  | 'now'
  | 'runtimes'
  | 'tree'
  | 'running'
  | 'users'
  | 'serial'
  | 'observe'
  | 'setTree'
  | 'commit'
  | 'commitLogged'
  | 'exits'
  | 'replacements'
>;

/**
 * The unikernel commands and the steps of a start and a stop. Everything here runs in the
 * engine's queue, but for created(), startTransient() and stopTransient(), which queue their own
 * task (once the image, if one is sent, is staged).
 */
export class Lifecycle implements UnikernelSteps {
  readonly #ctx: LifecycleContext;

  constructor(ctx: LifecycleContext) {
    this.#ctx = ctx;
  }

  /** A create or force-create whose image is being staged: queued once it is. */
  async created(
    name: Name,
    config: KeptConfig,
    force: boolean,
    staging: Promise<Result<StagedImage, PetrelError>>,
  ): Promise<EngineResponse> {
    return withStaged(this.#ctx.host, staging, (staged) =>
      this.#ctx.serial(() =>
        this.#ctx.observe(name, 'unikernel-create', () =>
          this.#create(name, config, { kind: 'staged', staged }, force),
        ),
      ),
    );
  }

  async #create(name: Name, config: KeptConfig, image: ImageInput, force: boolean): Promise<EngineResponse> {
    if (name.label === null) return failure(TEXT.pathUsed);
    if (config.typ !== 'solo5') return failure(unsupportedType(config.typ));
    const vmName = name as VmName;
    const running = this.#ctx.running.get(vmKey(vmName));
    if (running !== undefined && !force) return failure(TEXT.alreadyRunning);
    // A create supersedes a restart that waits for its back-off (Petrel (d)), and a replacement
    // being checked (Petrel (m)).
    this.#ctx.exits.cancelPending(vmKey(vmName));
    const abandoned = this.#ctx.replacements.abandon(vmKey(vmName));
    const response = await this.#createOrReplace(vmName, running, config, image);
    if (abandoned) await this.#ctx.commitLogged([vmName]);
    return response;
  }

  async #createOrReplace(
    name: VmName,
    running: Supervised | undefined,
    config: KeptConfig,
    image: ImageInput,
  ): Promise<EngineResponse> {
    if (running !== undefined) return this.swap(running, config, image);
    const started = await this.start(name, config, image, false);
    return started.ok ? text(TEXT.created) : failure(started.error.message);
  }

  /** unikernel-restart: the running one swapped for itself (with new arguments, if given). */
  async restart(name: Name, args: ReturnType<typeof restartArguments>): Promise<EngineResponse> {
    if (name.label === null) return failure(TEXT.pathUsed);
    const key = printName(name);
    const running = this.#ctx.running.get(key);
    if (running === undefined) {
      // As Albatross: cancelling a pending restart does not rewrite the state file here.
      if (this.#ctx.exits.cancelPending(key) !== null) return text(TEXT.removedFromRestarting);
      return failure(TEXT.destroyNotFound);
    }
    const old = running.vm.config;
    const config: KeptConfig = args === null ? old : { ...old, ...args };
    return this.swap(running, config, readAgain(running.vm.image));
  }

  async destroy(name: Name): Promise<EngineResponse> {
    const key = printName(name);
    // Its commit below (or the one here) also clears the replacement from the state.
    if (this.#ctx.replacements.abandon(key) && name.label !== null)
      await this.#ctx.commitLogged([name as VmName]);
    const running = this.#ctx.running.get(key);
    if (running !== undefined) {
      await this.stop(running);
      publishStep(key, 'stopped');
      await this.#ctx.commitLogged([running.vm.name]);
      publishStep(key, 'state-written');
      return text(TEXT.destroyed);
    }
    const cancelled = this.#ctx.exits.cancelPending(key);
    if (cancelled !== null) {
      await this.#ctx.commitLogged([cancelled]);
      return text(TEXT.removedFromRestarting);
    }
    return failure(TEXT.destroyNotFound);
  }

  /**
   * Force-create and restart (Petrel (b)): admission with the old unikernel's resources freed
   * and every check of the new configuration first; then stop the old one and start the new; if
   * that fails, start the old configuration again and say so.
   */
  async swap(old: Supervised, config: KeptConfig, image: ImageInput): Promise<EngineResponse> {
    const { name } = old.vm;
    const without = T.releaseUnikernel(this.#ctx.tree(), name);
    if (!without.ok) return failure(without.error.message);
    const allocation = allocationOf(config);
    if (!allocation.ok) return failure(allocation.error.message);
    const admitted = T.admitUnikernel(without.value, name, allocation.value);
    if (!admitted.ok) return failure(admitted.error.message);
    const prepared = await prepare(this.#ctx.host, name, config, image, this.#ctx.runtimes());
    if (!prepared.ok) return failure(prepared.error.message);
    publishStep(vmKey(name), 'validated');

    publishStep(vmKey(name), 'old-stopping');
    await this.stop(old);
    publishStep(vmKey(name), 'old-released');
    const started = await this.#launchPrepared(prepared.value, false);
    if (started.ok) return text(TEXT.created);

    const first = started.error.message;
    this.#ctx.log.warn(
      { name: printName(name), reason: first },
      'replacement failed to start; starting the previous unikernel',
    );
    const again = await this.start(name, old.vm.config, readAgain(old.vm.image), false);
    if (again.ok) return failure(`${first}; the previous unikernel was started again`);
    await this.#ctx.commitLogged([name]);
    return failure(`${first}; starting the previous unikernel failed too: ${again.error.message}`);
  }

  async start(
    name: VmName,
    config: KeptConfig,
    image: ImageInput,
    transient: boolean,
    persist = true,
  ): Promise<Result<Supervised, PetrelError>> {
    const allocation = allocationOf(config);
    if (!allocation.ok) return allocation;
    const admitted = T.admitUnikernel(this.#ctx.tree(), name, allocation.value);
    if (!admitted.ok) return admitted;
    publishStep(vmKey(name), 'planned');
    const prepared = await prepare(this.#ctx.host, name, config, image, this.#ctx.runtimes());
    if (!prepared.ok) return prepared;
    publishStep(vmKey(name), 'validated');
    return this.#launchPrepared(prepared.value, transient, persist);
  }

  async #launchPrepared(
    prepared: Prepared,
    transient: boolean,
    persist = true,
  ): Promise<Result<Supervised, PetrelError>> {
    const ctx = this.#ctx;
    const { name } = prepared;
    // Admission again against the tree as it is now (a force-create has just released the old one).
    const admitted = T.admitUnikernel(ctx.tree(), name, prepared.allocation);
    if (!admitted.ok) return admitted;
    ctx.users.hold(prepared.image.digest);
    const launched = await launch(
      {
        host: ctx.host,
        hub: ctx.hub,
        consoleLimit: this.consoleLimit(name.path),
        stopTimeoutMs: ctx.stopTimeoutMs,
        transient,
      },
      prepared,
    );
    if (!launched.ok) {
      ctx.users.drop(prepared.image.digest);
      const { error, leftovers } = launched.error;
      for (const leftover of leftovers)
        ctx.log.error({ name: printName(name), problem: leftover.message }, 'undo failed');
      ctx.log.warn(
        { name: printName(name), reason: error.message, cause: error.details?.cause },
        'launch failed',
      );
      return { ok: false, error };
    }
    const before = ctx.tree();
    ctx.setTree(admitted.value);
    const supervised = ctx.exits.supervise(launched.value.vm);
    // A new unikernel of a dropped one's name: the old one's exit is no longer its story.
    if (!transient) ctx.exits.forgetDropped(vmKey(name));
    publishStep(vmKey(name), 'committed');
    if (persist && !transient) {
      const saved = await ctx.commit([name]);
      if (!saved.ok) {
        supervised.vm.state = 'stopping';
        ctx.running.untrack(supervised);
        ctx.setTree(before);
        await launched.value.undo.rollback();
        ctx.users.drop(prepared.image.digest);
        supervised.released({ code: null, signal: null, sentSignal: 'SIGTERM' });
        return err('E_STATE_WRITE', `could not create unikernel: ${saved.error.message}`);
      }
    }
    await launched.value.undo.commit();
    if (persist && !transient) publishStep(vmKey(name), 'state-written');
    ctx.log.info(
      {
        name: printName(name),
        tenderPid: supervised.vm.tender.pid,
        taps: supervised.vm.nets.map((n) => n.tap),
      },
      'unikernel started',
    );
    return ok(supervised);
  }

  consoleLimit(path: Path): number {
    if (path.length === 0) return Number.MAX_SAFE_INTEGER;
    const policy = T.findPolicy(this.#ctx.tree(), path);
    if (policy === undefined) return 0;
    return Number(
      policy.vms > BigInt(Number.MAX_SAFE_INTEGER) ? BigInt(Number.MAX_SAFE_INTEGER) : policy.vms,
    );
  }

  async stop(supervised: Supervised): Promise<TenderExit> {
    supervised.vm.state = 'stopping';
    const exit = await supervised.vm.tender.stop(this.#ctx.stopTimeoutMs);
    await this.release(supervised, exit);
    supervised.vm.tender.forget();
    return exit;
  }

  async release(supervised: Supervised, exit: TenderExit): Promise<void> {
    const { vm } = supervised;
    const problems = await releaseHost(this.#ctx.host, this.#ctx.hub, vm);
    for (const problem of problems)
      this.#ctx.log.error({ name: printName(vm.name), problem: problem.message }, 'release failed');
    const released = T.releaseUnikernel(this.#ctx.tree(), vm.name);
    if (released.ok) this.#ctx.setTree(released.value);
    this.#ctx.running.untrack(supervised);
    this.#ctx.users.drop(vm.image.digest);
    vm.state = 'released';
    supervised.releasedAt = this.#ctx.now();
    supervised.released(exit);
  }

  /** Engine.startTransient: the boot canary, through the same transaction as create. */
  startTransient(name: VmName, config: UnikernelConfig, file?: string): Promise<Result<void, PetrelError>> {
    const { image, ...kept } = config;
    const startIn = (input: ImageInput) =>
      this.#ctx.serial(async (): Promise<Result<void, PetrelError>> => {
        if (this.#ctx.running.has(vmKey(name))) return err('E_NAME_TAKEN', TEXT.alreadyRunning);
        const started = await this.start(name, kept, input, true);
        return started.ok ? ok(undefined) : started;
      });
    if (file !== undefined && !config.compressed) {
      // Run from its installed file: nothing is written to the state directory.
      const ref = { digest: createHash('sha256').update(image).digest('hex'), size: image.length };
      return startIn({ kind: 'file', file, image: ref });
    }
    const staging = this.#ctx.host.stageImage([image], config.compressed);
    return withStaged(this.#ctx.host, staging, (staged) => startIn({ kind: 'staged', staged }));
  }

  /** Engine.stopTransient: stops the unikernel and waits for its release, writing no state. */
  stopTransient(name: VmName): Promise<TenderExit | null> {
    return this.#ctx.serial(async () => {
      const running = this.#ctx.running.get(vmKey(name));
      return running === undefined ? null : this.stop(running);
    });
  }
}

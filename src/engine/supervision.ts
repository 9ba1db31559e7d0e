// Exits and restart on failure (semantics §5.7, Petrel (d), (l)): each tender's exit handled in
// the queue, restarts waiting for their back-off, and the last exit of what was dropped.

import type { ImageRef } from '../host/images.js';
import { type Name, printName } from '../resources/name.js';
import type { TenderExit } from '../tender/process.js';
import type { KeptConfig, UnikernelRecord } from '../wire/petrel-state.js';
import type { Named, UnikernelExit } from '../wire/types.js';
import type { AfterExit, EngineContext, ExitSteps } from './context.js';
import { publishRestart } from './events.js';
import { DroppedExits, type ExitRecord, exitEntry, seenFrom } from './exits.js';
import { describeExit, type RunningVm, vmKey } from './launch.js';
import { readAgain } from './prepare.js';
import { type EngineResponse, reply } from './replies.js';
import { decideRestart, NO_HISTORY, type RestartHistory, restartsWithin } from './restart.js';
import { Supervised } from './running.js';
import type { VmName } from './types.js';

export type SupervisionContext = Pick<
  EngineContext,
  | 'host'
  | 'hub'
  | 'log'
  | 'now'
  | 'restart'
  | 'shuttingDown'
  | 'running'
  | 'users'
  | 'serial'
  | 'commitLogged'
  | 'unikernels'
  | 'replacements'
>;

interface PendingRestart {
  readonly name: VmName;
  readonly config: KeptConfig;
  readonly image: ImageRef;
  readonly timer: NodeJS.Timeout;
  /** When the timer fires (ms). */
  readonly restartAt: number;
  readonly history: RestartHistory;
}

/**
 * Watches every running tender and decides what follows its exit. An exit is handled in a task
 * the engine queues, as is a restart whose back-off is over; nothing here runs outside the queue
 * but those two callbacks, which only queue.
 */
export class Supervision implements ExitSteps {
  readonly #ctx: SupervisionContext;
  readonly #pending = new Map<string, PendingRestart>();
  /** The last exit of recently dropped unikernels (unikernel-exits, Petrel (l)). */
  readonly #dropped = new DroppedExits();

  constructor(ctx: SupervisionContext) {
    this.#ctx = ctx;
  }

  supervise(vm: RunningVm, history: RestartHistory = NO_HISTORY): Supervised {
    const supervised = new Supervised(vm, history);
    this.#ctx.running.track(supervised);
    void vm.tender.shutdown.then((exit) => {
      // The time of the exit, not of its turn in the queue.
      const at = this.#ctx.now();
      if (vm.state === 'running') void this.#ctx.serial(() => this.#exited(supervised, exit, at));
    });
    return supervised;
  }

  /** The last line petrel-jail wrote on the unikernel's console (why its jail failed), if any. */
  #jailFailure(name: VmName): string | null {
    const lines = this.#ctx.hub.ring(name)?.last(8) ?? [];
    for (let i = lines.length - 1; i >= 0; i--) {
      const text = Buffer.from((lines[i] as (typeof lines)[number]).line).toString('utf8');
      if (text.startsWith('petrel-jail: ')) return text.slice(0, 512);
    }
    return null;
  }

  /** A tender exited on its own: release it, then restart it or let it go (§5.7, Petrel (d)). */
  async #exited(supervised: Supervised, exit: TenderExit, at: number): Promise<void> {
    const ctx = this.#ctx;
    const { vm } = supervised;
    if (vm.state !== 'running') return;
    vm.state = 'stopping';
    // A limit of its jail that ended it is named in every line about this exit.
    const limit = vm.jail === null ? null : await ctx.host.jailLimitHit(vm.jail, exit);
    await ctx.unikernels.release(supervised, exit);
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
    if (!vm.transient) ctx.replacements.newOneExited(vmKey(vm.name), fields.exit);
    if (ctx.shuttingDown() || vm.transient) {
      ctx.log.info(fields, 'unikernel exited');
      vm.tender.forget();
      return;
    }
    if (exit.holderLost) {
      // Not the guest's doing: the holder died and its tenders with it (Petrel (k)). Restored
      // from the state, as the next start would, under a new holder.
      ctx.log.warn(fields, 'the holder ended and its tender with it; starting the unikernel again');
      const again = await ctx.unikernels.start(vm.name, vm.config, readAgain(vm.image), false, false);
      if (again.ok) again.value.history = { ...supervised.history, lastExit: record };
      else {
        ctx.log.warn({ ...fields, reason: again.error.message }, 'restore failed; unikernel dropped');
        this.#drop(vm.name, record, supervised.history, `restore failed: ${again.error.message}`);
        await ctx.commitLogged([vm.name]);
      }
      return;
    }
    await this.afterExit(vm, exit, {
      ranForMs: ctx.now() - vm.tender.startedAt.getTime(),
      history: supervised.history,
      fields,
      record,
    });
    vm.tender.forget();
  }

  async afterExit(
    { name, config, image }: { name: VmName; config: KeptConfig; image: ImageRef },
    exit: TenderExit,
    context: AfterExit,
  ): Promise<void> {
    const ctx = this.#ctx;
    const { fields, record } = context;
    const decision = decideRestart({
      exit,
      failBehaviour: config.failBehaviour,
      addName: config.addName,
      ranForMs: context.ranForMs,
      now: ctx.now(),
      history: context.history,
      options: ctx.restart,
    });
    switch (decision.kind) {
      case 'drop':
        ctx.log.info({ ...fields, reason: decision.reason }, 'unikernel exited');
        this.#drop(name, record, context.history, decision.reason);
        await ctx.commitLogged([name]);
        return;
      case 'retry-without-name': {
        ctx.log.info(fields, 'unikernel exited 64 with --name; starting it again without --name');
        const again = await ctx.unikernels.start(
          name,
          { ...config, addName: false },
          readAgain(image),
          false,
        );
        if (again.ok) again.value.history = { ...again.value.history, lastExit: record };
        else {
          ctx.log.warn({ ...fields, reason: again.error.message }, 'start without --name failed');
          this.#drop(name, record, context.history, `start without --name failed: ${again.error.message}`);
          await ctx.commitLogged([name]);
        }
        return;
      }
      case 'restart': {
        const key = vmKey(name);
        // An exit while no petreld was attached: the back-off counts from the exit.
        const delayMs = Math.max(0, decision.delayMs - (context.elapsedMs ?? 0));
        ctx.log.info({ ...fields, delayMs }, 'unikernel exited; restart scheduled');
        publishRestart({ name: key, delayMs });
        const timer = setTimeout(() => {
          void ctx.serial(() => this.#restartPending(key));
        }, delayMs);
        timer.unref();
        // The image stays in the store while the restart waits.
        ctx.users.hold(image.digest);
        this.#pending.set(key, {
          name,
          config,
          image,
          timer,
          restartAt: ctx.now() + delayMs,
          history: { ...decision.history, lastExit: record },
        });
        return;
      }
    }
  }

  async #restartPending(key: string): Promise<void> {
    const ctx = this.#ctx;
    const pending = this.#pending.get(key);
    if (pending === undefined || ctx.shuttingDown()) return;
    this.#pending.delete(key);
    ctx.users.drop(pending.image.digest);
    // A successful restart does not rewrite the state (Albatross #249): its record is unchanged.
    const started = await ctx.unikernels.start(
      pending.name,
      pending.config,
      readAgain(pending.image),
      false,
      false,
    );
    if (started.ok) {
      started.value.history = pending.history;
      return;
    }
    ctx.log.warn({ name: key, reason: started.error.message }, 'restart failed; unikernel dropped');
    const { lastExit } = pending.history;
    if (lastExit !== undefined)
      this.#drop(pending.name, lastExit, pending.history, `restart failed: ${started.error.message}`);
    await ctx.commitLogged([pending.name]);
  }

  /** Remembers the last exit of a unikernel that is not restarted (unikernel-exits, Petrel (l)). */
  #drop(name: VmName, record: ExitRecord, history: RestartHistory, reason: string): void {
    const restarts = restartsWithin(history, this.#ctx.now(), this.#ctx.restart);
    this.#dropped.add({ name, record, reason, restarts });
  }

  cancelPending(key: string): VmName | null {
    const pending = this.#pending.get(key);
    if (pending === undefined) return null;
    clearTimeout(pending.timer);
    this.#pending.delete(key);
    this.#ctx.users.drop(pending.image.digest);
    return pending.name;
  }

  forgetDropped(key: string): void {
    this.#dropped.forget(key);
  }

  /** What the state must say of a unikernel waiting for its restart, if one waits. */
  pendingOf(key: string): UnikernelRecord | undefined {
    return this.#pending.get(key);
  }

  /** Every unikernel waiting for its restart, as the state holds it. */
  pendingRecords(): UnikernelRecord[] {
    return [...this.#pending.values()].map(({ name, config, image }) => ({ name, config, image }));
  }

  /** Shutdown: no restart fires any more; the waiting ones stay in the state for the next start. */
  stopTimers(): void {
    for (const pending of this.#pending.values()) clearTimeout(pending.timer);
  }

  /**
   * unikernel-exits (Petrel (l)): the last exit of each unikernel at or below the name that has
   * one: running again after a restart on failure, waiting for its restart, or dropped (kept
   * for the last KEPT_DROPS names dropped). Sorted by name.
   */
  exits(name: Name): EngineResponse {
    const ctx = this.#ctx;
    const now = ctx.now();
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
    for (const run of ctx.running.values()) {
      if (run.vm.transient) continue;
      const { history } = run;
      add(run.vm.name, history.lastExit, restartsWithin(history, now, ctx.restart), { kind: 'restarted' });
    }
    for (const pending of this.#pending.values()) {
      const { history } = pending;
      add(pending.name, history.lastExit, restartsWithin(history, now, ctx.restart), {
        kind: 'restarting',
        restartAt: new Date(pending.restartAt),
      });
    }
    for (const dropped of this.#dropped.values())
      add(dropped.name, dropped.record, dropped.restarts, { kind: 'dropped', reason: dropped.reason });
    found.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    return reply({ type: 'unikernel-exits', entries: found.map((f) => f.entry) });
  }
}

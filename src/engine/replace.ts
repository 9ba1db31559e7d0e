// Replace with a liveness check (Petrel (m)): the pending replacement committed and the new image
// force-created in the queue, its check run outside it, then kept or rolled back in the queue.

import type { StagedImage } from '../host/images.js';
import type { PetrelError, Result } from '../resources/errors.js';
import { describeProbe, validCheck } from '../resources/liveness.js';
import type { Name } from '../resources/name.js';
import type { KeptConfig, PendingReplacement } from '../wire/petrel-state.js';
import type { ReplaceCheck } from '../wire/types.js';
import type { EngineContext, ReplacementSteps } from './context.js';
import { publishStep } from './events.js';
import { vmKey } from './launch.js';
import { type CheckOutcome, runCheck } from './liveness.js';
import { type ImageInput, readAgain, withStaged } from './prepare.js';
import { type EngineResponse, failure, TEXT, text, unsupportedType } from './replies.js';
import type { VmName } from './types.js';

export type ReplaceContext = Pick<
  EngineContext,
  | 'host'
  | 'hub'
  | 'log'
  | 'shuttingDown'
  | 'running'
  | 'serial'
  | 'observe'
  | 'commit'
  | 'commitLogged'
  | 'unikernels'
  | 'exits'
>;

/** A replace whose check runs (Petrel (m)); `record` is what the state says of it. */
interface Replacing {
  record: PendingReplacement;
  /** Ends the check early: the replacement was given up, or the new unikernel exited. */
  readonly abort: AbortController;
  /** How the new unikernel exited during the check (`exit 3`), if it did. */
  exited: string | null;
}

interface Begun {
  readonly entry: Replacing;
  readonly name: VmName;
  readonly startedAt: number;
}

/**
 * The replacements being checked, by name. run() is the one way in from outside the queue: it
 * queues the beginning and the end of a replacement and waits for the check between them; the
 * rest is called from tasks of the queue.
 */
export class Replacements implements ReplacementSteps {
  readonly #ctx: ReplaceContext;
  readonly #replacing = new Map<string, Replacing>();

  constructor(ctx: ReplaceContext) {
    this.#ctx = ctx;
  }

  /**
   * Replace (Petrel (m)): in the queue, the pending replacement is committed and the new image
   * force-created; the check runs outside the queue; back in it, a pass is committed and the
   * record cleared, a failure brings back the previous unikernel. A destroy or create of the
   * name meanwhile gives the replacement up (abandon).
   */
  async run(
    name: Name,
    config: KeptConfig,
    check: ReplaceCheck,
    staging: Promise<Result<StagedImage, PetrelError>>,
  ): Promise<EngineResponse> {
    let begun: Begun | null = null;
    const first = await withStaged(this.#ctx.host, staging, (staged) =>
      this.#ctx.serial(() =>
        this.#ctx.observe(name, 'unikernel-create', async () => {
          const started = await this.#begin(name, config, check, { kind: 'staged', staged });
          if (!('entry' in started)) return started;
          begun = started;
          return text('replacement started');
        }),
      ),
    );
    if (begun === null) return first;
    const { entry, name: vmName, startedAt } = begun as Begun;
    const outcome = await runCheck(check, {
      hub: this.#ctx.hub,
      name: vmName,
      startedAt,
      signal: entry.abort.signal,
    });
    return this.#ctx.serial(() => this.#finish(vmName, entry, check, outcome));
  }

  async #begin(
    name: Name,
    config: KeptConfig,
    check: ReplaceCheck,
    image: ImageInput,
  ): Promise<EngineResponse | Begun> {
    const ctx = this.#ctx;
    if (name.label === null) return failure(TEXT.pathUsed);
    if (config.typ !== 'solo5') return failure(unsupportedType(config.typ));
    const valid = validCheck(check);
    if (!valid.ok) return failure(valid.error.message);
    const vmName = name as VmName;
    const key = vmKey(vmName);
    const running = ctx.running.get(key);
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
    const saved = await ctx.commit([vmName]);
    if (!saved.ok) {
      this.#replacing.delete(key);
      return failure(`replace: could not write the state: ${saved.error.message}`);
    }
    const replaced = await ctx.unikernels.swap(running, wanted, image);
    const now = ctx.running.get(key);
    if (replaced.kind === 'failure' || now === undefined) {
      this.#replacing.delete(key);
      await ctx.commitLogged([vmName]);
      return failure(
        `replace: ${replaced.kind === 'failure' ? replaced.message : 'the new unikernel stopped'}`,
      );
    }
    ctx.log.info(
      { name: key, check: describeProbe(check.probe), withinMs: check.withinMs },
      'replacement started; checking it',
    );
    publishStep(key, 'replace-checking');
    // Lines read once the old one's console was released are the new one's: its tender's own
    // start time is taken when the spawn is answered, after its first lines may have been read.
    return { entry, name: vmName, startedAt: running.releasedAt ?? now.vm.tender.startedAt.getTime() };
  }

  async #finish(
    name: VmName,
    entry: Replacing,
    check: ReplaceCheck,
    outcome: CheckOutcome,
  ): Promise<EngineResponse> {
    const ctx = this.#ctx;
    const key = vmKey(name);
    const what = describeProbe(check.probe);
    if (this.#replacing.get(key) !== entry) {
      ctx.log.info({ name: key }, 'replacement given up: the name was destroyed or created meanwhile');
      return failure(
        `replace: ${key} was destroyed or created again during the check; the replacement was given up`,
      );
    }
    if (ctx.shuttingDown())
      return failure('replace: petreld is stopping; the next start brings the previous unikernel back');
    if (outcome.passed) {
      // "Passed" reaches the disk before the record goes: a crash in between keeps the new one.
      entry.record = { ...entry.record, passed: true };
      await ctx.commitLogged([name]);
      publishStep(key, 'replace-passed');
      this.#replacing.delete(key);
      await ctx.commitLogged([name]);
      ctx.log.info({ name: key, check: what, detail: outcome.detail }, 'replacement passed its check; kept');
      return text(`replaced unikernel ${key}: ${what} passed (${outcome.detail})`);
    }
    const { previous } = entry.record;
    // Cleared in memory first, so the commit that brings the previous one back also clears it.
    this.#replacing.delete(key);
    const running = ctx.running.get(key);
    let back: EngineResponse;
    if (running !== undefined)
      back = await ctx.unikernels.swap(running, previous.config, readAgain(previous.image));
    else {
      ctx.exits.cancelPending(key);
      const started = await ctx.unikernels.start(name, previous.config, readAgain(previous.image), false);
      back = started.ok ? text(TEXT.created) : failure(started.error.message);
    }
    await ctx.commitLogged([name]);
    const reason =
      entry.exited === null ? outcome.reason : `the new unikernel exited (${entry.exited}) before it passed`;
    const why = `replace: ${key} failed its check (${what}): ${reason}`;
    ctx.log.warn(
      { name: key, check: what, reason, rolledBack: back.kind !== 'failure' },
      'replacement failed its check; rolled back',
    );
    if (back.kind === 'failure')
      return failure(`${why}; bringing back the previous unikernel failed: ${back.message}`);
    return failure(
      `${why}; the previous unikernel runs again (image ${previous.image.digest.slice(0, 12)}…)`,
    );
  }

  abandon(key: string): boolean {
    const entry = this.#replacing.get(key);
    if (entry === undefined) return false;
    this.#replacing.delete(key);
    entry.abort.abort();
    this.#ctx.log.info({ name: key }, 'replacement given up: its name was destroyed or created again');
    return true;
  }

  newOneExited(key: string, how: string): void {
    const replacing = this.#replacing.get(key);
    if (replacing !== undefined && replacing.exited === null) {
      replacing.exited = how;
      replacing.abort.abort();
    }
  }

  /** What the state must say of the replacement of this name: its record, or none. */
  recordOf(key: string): PendingReplacement | undefined {
    return this.#replacing.get(key)?.record;
  }

  /** Every replacement being checked, as the state holds it. */
  records(): PendingReplacement[] {
    return [...this.#replacing.values()].map((r) => r.record);
  }
}

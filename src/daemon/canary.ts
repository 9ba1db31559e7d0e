// The boot canary (the start-up gate of docs/architecture.md): at every start petreld boots its
// canary unikernel through the engine's own create → console → destroy path, under a reserved
// root-level name that is never persisted, and refuses to start if the canary does not speak
// (a canary that could not be made for want of space in the run directory is told apart).

import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { ConsoleHub, Subscriber } from '../console/hub.js';
import type { ConsoleLine } from '../console/ring.js';
import type { Engine } from '../engine/engine.js';
import type { VmName } from '../engine/prepare.js';
import { err, ok, type PetrelError, type Result, unwrap } from '../resources/errors.js';
import { type Label, parseLabel } from '../resources/name.js';
import { solo5Config } from '../wire/shapes.js';

/** The canary's name: root level, starting with a dot so no ordinary deployment collides. */
export const CANARY_LABEL: Label = unwrap(parseLabel('.petrel-canary'));
export const CANARY_NAME: VmName = Object.freeze({
  path: Object.freeze([]) as readonly Label[],
  label: CANARY_LABEL,
});

export interface CanaryResult {
  /** Create command issued → `petrel-canary <nonce>` line seen, ms. */
  readonly bootMs: number;
  /** Peak resident set of the tender while the canary ran, KiB (VmHWM). */
  readonly tenderPeakRssKiB: number | null;
  readonly at: string;
}

export interface CanaryOptions {
  readonly engine: Engine;
  readonly hub: ConsoleHub;
  /** The canary image (canary.hvt or canary.spt). */
  readonly image: string;
  readonly deadlineMs: number;
  readonly now?: () => number;
}

/** Resolves when a console line equals `expected`; remembers the last line seen otherwise. */
class LineWatcher implements Subscriber {
  last: string | null = null;
  #resolve: () => void = () => undefined;
  readonly seen: Promise<void>;
  constructor(readonly expected: string) {
    this.seen = new Promise((resolve) => {
      this.#resolve = resolve;
    });
  }
  begin(_status: string, history: readonly ConsoleLine[]): boolean {
    for (const entry of history) this.#check(entry);
    return true;
  }
  offer(_name: unknown, entry: ConsoleLine): boolean {
    this.#check(entry);
    return true;
  }
  close(): void {}
  #check(entry: ConsoleLine): void {
    const line = Buffer.from(entry.line).toString('utf8');
    this.last = line;
    if (line.trim() === this.expected) this.#resolve();
  }
}

async function peakRssKiB(pid: number | undefined): Promise<number | null> {
  if (pid === undefined) return null;
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  const match = /^VmHWM:\s+(\d+) kB$/m.exec(status);
  return match ? Number(match[1]) : null;
}

export async function runCanary(
  options: CanaryOptions,
): Promise<Result<CanaryResult, PetrelError<'E_CANARY'>>> {
  const now = options.now ?? Date.now;
  const fail = (reason: string) => err('E_CANARY', `boot canary failed: ${reason}`);
  let image: Buffer;
  try {
    image = await readFile(options.image);
  } catch (cause) {
    return fail(`cannot read the canary image ${options.image}: ${(cause as Error).message}`);
  }
  const nonce = randomBytes(8).toString('hex');
  const config = solo5Config(image, { addName: false, memory: 4, arguments: ['wait', nonce] });
  const watcher = new LineWatcher(`petrel-canary ${nonce}`);
  options.hub.subscribe(CANARY_NAME, watcher, { count: 0 });
  const started = now();
  try {
    // Run from its installed file: a start on a full state directory boots it all the same.
    const created = await options.engine.startTransient(CANARY_NAME, config, options.image);
    if (!created.ok) {
      // No room in the run directory for its FIFO or PID record: said apart (daemon.ts starts
      // anyway, so the guests it adopted stay manageable on a full disk).
      if (created.error.code === 'E_HOST_NOSPACE')
        return err('E_CANARY', `boot canary failed: ${created.error.message}`, {
          noSpace: true,
          ...created.error.details,
        });
      return fail(created.error.message);
    }
    const exited = options.engine.shutdownOf(CANARY_NAME);
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      watcher.seen.then(() => 'seen' as const),
      (exited ?? new Promise<never>(() => undefined)).then(() => 'exited' as const),
      new Promise<'late'>((resolve) => {
        timer = setTimeout(resolve, options.deadlineMs, 'late');
      }),
    ]);
    clearTimeout(timer);
    const bootMs = now() - started;
    const rss = await peakRssKiB(options.engine.pidOf(CANARY_NAME));
    if (outcome === 'exited') {
      return fail(
        `the canary exited before printing its line${watcher.last ? ` (last line: ${watcher.last})` : ''}`,
      );
    }
    if (outcome === 'late') {
      const heard =
        watcher.last === null
          ? 'no console output'
          : `last line ${JSON.stringify(watcher.last)}, not carrying the nonce`;
      return fail(`no "petrel-canary <nonce>" line within ${options.deadlineMs} ms (${heard})`);
    }
    return ok({ bootMs, tenderPeakRssKiB: rss, at: new Date(started).toISOString() });
  } finally {
    options.hub.unsubscribe(CANARY_NAME, watcher);
    await options.engine.stopTransient(CANARY_NAME);
  }
}

// Restart on failure (albatross-semantics.md §5.7 with Petrel (d)): which exits restart, after
// what delay, and when a crash loop is cut off. Pure: the engine supplies the clock and history.

import type { FailBehaviour } from '../wire/types.js';
import type { ExitRecord } from './exits.js';

export interface RestartOptions {
  /** Delay before the first of a run of consecutive restarts (ms). Default 1 s. */
  readonly backoffBaseMs: number;
  /** Ceiling of the delay (ms). Default 60 s. */
  readonly backoffMaxMs: number;
  /** A unikernel that ran this long before exiting starts a fresh run of restarts (ms). Default 60 s. */
  readonly stableAfterMs: number;
  /** At most this many restarts per unikernel within `windowMs`. Default 10. */
  readonly maxCount: number;
  /** Default 600 s. */
  readonly windowMs: number;
}

export const DEFAULT_RESTART: RestartOptions = Object.freeze({
  backoffBaseMs: 1_000,
  backoffMaxMs: 60_000,
  stableAfterMs: 60_000,
  maxCount: 10,
  windowMs: 600_000,
});

/** How a tender ended, as the decision needs it. */
export interface ExitStatus {
  /** Exit code, or null when killed by a signal. */
  readonly code: number | null;
  readonly signal: string | null;
}

/** What the engine remembers between restarts of one name. */
export interface RestartHistory {
  /** Consecutive restarts in the current run (k − 1 for the next one). */
  readonly consecutive: number;
  /** Times (ms) of the restarts inside the rate window. */
  readonly recent: readonly number[];
  /** The exit that ended the run before this one (unikernel-exits, Petrel (l)); absent: none. */
  readonly lastExit?: ExitRecord;
}

/** Restarts on failure inside the rate window at `now`. */
export const restartsWithin = (history: RestartHistory, now: number, options: RestartOptions): number =>
  history.recent.filter((t) => now - t < options.windowMs).length;

export const NO_HISTORY: RestartHistory = Object.freeze({ consecutive: 0, recent: Object.freeze([]) });

export type RestartDecision =
  /** Drop the unikernel: it exits for good (state file written without it). */
  | { readonly kind: 'drop'; readonly reason: string }
  /** Exit 64 with `--name` given: create again at once without `--name`. */
  | { readonly kind: 'retry-without-name' }
  | { readonly kind: 'restart'; readonly delayMs: number; readonly history: RestartHistory };

/** Exit codes that never restart: solo5 errors (1) and help/version/argument errors (60–64). */
const NEVER = new Set([1, 60, 61, 62, 63, 64]);

/** Whether an exit qualifies under the fail-behaviour, rate and back-off aside. */
export function qualifies(exit: ExitStatus, fail: FailBehaviour): boolean {
  if (fail.kind !== 'restart' || exit.code === null) return false;
  if (NEVER.has(exit.code)) return false;
  return fail.exitCodes.length === 0 || fail.exitCodes.includes(exit.code);
}

export interface DecisionInput {
  readonly exit: ExitStatus;
  readonly failBehaviour: FailBehaviour;
  readonly addName: boolean;
  /** How long the tender ran (ms). */
  readonly ranForMs: number;
  readonly now: number;
  readonly history: RestartHistory;
  readonly options: RestartOptions;
}

export function decideRestart(input: DecisionInput): RestartDecision {
  const { exit, options } = input;
  if (input.addName && exit.code === 64) return { kind: 'retry-without-name' };
  if (!qualifies(exit, input.failBehaviour)) {
    const how = exit.code === null ? `signal ${exit.signal}` : `exit code ${exit.code}`;
    return { kind: 'drop', reason: `${how} does not restart` };
  }
  const recent = input.history.recent.filter((t) => input.now - t < options.windowMs);
  if (recent.length >= options.maxCount) {
    return {
      kind: 'drop',
      reason: `restart rate exceeded (${recent.length} restarts within ${options.windowMs / 1000} s)`,
    };
  }
  const consecutive = input.ranForMs >= options.stableAfterMs ? 0 : input.history.consecutive;
  const delayMs = Math.min(options.backoffMaxMs, options.backoffBaseMs * 2 ** consecutive);
  return {
    kind: 'restart',
    delayMs,
    history: { consecutive: consecutive + 1, recent: [...recent, input.now] },
  };
}

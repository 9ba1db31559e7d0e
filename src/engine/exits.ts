// What petreld remembers of unikernel exits for unikernel-exits (differences (l)): a running or
// restarting unikernel's last exit lives in its restart history; a dropped one's here. Pure.

import { type Label, type Name, type Path, printName } from '../resources/name.js';
import type { ExitOutcome, Named, UnikernelExit } from '../wire/types.js';

/** How many dropped names are remembered; past that the oldest drop is forgotten first. */
export const KEPT_DROPS = 256;

/** One exit as petreld saw it. */
export interface ExitRecord {
  /** describeExit's text: `exit 3`, `signal SIGXFSZ`. */
  readonly exit: string;
  /** The jail limit that ended it, null if none did. */
  readonly limit: string | null;
  /** ms since the epoch. */
  readonly at: number;
}

export interface Dropped {
  readonly name: Name & { readonly label: Label };
  readonly record: ExitRecord;
  /** Why it was not restarted (the restart decision's reason, or the failed restart's). */
  readonly reason: string;
  /** Restarts on failure in the rate window when it was dropped. */
  readonly restarts: number;
}

/**
 * The last exit of each recently dropped name, at most `bound` names, oldest first. A name
 * leaves it when a unikernel of that name starts again (its exits are that one's business).
 */
export class DroppedExits {
  readonly #byName = new Map<string, Dropped>();
  readonly #bound: number;

  constructor(bound = KEPT_DROPS) {
    this.#bound = bound;
  }

  add(dropped: Dropped): void {
    const key = printName(dropped.name);
    this.#byName.delete(key);
    this.#byName.set(key, dropped);
    for (const oldest of this.#byName.keys()) {
      if (this.#byName.size <= this.#bound) break;
      this.#byName.delete(oldest);
    }
  }

  forget(key: string): void {
    this.#byName.delete(key);
  }

  get(key: string): Dropped | undefined {
    return this.#byName.get(key);
  }

  get size(): number {
    return this.#byName.size;
  }

  values(): IterableIterator<Dropped> {
    return this.#byName.values();
  }
}

/**
 * How a request's name sees `full`: itself when the request names it, relative to the path
 * when it is a path at or above `full` (as info names its entries), else null.
 */
export function seenFrom(request: Name, full: Name & { readonly label: Label }): Name | null {
  if (request.label !== null) return printName(request) === printName(full) ? request : null;
  const base: Path = request.path;
  if (full.path.length < base.length || base.some((label, i) => full.path[i] !== label)) return null;
  return { path: full.path.slice(base.length), label: full.label };
}

/** A reply entry. */
export function exitEntry(
  name: Name,
  record: ExitRecord,
  restarts: number,
  outcome: ExitOutcome,
): Named<UnikernelExit> {
  return {
    name,
    info: { exit: record.exit, limit: record.limit, at: new Date(record.at), restarts, outcome },
  };
}

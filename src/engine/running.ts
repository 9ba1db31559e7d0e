// The unikernels the engine supervises, by name: each one's tender run, its restart history, and
// the promise whoever stops it waits on, resolved once its tender exited and its artefacts are released.

import { printName } from '../resources/name.js';
import type { TenderExit } from '../tender/process.js';
import type { RunningVm } from './launch.js';
import type { RestartHistory } from './restart.js';

/**
 * A tender run the engine supervises, with the promise its stoppers and exit handler share. One
 * per running unikernel: the promise is made only when someone waits for it (destroy, restart,
 * the canary), not for every unikernel that runs.
 */
export class Supervised {
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

/** The running unikernels by name (vmKey). Changed only in tasks of the engine's queue. */
export class RunningSet {
  readonly #byKey = new Map<string, Supervised>();

  get(key: string): Supervised | undefined {
    return this.#byKey.get(key);
  }

  has(key: string): boolean {
    return this.#byKey.has(key);
  }

  keys(): IterableIterator<string> {
    return this.#byKey.keys();
  }

  values(): IterableIterator<Supervised> {
    return this.#byKey.values();
  }

  /** Adds a running unikernel under its name. */
  track(supervised: Supervised): void {
    this.#byKey.set(printName(supervised.vm.name), supervised);
  }

  /** Removes it, unless another run of its name has taken its place. */
  untrack(supervised: Supervised): void {
    const key = printName(supervised.vm.name);
    if (this.#byKey.get(key) === supervised) this.#byKey.delete(key);
  }
}

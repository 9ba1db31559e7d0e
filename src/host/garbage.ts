// Bulk transfers (an image arriving, or leaving by `get`) make garbage faster than V8 collects it
// on its own: their buffers live outside the JavaScript heap, and V8 lets tens of MiB of them
// pile up before a collection, so a 50 MB image raised petreld's RSS by 15-40 MiB. Every few MiB
// moved, a collection frees the buffers already passed on, so a transfer costs a few MiB of
// memory whatever its size. A full collection: measured on a 50 MB streamed create, a
// young-generation one left more behind (buffers that lived through one collection while they
// waited for a socket or a disk are old by then). It costs a few milliseconds per COLLECT_EVERY.
// And once petreld goes quiet after work, one collection gives back the young generation the
// work grew (QuietCollector). After each of these collections, malloc's free pages go back to
// the kernel too (allocator.ts): the buffers a collection frees were malloc's, and glibc keeps
// freed memory inside its heap for reuse.

import v8 from 'node:v8';
import vm from 'node:vm';
import { trimAllocator } from './allocator.js';

/** Bytes moved between two collections. */
export const COLLECT_EVERY = 2 * 1024 * 1024;

type Collect = (options: { type: 'major' }) => void;
let collect: Collect | null = null;

/** A full collection, then what it freed goes back to the kernel (also for tests' baselines). */
export function collectAndRelease(): void {
  collector()({ type: 'major' });
  trimAllocator();
}

function collector(): Collect {
  if (collect === null) {
    // `gc` exists only with --expose-gc; setting the flag now and taking the function from a
    // fresh context gives it without a command-line flag (the function, not the global).
    if (typeof (globalThis as { gc?: unknown }).gc === 'function') {
      collect = (globalThis as unknown as { gc: Collect }).gc;
    } else {
      v8.setFlagsFromString('--expose-gc');
      collect = vm.runInNewContext('gc') as Collect;
    }
  }
  return collect;
}

/**
 * The collections of one transfer. Buffers that arrive one after another (socket chunks, pieces
 * an inflater makes, chunks read from a file) are garbage as soon as they are passed on: every
 * COLLECT_EVERY of them, a collection frees them. An image that came whole in its frame is
 * garbage only once the command lets go of the frame: collecting while it is still referenced
 * frees nothing (and each full collection costs more as petreld holds more unikernels), so that
 * transfer counts nothing as it goes and ends with one collection soon after.
 */
export class TransferCollector {
  readonly #collect: () => void;
  #since = 0;

  constructor(collect: () => void = collectAndRelease) {
    this.#collect = collect;
  }

  /** `bytes` more arrived in buffers of their own and were passed on. */
  moved(bytes: number): void {
    this.#since += bytes;
    if (this.#since < COLLECT_EVERY) return;
    this.#since = 0;
    this.#collect();
  }

  /**
   * The transfer is over; `held` is the size of the buffer it came in whole, if it did. When that
   * is COLLECT_EVERY or more, one collection runs once the current callbacks have returned, by
   * which time the caller has let go of it.
   */
  finished(held = 0): void {
    if (held < COLLECT_EVERY) return;
    setImmediate(this.#collect);
  }
}

/** How long petreld must have been without work before it collects once (ms). */
export const QUIET_MS = 10_000;

/**
 * One full collection once petreld has been quiet for `quietMs` after work. Sustained allocation
 * (a burst of creates, many sessions) grows V8's young generation up to 2 × 16 MiB, and V8 gives
 * it back only in a collection made while little is allocated. Its memory reducer, which would
 * make one, is re-armed only when the old generation has grown by 10 MB or more: a petreld that
 * keeps little per unikernel never gets there, and measured with 1,000 running unikernels the
 * 32 MiB stayed resident for good. A collection after the burst costs a few milliseconds, once.
 * One timer for the whole daemon, moved on by each piece of work.
 */
export class QuietCollector {
  readonly #quietMs: number;
  readonly #collect: () => void;
  #timer: NodeJS.Timeout | null = null;

  constructor(quietMs = QUIET_MS, collect: () => void = collectAndRelease) {
    this.#quietMs = quietMs;
    this.#collect = collect;
  }

  /** Work was done: the collection waits until `quietMs` after the last of it. */
  worked(): void {
    if (this.#timer !== null) {
      this.#timer.refresh();
      return;
    }
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#collect();
    }, this.#quietMs);
    this.#timer.unref();
  }

  /** No collection is pending any more (the daemon stops). */
  close(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
  }
}

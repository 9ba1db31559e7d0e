// Bulk transfers (an image arriving, or leaving by `get`) make garbage faster than V8 collects it
// on its own: their buffers live outside the JavaScript heap, and V8 lets tens of MiB of them
// pile up before a collection, so a 50 MB image raised petreld's RSS by 15-40 MiB. Every few MiB
// moved, a collection frees the buffers already passed on, so a transfer costs a few MiB of
// memory whatever its size. A full collection: measured on a 50 MB streamed create, a
// young-generation one left more behind (buffers that lived through one collection while they
// waited for a socket or a disk are old by then). It costs a few milliseconds per COLLECT_EVERY.

import v8 from 'node:v8';
import vm from 'node:vm';

/** Bytes moved between two collections. */
export const COLLECT_EVERY = 2 * 1024 * 1024;

type Collect = (options: { type: 'major' }) => void;
let collect: Collect | null = null;

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

/** Counts the bytes of one transfer and collects garbage every COLLECT_EVERY of them. */
export class TransferCollector {
  #since = 0;
  moved(bytes: number): void {
    this.#since += bytes;
    if (this.#since < COLLECT_EVERY) return;
    this.#since = 0;
    collector()({ type: 'major' });
  }
}

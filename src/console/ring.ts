// The console history of one unikernel: a ring of the last RING_SIZE (timestamp, line) entries
// (semantics §11.2), with history by count (clamped, Petrel (c)) or since a time.

export const RING_SIZE = 1024;

export interface ConsoleLine {
  /** Milliseconds since the epoch (UTC), the time of the read that produced the line. */
  readonly timestamp: number;
  /** Raw bytes: console output need not be UTF-8. */
  readonly line: Uint8Array;
}

export class Ring {
  readonly #slots: (ConsoleLine | undefined)[];
  #next = 0;
  #count = 0;

  constructor(readonly capacity: number = RING_SIZE) {
    this.#slots = new Array(capacity);
  }

  get size(): number {
    return this.#count;
  }

  push(entry: ConsoleLine): void {
    this.#slots[this.#next] = entry;
    this.#next = (this.#next + 1) % this.capacity;
    this.#count = Math.min(this.#count + 1, this.capacity);
  }

  /** The last `count` lines, oldest first; `count` is clamped to 0…capacity. */
  last(count: number): ConsoleLine[] {
    const n = Math.max(0, Math.min(Math.trunc(Number.isFinite(count) ? count : 0), this.#count));
    const out: ConsoleLine[] = [];
    for (let i = n; i >= 1; i--) out.push(this.#at(i));
    return out;
  }

  /**
   * Lines with timestamp ≥ `since`, oldest first: scans backwards from the newest and stops at
   * the first older line, an unused slot, or after one turn of the ring.
   */
  since(since: number): ConsoleLine[] {
    const out: ConsoleLine[] = [];
    for (let i = 1; i <= this.#count; i++) {
      const entry = this.#at(i);
      if (entry.timestamp < since) break;
      out.push(entry);
    }
    return out.reverse();
  }

  /** The i-th newest entry, 1-based; i ≤ size. */
  #at(i: number): ConsoleLine {
    return this.#slots[(this.#next - i + this.capacity * 2) % this.capacity] as ConsoleLine;
  }
}

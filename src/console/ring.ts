// The console history of one unikernel: a ring of the last RING_SIZE (timestamp, line) entries
// (semantics §11.2), with history by count (clamped, Petrel (c)) or since a time.
//
// Its memory follows what the unikernel printed, not the worst case: storage starts empty and
// grows with the lines (most unikernels print a few dozen), wrapping only once RING_SIZE are
// held; a ring of 1024 slots allocated up front cost 8 KiB per unikernel before its first line.
// A line is kept as a one-byte string of its bytes (latin1 maps each byte to one character and
// back, exactly): its length and a 16-byte header on the V8 heap, where a Buffer also costs
// its view, an ArrayBuffer and a backing store — and a small Buffer is a slice of an 8 KiB
// pool slab, which one kept line holds entirely. Timestamps are kept unboxed in an array of
// doubles. History, which is asked for rarely, turns lines back into bytes.

export const RING_SIZE = 1024;

export interface ConsoleLine {
  /** Milliseconds since the epoch (UTC), the time of the read that produced the line. */
  readonly timestamp: number;
  /** Raw bytes: console output need not be UTF-8. */
  readonly line: Uint8Array;
}

export class Ring {
  /** In arrival order until the ring is full; then `#oldest` is where the next line goes. */
  readonly #lines: string[] = [];
  readonly #times: number[] = [];
  #oldest = 0;

  constructor(readonly capacity: number = RING_SIZE) {}

  get size(): number {
    return this.#lines.length;
  }

  push(entry: ConsoleLine): void {
    this.pushLine(entry.line, entry.timestamp);
  }

  /** `push` without an entry object (the hub records a whole read at once). */
  pushLine(line: Uint8Array, timestamp: number): void {
    const text = Buffer.from(line.buffer, line.byteOffset, line.byteLength).toString('latin1');
    if (this.#lines.length < this.capacity) {
      this.#lines.push(text);
      this.#times.push(timestamp);
      return;
    }
    this.#lines[this.#oldest] = text;
    this.#times[this.#oldest] = timestamp;
    this.#oldest = (this.#oldest + 1) % this.capacity;
  }

  /** The last `count` lines, oldest first; `count` is clamped to 0…capacity. */
  last(count: number): ConsoleLine[] {
    const n = Math.max(0, Math.min(Math.trunc(Number.isFinite(count) ? count : 0), this.size));
    const out: ConsoleLine[] = [];
    for (let i = n; i >= 1; i--) out.push(this.#at(i));
    return out;
  }

  /**
   * Lines with timestamp ≥ `since`, oldest first: scans backwards from the newest and stops at
   * the first older line, or after one turn of the ring.
   */
  since(since: number): ConsoleLine[] {
    const out: ConsoleLine[] = [];
    for (let i = 1; i <= this.size; i++) {
      if ((this.#times[this.#index(i)] as number) < since) break;
      out.push(this.#at(i));
    }
    return out.reverse();
  }

  /** Where the i-th newest entry is, 1-based; i ≤ size. */
  #index(i: number): number {
    const size = this.size;
    return (this.#oldest - i + size) % size;
  }

  /** The i-th newest entry, 1-based; i ≤ size. */
  #at(i: number): ConsoleLine {
    const at = this.#index(i);
    return {
      timestamp: this.#times[at] as number,
      line: Buffer.from(this.#lines[at] as string, 'latin1'),
    };
  }
}

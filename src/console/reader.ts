// Reads one unikernel's console from its holder (semantics §11.1 with Petrel (k)): the holder
// owns the FIFO's read end and sends the bytes with running offsets; this cuts them into lines,
// acknowledges each line boundary it handled, and, where offsets jump (the holder's buffer
// overflowed while no petreld was attached), says in a marker line how many bytes were dropped.

import { LineSplitter } from './lines.js';

export interface ConsoleReader {
  /** Kept for the launch order (console before tender); bytes flow once the source is bound. */
  start(): void;
  /** Resolves once the console ended (the tender exited and every byte was delivered), or on close. */
  readonly done: Promise<void>;
  /** Stops reading for a while (flow control); the tender blocks once the FIFO is full. */
  pause(): void;
  resume(): void;
  /** Stops delivering lines (the launch is undone, or the console is abandoned). */
  close(): void;
}

/** Called with the complete lines of one read and the wall-clock time (ms) of that read. */
export type LineSink = (lines: Buffer[], timestamp: number) => void;

/** Console bytes at a running offset, as src/host/holder.ts delivers them. */
export interface ConsoleBytes {
  readonly offset: number;
  readonly time: number;
  readonly bytes: Buffer;
}

/** Where the bytes come from: a held tender's console (src/host/holder.ts HeldChild). */
export interface ConsoleSource {
  onConsole(listener: (chunk: ConsoleBytes) => void): void;
  pause(): void;
  resume(): void;
  ack(offset: number): void;
  /** Resolves after the last chunk was delivered. */
  readonly exit: Promise<unknown>;
}

/** For a console taken over from an earlier petreld: the holder's oldest byte and what was handled. */
export interface ResumeAt {
  readonly first: number;
  readonly acked: number;
}

export interface HeldConsoleReader extends ConsoleReader {
  /** Connects the tender's console; `resume` when it was handled by an earlier petreld. */
  bind(source: ConsoleSource, resume?: ResumeAt): void;
}

const NEWLINE = 0x0a;

/** The line that stands for bytes the holder had to drop. */
export function droppedMarker(bytes: number): Buffer {
  return Buffer.from(`[petrel: ${bytes} bytes of console output dropped]`);
}

export function heldConsoleReader(sink: LineSink): HeldConsoleReader {
  return new HeldReader(sink);
}

/**
 * One per running unikernel, so its state is fields and its steps are methods: closures made per
 * reader cost a function and a context each for every unikernel. `done` is made only when
 * someone waits for it (at the tender's exit, mostly).
 */
class HeldReader implements HeldConsoleReader {
  readonly #sink: LineSink;
  #source: ConsoleSource | null = null;
  #closed = false;
  #paused = false;
  #finished = false;
  #done: Promise<void> | null = null;
  #finish: (() => void) | null = null;
  #splitter = new LineSplitter();
  /** The next offset due; everything before `handled` was given to the sink or counted. */
  #expected = 0;
  #handled = 0;
  /** Inside a line whose start was lost: bytes are skipped up to its newline. */
  #skipping = false;
  #dropped = 0;

  constructor(sink: LineSink) {
    this.#sink = sink;
  }

  get done(): Promise<void> {
    this.#done ??= this.#finished
      ? Promise.resolve()
      : new Promise<void>((resolve) => {
          this.#finish = resolve;
        });
    return this.#done;
  }

  bind(bound: ConsoleSource, resume?: ResumeAt): void {
    if (this.#source !== null || this.#closed) return;
    this.#source = bound;
    if (resume !== undefined) {
      // The holder's oldest byte may be inside a line: the lines start after its newline.
      this.#expected = resume.first;
      this.#handled = resume.acked;
      if (resume.first > resume.acked) this.#lose(resume.acked, resume.first);
      this.#skipping = resume.first > 0;
    }
    if (this.#paused) bound.pause();
    bound.onConsole((chunk) => this.#chunk(chunk));
    void bound.exit.then(() => this.#ended());
  }

  start(): void {}

  pause(): void {
    this.#paused = true;
    this.#source?.pause();
  }

  resume(): void {
    this.#paused = false;
    this.#source?.resume();
  }

  close(): void {
    this.#closed = true;
    this.#end();
  }

  /** Bytes [from, to) will never become lines: count those not handled before. */
  #lose(from: number, to: number): void {
    this.#dropped += Math.max(0, to - Math.max(from, this.#handled));
    this.#handled = Math.max(this.#handled, to);
  }

  #chunk({ offset, time, bytes }: ConsoleBytes): void {
    if (this.#closed) return;
    let data = bytes;
    let at = offset;
    if (at > this.#expected) {
      this.#lose(this.#expected - this.#splitter.pending, at);
      this.#splitter = new LineSplitter();
      this.#skipping = true;
    } else if (at < this.#expected) {
      data = data.subarray(Math.min(data.length, this.#expected - at));
      at = this.#expected;
    }
    this.#expected = at + data.length;
    if (this.#skipping) {
      const newline = data.indexOf(NEWLINE);
      const skip = newline < 0 ? data.length : newline + 1;
      this.#lose(at, at + skip);
      data = data.subarray(skip);
      this.#skipping = newline < 0;
    }
    const lines = this.#skipping ? [] : this.#splitter.push(data);
    // One marker for everything lost since the last line, just before the next one.
    if (this.#dropped > 0 && lines.length > 0) {
      lines.unshift(droppedMarker(this.#dropped));
      this.#dropped = 0;
    }
    if (lines.length > 0) this.#sink(lines, time);
    this.#handled = Math.max(this.#handled, this.#expected - this.#splitter.pending);
    this.#source?.ack(this.#handled);
  }

  /** The tender exited and every byte was delivered. */
  #ended(): void {
    if (!this.#closed && this.#dropped > 0) this.#sink([droppedMarker(this.#dropped)], Date.now());
    this.#closed = true;
    this.#end();
  }

  #end(): void {
    this.#finished = true;
    this.#finish?.();
  }
}

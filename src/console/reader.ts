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
  let source: ConsoleSource | null = null;
  let closed = false;
  let paused = false;
  let finish: () => void = () => undefined;
  const done = new Promise<void>((resolve) => {
    finish = resolve;
  });
  let splitter = new LineSplitter();
  /** The next offset due; everything before `handled` was given to the sink or counted. */
  let expected = 0;
  let handled = 0;
  /** Inside a line whose start was lost: bytes are skipped up to its newline. */
  let skipping = false;
  let dropped = 0;

  /** Bytes [from, to) will never become lines: count those not handled before. */
  const lose = (from: number, to: number) => {
    dropped += Math.max(0, to - Math.max(from, handled));
    handled = Math.max(handled, to);
  };

  const chunk = ({ offset, time, bytes }: ConsoleBytes) => {
    if (closed) return;
    let data = bytes;
    let at = offset;
    if (at > expected) {
      lose(expected - splitter.pending, at);
      splitter = new LineSplitter();
      skipping = true;
    } else if (at < expected) {
      data = data.subarray(Math.min(data.length, expected - at));
      at = expected;
    }
    expected = at + data.length;
    if (skipping) {
      const newline = data.indexOf(NEWLINE);
      const skip = newline < 0 ? data.length : newline + 1;
      lose(at, at + skip);
      data = data.subarray(skip);
      skipping = newline < 0;
    }
    const lines = skipping ? [] : splitter.push(data);
    // One marker for everything lost since the last line, just before the next one.
    if (dropped > 0 && lines.length > 0) {
      lines.unshift(droppedMarker(dropped));
      dropped = 0;
    }
    if (lines.length > 0) sink(lines, time);
    handled = Math.max(handled, expected - splitter.pending);
    source?.ack(handled);
  };

  return {
    done,
    bind(bound, resume) {
      if (source !== null || closed) return;
      source = bound;
      if (resume !== undefined) {
        // The holder's oldest byte may be inside a line: the lines start after its newline.
        expected = resume.first;
        handled = resume.acked;
        if (resume.first > resume.acked) lose(resume.acked, resume.first);
        skipping = resume.first > 0;
      }
      if (paused) bound.pause();
      bound.onConsole(chunk);
      void bound.exit.then(() => {
        if (!closed && dropped > 0) sink([droppedMarker(dropped)], Date.now());
        closed = true;
        finish();
      });
    },
    start() {},
    pause() {
      paused = true;
      source?.pause();
    },
    resume() {
      paused = false;
      source?.resume();
    },
    close() {
      closed = true;
      finish();
    },
  };
}

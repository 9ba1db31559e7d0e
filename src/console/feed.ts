// Flow control between one unikernel's console and its subscribers (Petrel (i)): lines go to
// every subscriber's bounded queue; while one of them is behind, reading the FIFO pauses (the
// rest of the chunk in hand waits here), so a subscriber that reads — even slowly — loses
// nothing; one that stays behind longer than `stallMs` is closed and reading resumes, so no
// subscriber can hold the tender for longer than that.

import type { Label, Name } from '../resources/name.js';
import type { ConsoleHub } from './hub.js';
import type { ConsoleReader, LineSink } from './reader.js';

export interface FeedOptions {
  /** A subscriber this far behind pauses the FIFO (messages). Default 512. */
  readonly highWater?: number;
  /** How long a subscriber may hold the FIFO before it is closed (ms). Default 1000. */
  readonly stallMs?: number;
}

/** Returns the line sink for `openConsoleReader`; call `attach` with the reader once opened. */
export function consoleFeed(
  hub: ConsoleHub,
  name: Name & { label: Label },
  options: FeedOptions = {},
): { readonly sink: LineSink; attach(opened: ConsoleReader): void } {
  return new Feed(hub, name, options);
}

/**
 * One per running unikernel, so its state is fields and its steps are methods (closures made per
 * feed cost a function and a context each for every unikernel); the sink handed to the reader is
 * its one closure.
 */
class Feed {
  readonly #hub: ConsoleHub;
  readonly #name: Name & { label: Label };
  readonly #highWater: number;
  readonly #stallMs: number;
  #reader: ConsoleReader | null = null;
  #pausedAt: number | null = null;
  #stallTimer: NodeJS.Timeout | undefined;
  /** Lines read but not yet published, at most one read's worth, oldest first. */
  readonly #held: { lines: Buffer[]; timestamp: number }[] = [];
  readonly sink: LineSink = (lines, timestamp) => this.#receive(lines, timestamp);

  constructor(hub: ConsoleHub, name: Name & { label: Label }, options: FeedOptions) {
    this.#hub = hub;
    this.#name = name;
    this.#highWater = options.highWater ?? 512;
    this.#stallMs = options.stallMs ?? 1000;
  }

  attach(opened: ConsoleReader): void {
    this.#reader = opened;
  }

  #receive(lines: Buffer[], timestamp: number): void {
    // A read already under way when the FIFO was paused: keep its lines in order.
    if (this.#pausedAt !== null) {
      this.#held.push({ lines, timestamp });
      return;
    }
    if (!this.#deliver(lines, timestamp)) this.#pause();
  }

  /**
   * Publishes as many lines as the subscriber furthest behind has room for below the high
   * water mark, in one batch (what publishing line by line until it is reached would
   * publish); keeps the rest.
   */
  #deliver(lines: Buffer[], timestamp: number): boolean {
    if (this.#reader === null) {
      this.#hub.publish(this.#name, lines, timestamp);
      return true;
    }
    let room = this.#highWater - this.#hub.backlog(this.#name);
    if (room <= 0) room = 1; // as line by line: the first line goes, then the check
    const now = room >= lines.length ? lines : lines.slice(0, room);
    this.#hub.publish(this.#name, now, timestamp);
    if (!this.#hub.congested(this.#name, this.#highWater)) {
      if (now.length === lines.length) return true;
      return this.#deliver(lines.slice(now.length), timestamp);
    }
    if (now.length < lines.length) this.#held.unshift({ lines: lines.slice(now.length), timestamp });
    return false;
  }

  // Woken when the subscriber that is behind catches up, or when its time is up.
  #pause(): void {
    this.#pausedAt = Date.now();
    this.#reader?.pause();
    const check = () => this.#check();
    this.#hub.onceDrained(this.#name, this.#highWater, check);
    this.#stallTimer = setTimeout(check, this.#stallMs);
    this.#stallTimer.unref();
  }

  #check(): void {
    if (this.#reader === null || this.#pausedAt === null) return;
    if (this.#hub.congested(this.#name, this.#highWater)) {
      if (Date.now() - this.#pausedAt < this.#stallMs) {
        this.#hub.onceDrained(this.#name, this.#highWater, () => this.#check());
        return;
      }
      this.#hub.dropCongested(this.#name, this.#highWater, `did not read for ${this.#stallMs} ms`);
    }
    clearTimeout(this.#stallTimer);
    while (this.#held.length > 0) {
      const next = this.#held.shift() as { lines: Buffer[]; timestamp: number };
      if (!this.#deliver(next.lines, next.timestamp)) {
        this.#pause();
        return;
      }
    }
    this.#pausedAt = null;
    this.#reader.resume();
  }
}

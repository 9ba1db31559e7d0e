// Flow control between one unikernel's console and its subscribers (Petrel (i)): lines go to
// every subscriber's bounded queue; while one of them is behind, reading the FIFO pauses (the
// rest of the chunk in hand waits here), so a subscriber that reads — even slowly — loses
// nothing; one that stays behind longer than `stallMs` is closed and reading resumes, so no
// subscriber can hold the tender for longer than that.

import type { Label, Name } from '../resources/name.js';
import type { ConsoleHub } from './hub.js';
import type { ConsoleReader } from './reader.js';

export interface FeedOptions {
  /** A subscriber this far behind pauses the FIFO (messages). Default 512. */
  readonly highWater?: number;
  /** How long a subscriber may hold the FIFO before it is closed (ms). Default 1000. */
  readonly stallMs?: number;
}

/** Returns the line sink for `openConsoleReader`; call `attach` with the reader once opened. */
export function consoleFeed(hub: ConsoleHub, name: Name & { label: Label }, options: FeedOptions = {}) {
  const highWater = options.highWater ?? 512;
  const stallMs = options.stallMs ?? 1000;
  let reader: ConsoleReader | null = null;
  let pausedAt: number | null = null;
  let stallTimer: NodeJS.Timeout | undefined;
  /** Lines read but not yet published, at most one read's worth, oldest first. */
  const held: { lines: Buffer[]; timestamp: number }[] = [];

  /** Publishes line by line until a subscriber falls behind; keeps the rest. */
  const deliver = (lines: Buffer[], timestamp: number): boolean => {
    for (let i = 0; i < lines.length; i++) {
      hub.publish(name, [lines[i] as Buffer], timestamp);
      if (reader !== null && hub.congested(name, highWater)) {
        if (i + 1 < lines.length) held.unshift({ lines: lines.slice(i + 1), timestamp });
        return false;
      }
    }
    return true;
  };

  // Woken when the subscriber that is behind catches up, or when its time is up.
  const pause = () => {
    pausedAt = Date.now();
    reader?.pause();
    hub.onceDrained(name, highWater, check);
    stallTimer = setTimeout(check, stallMs);
    stallTimer.unref();
  };

  const check = () => {
    if (reader === null || pausedAt === null) return;
    if (hub.congested(name, highWater)) {
      if (Date.now() - pausedAt < stallMs) {
        hub.onceDrained(name, highWater, check);
        return;
      }
      hub.dropCongested(name, highWater, `did not read for ${stallMs} ms`);
    }
    clearTimeout(stallTimer);
    while (held.length > 0) {
      const next = held.shift() as { lines: Buffer[]; timestamp: number };
      if (!deliver(next.lines, next.timestamp)) return pause();
    }
    pausedAt = null;
    reader.resume();
  };

  return {
    sink(lines: Buffer[], timestamp: number): void {
      // A read already under way when the FIFO was paused: keep its lines in order.
      if (pausedAt !== null) {
        held.push({ lines, timestamp });
        return;
      }
      if (!deliver(lines, timestamp)) pause();
    },
    attach(opened: ConsoleReader): void {
      reader = opened;
    },
  };
}

// Properties of the console ring (semantics §11.2, Petrel (c)): whatever it was given and at
// whatever size its storage has grown to, it answers history as a ring of its capacity that
// kept every line would — the last lines by count, the lines since a time — with each line's
// bytes exactly as they were pushed (console output need not be UTF-8).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type ConsoleLine, Ring } from '../src/console/ring.js';

const entryArb = fc.record({
  timestamp: fc.integer({ min: 0, max: 50 }).map((t) => 1_700_000_000_000 + t),
  line: fc.uint8Array({ minLength: 0, maxLength: 24 }),
});

const plain = (entries: readonly ConsoleLine[]) =>
  entries.map((e) => ({ timestamp: e.timestamp, line: [...e.line] }));

/** What a ring of `capacity` must answer: the newest lines, scanned backwards for `since`. */
function model(pushed: readonly ConsoleLine[], capacity: number) {
  const kept = pushed.slice(Math.max(0, pushed.length - capacity));
  return {
    last: (count: number) => kept.slice(kept.length - Math.max(0, Math.min(count, kept.length))),
    since: (time: number) => {
      let from = kept.length;
      while (from > 0 && (kept[from - 1] as ConsoleLine).timestamp >= time) from--;
      return kept.slice(from);
    },
  };
}

describe('console ring', () => {
  it('answers every history question as a ring of its capacity that kept every line', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        fc.array(entryArb, { maxLength: 150 }),
        fc.array(fc.integer({ min: -3, max: 60 }), { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 0, max: 55 }).map((t) => 1_700_000_000_000 + t),
        (capacity, pushed, counts, since) => {
          const ring = new Ring(capacity);
          const expected = model(pushed, capacity);
          // Asked at every length, so every stage of the storage's growth and wrap is seen.
          for (const [i, entry] of pushed.entries()) {
            ring.push(entry);
            const upTo = model(pushed.slice(0, i + 1), capacity);
            expect(ring.size).toBe(Math.min(i + 1, capacity));
            expect(plain(ring.last(counts[i % counts.length] as number))).toEqual(
              plain(upTo.last(counts[i % counts.length] as number)),
            );
          }
          for (const count of counts) expect(plain(ring.last(count))).toEqual(plain(expected.last(count)));
          expect(plain(ring.since(since))).toEqual(plain(expected.since(since)));
        },
      ),
    );
  });
});

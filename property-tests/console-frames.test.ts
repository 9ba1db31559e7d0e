// The console's bulk paths (issue 21 item 3) against the per-line ones they replace: the frames
// of a batch of lines are byte for byte `encodeWire` of each line's Data message with its frame
// header, and a hub that records a whole read at once keeps the history line-by-line pushes keep.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConsoleHub } from '../src/console/hub.js';
import { Ring } from '../src/console/ring.js';
import { unwrap } from '../src/resources/errors.js';
import { type Label, type Name, parseName } from '../src/resources/name.js';
import { consoleFrames } from '../src/wire/console-frames.js';
import { frame } from '../src/wire/framing.js';
import { encodeWire } from '../src/wire/message.js';
import { consoleLine } from '../src/wire/shapes.js';
import { WIRE_VERSION } from '../src/wire/types.js';
import { name } from './wire-arbitraries.js';

/** Line lengths around every DER length-size boundary, and ordinary ones. */
const lineArb = fc.oneof(
  fc.uint8Array({ maxLength: 40 }),
  fc
    .constantFrom(126, 127, 128, 129, 255, 256, 257, 65_535 - 80, 65_536)
    .chain((n) => fc.integer({ min: n - 40, max: n }))
    .map((n) => new Uint8Array(n).fill(0x61)),
);
// 1950–2049 so that both forms encode (UTCTime has two-digit years), with and without ms.
const timeArb = fc.oneof(
  fc.integer({ min: -631_152_000_000, max: 2_524_607_999_999 }),
  fc.integer({ min: -631_152_000, max: 2_524_607_999 }).map((s) => s * 1000),
);

describe('console frames in bulk', () => {
  it('are the per-line encodeWire frames, concatenated', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('2.0' as const, '2.1' as const),
        name,
        timeArb,
        fc.array(lineArb, { maxLength: 6 }),
        (release, who, timestamp, lines) => {
          const perLine = lines.map((line) => {
            const bytes = unwrap(
              encodeWire({
                header: { version: WIRE_VERSION, sequence: 0n, name: who },
                payload: { kind: 'data', data: consoleLine(release, new Date(timestamp), line) },
              }),
            );
            return Buffer.from(frame(bytes));
          });
          const bulk = unwrap(consoleFrames(release, who, timestamp, lines));
          expect(bulk.equals(Buffer.concat(perLine))).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('the hub records a read at once', () => {
  it('keeps the history, by count and since a time, that pushing line by line keeps', () => {
    const vm = unwrap(parseName('a:vm')) as Name & { label: Label };
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            timestamp: fc.integer({ min: 0, max: 30 }).map((t) => 1_700_000_000_000 + t),
            lines: fc.array(fc.uint8Array({ minLength: 1, maxLength: 12 }), { maxLength: 40 }),
          }),
          { maxLength: 60 },
        ),
        fc.integer({ min: 1, max: 64 }),
        fc.integer({ min: 0, max: 80 }),
        fc.integer({ min: 0, max: 31 }),
        (reads, capacity, count, since) => {
          const hub = new ConsoleHub({ ringSize: capacity });
          hub.attach(vm, 1);
          const ring = new Ring(capacity);
          for (const read of reads) {
            hub.publish(vm, read.lines, read.timestamp);
            for (const line of read.lines) ring.push({ timestamp: read.timestamp, line });
          }
          const got = hub.ring(vm) as Ring;
          expect(got.last(count)).toEqual(ring.last(count));
          expect(got.since(1_700_000_000_000 + since)).toEqual(ring.since(1_700_000_000_000 + since));
        },
      ),
      { numRuns: 200 },
    );
  });
});

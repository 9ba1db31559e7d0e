// Hostile input: random bytes, single-byte mutations, truncations and corrupted lengths of valid
// messages either decode or yield E_WIRE_* (never an exception, never E_WIRE_INTERNAL), and what
// decodes can be written again. FUZZ_RUNS scales the case count.

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { expect, test } from 'vitest';
import type { WireResult } from '../src/wire/errors.js';
import {
  decodeCertExtension,
  decodeState,
  decodeWire,
  encodeCertExtension,
  encodeState,
  encodeWire,
  FrameReader,
  findCertExtension,
  frame,
  upgradeState,
} from '../src/wire/index.js';
import type { Wire } from '../src/wire/types.js';
import { command, state, wire } from './wire-arbitraries.js';
import { runs, settings } from './wire-budget.js';

const VECTORS = join(import.meta.dirname, '..', '..', 'shared', 'vectors', 'albatross-2.1');

/** Valid DER messages: every captured frame's payload plus generated ones (fixed seed). */
const captured = readdirSync(VECTORS)
  .filter((d) => /^\d\d-/.test(d))
  .flatMap((d) =>
    readdirSync(join(VECTORS, d))
      .filter((f) => f.endsWith('.bin'))
      .map((f) => new Uint8Array(readFileSync(join(VECTORS, d, f))).subarray(4)),
  );
const encoded = <T>(values: T[], encode: (v: T) => WireResult<Uint8Array>) =>
  values.map((v) => {
    const bytes = encode(v);
    if (!bytes.ok) throw new Error(bytes.error.message);
    return bytes.value;
  });
const messages = [...captured, ...encoded(fc.sample(wire, { numRuns: 400, seed: 42 }), encodeWire)];
const states = encoded(fc.sample(state, { numRuns: 60, seed: 43 }), encodeState);
const extensions = encoded(fc.sample(command, { numRuns: 100, seed: 44 }), encodeCertExtension);
const certificates = readdirSync(VECTORS)
  .filter((d) => /^\d\d-/.test(d))
  .flatMap((d) =>
    readdirSync(join(VECTORS, d))
      .filter((f) => f.endsWith('.der'))
      .map((f) => new Uint8Array(readFileSync(join(VECTORS, d, f)))),
  );

/**
 * A decoding error must be a wire error that names the byte offset; a codec bug (an exception,
 * reported as E_WIRE_INTERNAL) fails the property.
 */
function wireErrorOnly(result: WireResult<unknown>): void {
  if (!result.ok) {
    expect(result.error.code).toMatch(/^E_WIRE_/);
    expect(result.error.code, result.error.message).not.toBe('E_WIRE_INTERNAL');
    expect(typeof result.error.details?.offset, result.error.message).toBe('number');
    expect(result.error.message).toMatch(/ at byte \d+$/);
  }
}

/** Whatever decodes can be encoded, and that encoding is stable. */
function decodeAndRewrite(bytes: Uint8Array): void {
  const decoded = decodeWire(bytes);
  wireErrorOnly(decoded);
  if (!decoded.ok) return;
  const once = encodeWire(decoded.value);
  expect(once.ok, once.ok ? '' : once.error.message).toBe(true);
  if (!once.ok) return;
  const again = decodeWire(once.value);
  expect(again.ok).toBe(true);
  const twice = again.ok ? encodeWire(again.value as Wire) : again;
  if (!isDeepStrictEqual(twice, once)) expect(twice).toEqual(once);
}

function decodeStateAndRewrite(bytes: Uint8Array): void {
  const decoded = decodeState(bytes);
  wireErrorOnly(decoded);
  if (!decoded.ok) return;
  const written = encodeState(upgradeState(decoded.value));
  // Only duplicate keys after upgrading (e.g. `user` and `user:`) may keep a state from being written.
  if (!written.ok) expect(written.error.code).toBe('E_WIRE_DUPLICATE');
}

function decodeAll(bytes: Uint8Array): void {
  decodeAndRewrite(bytes);
  decodeStateAndRewrite(bytes);
  wireErrorOnly(decodeCertExtension(bytes));
  wireErrorOnly(findCertExtension(bytes));
}

/** Offsets of every length byte in a valid DER encoding (walking constructed values). */
function lengthOffsets(bytes: Uint8Array, start = 0, end = bytes.length, out: number[] = []): number[] {
  let at = start;
  while (at + 1 < end) {
    const tag = bytes[at] as number;
    const first = bytes[at + 1] as number;
    const count = first < 0x80 ? 0 : first & 0x7f;
    let length = first < 0x80 ? first : 0;
    for (let i = 0; i < count; i++) length = length * 256 + (bytes[at + 2 + i] as number);
    const content = at + 2 + count;
    out.push(at + 1);
    if ((tag & 0x20) !== 0) lengthOffsets(bytes, content, content + length, out);
    at = content + length;
  }
  return out;
}

const sample = (corpus: Uint8Array[]) =>
  fc.nat({ max: corpus.length - 1 }).map((i) => corpus[i] as Uint8Array);

/** A valid header `:foo`, so random payloads get past it. */
const hexHeader = [
  0x30, 0x13, 0x02, 0x01, 0x05, 0x04, 0x08, 0, 0, 0, 0, 0, 0, 0, 0, 0x0c, 0x04, 0x3a, 0x66, 0x6f, 0x6f,
];

test('random bytes never crash any decoder', () => {
  const shaped = fc.oneof(
    fc.uint8Array({ maxLength: 64 }),
    fc.uint8Array({ maxLength: 200 }).map((b) => Uint8Array.of(0x30, b.length & 0x7f, ...b)),
    fc
      .uint8Array({ maxLength: 120 })
      .map((b) => Uint8Array.of(0x30, 0x81, b.length + 19, ...hexHeader, ...b)),
  );
  fc.assert(fc.property(shaped, decodeAll), settings(runs(0.12)));
});

test('single-byte mutations of valid messages, states, extensions and certificates', () => {
  const corpus = [...messages, ...states, ...extensions, ...certificates];
  fc.assert(
    fc.property(sample(corpus), fc.nat(), fc.integer({ min: 0, max: 255 }), (bytes, position, value) => {
      const mutated = Uint8Array.from(bytes);
      mutated[position % mutated.length] = value;
      decodeAll(mutated);
    }),
    settings(runs(0.3)),
  );
});

test('truncated messages are refused with a wire error', () => {
  fc.assert(
    fc.property(sample([...messages, ...states, ...extensions]), fc.nat(), (bytes, cut) => {
      const prefix = bytes.subarray(0, cut % bytes.length);
      for (const result of [decodeWire(prefix), decodeState(prefix), decodeCertExtension(prefix)]) {
        expect(result.ok).toBe(false);
        wireErrorOnly(result);
      }
    }),
    settings(runs(0.08)),
  );
});

test('corrupted length fields (short, long, indefinite, off by one)', () => {
  const variants = (old: number, random: number): number[][] => [
    [random & 0xff],
    [(old + 1) & 0xff],
    [(old + 255) & 0xff],
    [0x80],
    [0x81, random & 0xff],
    [0x82, 0x00, random & 0xff],
    [0x84, 0xff, 0xff, 0xff, 0xff],
  ];
  fc.assert(
    fc.property(
      sample([...messages, ...states]),
      fc.nat(),
      fc.nat({ max: 6 }),
      fc.nat(),
      (bytes, pick, kind, random) => {
        const offsets = lengthOffsets(bytes);
        const at = offsets[pick % offsets.length] as number;
        const replacement = variants(bytes[at] as number, random)[kind] as number[];
        const corrupted = Uint8Array.from([
          ...bytes.subarray(0, at),
          ...replacement,
          ...bytes.subarray(at + 1),
        ]);
        decodeAndRewrite(corrupted);
        decodeStateAndRewrite(corrupted);
      },
    ),
    settings(runs(0.12)),
  );
});

test('corrupted frame lengths and arbitrary chunking never crash the frame reader', () => {
  fc.assert(
    fc.property(
      fc.array(sample(messages), { minLength: 1, maxLength: 4 }),
      fc.nat(),
      fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
      fc.array(fc.integer({ min: 1, max: 97 }), { maxLength: 20 }),
      (payloads, which, length, cuts) => {
        const stream = Buffer.concat(payloads.map((p) => frame(p)));
        const headers: number[] = [];
        for (let at = 0, i = 0; i < payloads.length; i++) {
          headers.push(at);
          at += 4 + (payloads[i] as Uint8Array).length;
        }
        new DataView(stream.buffer, stream.byteOffset).setInt32(
          headers[which % headers.length] as number,
          length,
        );
        const reader = new FrameReader({ maxFrame: 1 << 20 });
        let at = 0;
        for (const size of [...cuts, stream.length]) {
          const pushed = reader.push(stream.subarray(at, at + size));
          at += size;
          wireErrorOnly(pushed);
          if (!pushed.ok) {
            expect(pushed.error.code).toBe('E_WIRE_FRAME_TOO_LARGE');
            return;
          }
          for (const event of pushed.value) if (event.kind === 'frame') decodeAndRewrite(event.payload);
        }
      },
    ),
    settings(runs(0.08)),
  );
});

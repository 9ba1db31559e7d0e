// encode → decode is the identity for generated values of every alternative, and the bytes are
// canonical: re-encoding the decoded value gives them again. FUZZ_RUNS scales the case count.

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
} from '../src/wire/index.js';
import { command, state, wire } from './wire-arbitraries.js';
import { runs, settings } from './wire-budget.js';

function value<T>(result: WireResult<T>): T {
  if (!result.ok) throw new Error(`${result.error.code}: ${result.error.message}`);
  return result.value;
}

/** Deep equality (typed arrays by content, Dates by time); vitest's diff only when it fails. */
function same(actual: unknown, expected: unknown): void {
  if (!isDeepStrictEqual(actual, expected)) expect(actual).toEqual(expected);
}

test('Wire messages: decode(encode(x)) = x and the encoding is canonical', () => {
  fc.assert(
    fc.property(wire, (message) => {
      const bytes = value(encodeWire(message));
      const decoded = value(decodeWire(bytes));
      same(decoded, message);
      same(value(encodeWire(decoded)), bytes);
    }),
    settings(runs(0.22)),
  );
});

test('certificate extensions: every command round-trips', () => {
  fc.assert(
    fc.property(command, (c) => {
      same(value(decodeCertExtension(value(encodeCertExtension(c)))), c);
    }),
    settings(runs(0.04)),
  );
});

test('state files (version 6) round-trip', () => {
  fc.assert(
    fc.property(state, (s) => {
      const bytes = value(encodeState(s));
      same(value(decodeState(bytes)), s);
    }),
    settings(runs(0.04)),
  );
});

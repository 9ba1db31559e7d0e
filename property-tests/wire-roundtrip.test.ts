// encode → decode is the identity for generated values of every alternative, and the bytes are
// canonical: re-encoding the decoded value gives them again. FUZZ_RUNS scales the case count.

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

test('Wire messages: decode(encode(x)) = x and the encoding is canonical', () => {
  fc.assert(
    fc.property(wire, (message) => {
      const bytes = value(encodeWire(message));
      const decoded = value(decodeWire(bytes));
      expect(decoded).toEqual(message);
      expect(value(encodeWire(decoded))).toEqual(bytes);
    }),
    settings(runs(0.22)),
  );
});

test('certificate extensions: every command round-trips', () => {
  fc.assert(
    fc.property(command, (c) => {
      expect(value(decodeCertExtension(value(encodeCertExtension(c))))).toEqual(c);
    }),
    settings(runs(0.04)),
  );
});

test('state files (version 6) round-trip', () => {
  fc.assert(
    fc.property(state, (s) => {
      const bytes = value(encodeState(s));
      expect(value(decodeState(bytes))).toEqual(s);
    }),
    settings(runs(0.04)),
  );
});

// Names round-trip through their printed form, and no string makes the parser throw.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { childName, type Label, type Name, parseName, pathName, printName } from '../src/resources/name.js';

const RUNS = Number(process.env.PROPERTY_RUNS ?? 1000);

const labelChar = fc.constantFrom(...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-');
const labelArb = fc
  .tuple(
    labelChar.filter((c) => c !== '-'),
    fc.array(labelChar, { maxLength: 62 }),
  )
  .map(([head, tail]) => (head + tail.join('')).toLowerCase() as Label);
const nameArb: fc.Arbitrary<Name> = fc
  .tuple(fc.array(labelArb, { maxLength: 5 }), fc.option(labelArb, { nil: null }))
  .map(([path, label]) => (label === null ? pathName(path) : childName(path, label)));

describe('names', () => {
  it('parse(print(n)) == n', () => {
    fc.assert(
      fc.property(nameArb, (name) => {
        expect(parseName(printName(name))).toEqual({ ok: true, value: name });
      }),
      { numRuns: RUNS },
    );
  });

  it('print(parse(s)) is canonical: parsing it again gives the same string', () => {
    const nameish = fc
      .array(fc.oneof(labelArb, fc.constant(':'), fc.constant('')), { maxLength: 8 })
      .map((parts) => parts.join(''));
    fc.assert(
      fc.property(fc.oneof(nameish, fc.string()), (text) => {
        const parsed = parseName(text);
        if (!parsed.ok) return;
        const printed = printName(parsed.value);
        const again = parseName(printed);
        expect(again.ok && printName(again.value)).toBe(printed);
      }),
      { numRuns: RUNS },
    );
  });

  it('any string either parses or fails with E_NAME_INVALID, never throws', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.string({ unit: 'binary' }),
          fc.string({ unit: fc.constantFrom(':', 'a', '-', '.', '/', 'Z') }),
        ),
        (text) => {
          const result = parseName(text);
          if (!result.ok) expect(result.error.code).toBe('E_NAME_INVALID');
        },
      ),
      { numRuns: RUNS * 10 },
    );
  });
});

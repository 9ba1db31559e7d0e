// The persistent treap behind the resource tree: a Map in behaviour, canonical in shape.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import * as SM from '../src/resources/sortedmap.js';

const RUNS = Number(process.env.PROPERTY_RUNS ?? 1000);
const key = fc.string({
  unit: fc.constantFrom('a', 'b', 'c', 'd', '.', '-', '0'),
  minLength: 1,
  maxLength: 4,
});
const op = fc.oneof(fc.record({ set: key, value: fc.integer() }), fc.record({ remove: key }));

describe('sorted map', () => {
  it('behaves like a Map, iterates in descending key order and never mutates old versions', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        let map: SM.SortedMap<number> = SM.EMPTY;
        const reference = new Map<string, number>();
        for (const o of ops) {
          const before = [...SM.descending(map)];
          if ('set' in o) {
            map = SM.set(map, o.set, o.value);
            reference.set(o.set, o.value);
          } else {
            const next = SM.remove(map, o.remove);
            expect([...SM.descending(map)]).toEqual(before);
            map = next;
            reference.delete(o.remove);
          }
          expect(map.size).toBe(reference.size);
          const expected = [...reference.entries()].sort(([a], [b]) => (a < b ? 1 : -1));
          expect([...SM.descending(map)]).toEqual(expected);
          for (const [k, v] of reference) expect(SM.get(map, k)).toBe(v);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('has one shape per content, whatever the order of insertion and removal', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(key, { maxLength: 30 }),
        fc.array(key, { maxLength: 10 }),
        fc.integer(),
        (keys, extra, seed) => {
          const shuffled = [...keys].sort(
            (a, b) => ((a.charCodeAt(0) * seed) % 7) - ((b.charCodeAt(0) * seed) % 7),
          );
          let one: SM.SortedMap<number> = SM.EMPTY;
          for (const k of keys) one = SM.set(one, k, 1);
          let other: SM.SortedMap<number> = SM.EMPTY;
          for (const k of [...extra, ...shuffled]) other = SM.set(other, k, 1);
          for (const k of extra) if (!keys.includes(k)) other = SM.remove(other, k);
          expect(other).toEqual(one);
        },
      ),
      { numRuns: RUNS },
    );
  });
});

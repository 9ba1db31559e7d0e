// The record of dropped unikernels' last exits (src/engine/exits.ts): bounded, newest kept,
// and names seen from a request's name as info sees them.

import { describe, expect, it } from 'vitest';
import { DroppedExits, KEPT_DROPS, seenFrom } from '../../src/engine/exits.js';
import { unwrap } from '../../src/resources/errors.js';
import { type Label, type Name, parseName, printName } from '../../src/resources/name.js';

const name = (text: string) => unwrap(parseName(text));
const vm = (text: string) => name(text) as Name & { readonly label: Label };
const drop = (text: string, at = 0) => ({
  name: vm(text),
  record: { exit: 'exit 2', limit: null, at },
  reason: 'exit code 2 does not restart',
  restarts: 0,
});

describe('dropped exits', () => {
  it(`keeps the last ${KEPT_DROPS} names, forgetting the oldest drop first`, () => {
    const kept = new DroppedExits();
    for (let i = 0; i < KEPT_DROPS + 10; i++) kept.add(drop(`vm${i}`, i));
    expect(kept.size).toBe(KEPT_DROPS);
    expect(kept.get(':vm9')).toBeUndefined();
    expect(kept.get(':vm10')?.record.at).toBe(10);
    // A name dropped again is the newest, with its latest exit.
    kept.add(drop('vm10', 1_000));
    kept.add(drop('fresh'));
    expect(kept.get(':vm10')?.record.at).toBe(1_000);
    expect(kept.get(':vm11')).toBeUndefined();
    kept.forget(':vm10');
    expect(kept.get(':vm10')).toBeUndefined();
    expect(kept.size).toBe(KEPT_DROPS - 1);
  });

  it('sees a name from itself, from each path above it, and from nowhere else', () => {
    const full = vm('team:web:db');
    expect(seenFrom(name('team:web:db'), full)).toEqual(name('team:web:db'));
    expect(printName(seenFrom(name('team:'), full) as Name)).toBe('web:db');
    expect(printName(seenFrom(name(':'), full) as Name)).toBe('team:web:db');
    expect(seenFrom(name('team:web:dc'), full)).toBeNull();
    expect(seenFrom(name('other:'), full)).toBeNull();
    expect(seenFrom(name('team:web:db:'), full)).toBeNull();
  });
});

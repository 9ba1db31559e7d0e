// Failed authentications per address: refused after `max` in a window, until it ends; addresses
// apart (IPv6 by /64); memory bounded by forgetting the oldest windows.

import { expect, it } from 'vitest';
import { FailureTable } from '../../src/resources/failures.js';

it('refuses an address after max failures until its window ends, and no other', () => {
  const table = new FailureTable({ max: 3, windowMs: 1000, maxAddresses: 100 });
  for (let i = 0; i < 3; i++) {
    expect(table.refusedFor('10.0.0.1', 100 + i)).toBe(0);
    table.failed('10.0.0.1', 100 + i);
  }
  expect(table.refusedFor('10.0.0.1', 500)).toBe(600);
  expect(table.refusedFor('::ffff:10.0.0.1', 500)).toBe(600);
  expect(table.refusedFor('10.0.0.2', 500)).toBe(0);
  expect(table.refusedFor('10.0.0.1', 1100)).toBe(0);
  table.failed('2001:db8::1', 0);
  table.failed('2001:db8::2', 0);
  table.failed('2001:db8:0:0:ffff::3', 0);
  expect(table.refusedFor('2001:db8::99', 10)).toBe(990);
  expect(table.refusedFor('2001:db8:0:1::1', 10)).toBe(0);
});

it('remembers at most maxAddresses, forgetting the oldest', () => {
  const table = new FailureTable({ max: 1, windowMs: 1000, maxAddresses: 2 });
  table.failed('10.0.0.1', 0);
  table.failed('10.0.0.2', 1);
  table.failed('10.0.0.3', 2);
  expect(table.size).toBe(2);
  expect(table.refusedFor('10.0.0.1', 3)).toBe(0);
  expect(table.refusedFor('10.0.0.3', 3)).toBe(999);
});

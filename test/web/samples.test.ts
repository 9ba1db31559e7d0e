// The dashboard's sample rings and the session table, pure: a ring keeps the newest hour of
// samples in its fixed slots, oldest first; a session ends when idle, at its token's expiry, or
// when the table is full and it is the least recently used.

import { describe, expect, it } from 'vitest';
import { SampleRing, slotsFor } from '../../src/web/samples.js';
import { cookieOf, csrfMatches, SessionTable } from '../../src/web/sessions.js';

describe('sample rings', () => {
  it('holds an hour at the sampling interval, in fixed memory, the oldest overwritten', () => {
    expect(slotsFor(10_000)).toBe(360);
    expect(slotsFor(1_000)).toBe(3600);
    expect(slotsFor(100)).toBe(3600);
    const ring = new SampleRing(4);
    expect(ring.bytes).toBe(4 * 5 * 8);
    expect(ring.since(0)).toEqual([]);
    for (let t = 1; t <= 6; t++) ring.add(t * 1000, t, t * 10, t * 100, t * 1000);
    expect(ring.since(0).map((row) => row[0])).toEqual([3000, 4000, 5000, 6000]);
    expect(ring.since(0)[0]).toEqual([3000, 3, 30, 300, 3000]);
    expect(ring.since(4500).map((row) => row[0])).toEqual([5000, 6000]);
    expect(ring.latest).toBe(6000);
    expect(ring.bytes).toBe(160);
  });
});

describe('the session table', () => {
  const hour = new Date(Date.now() + 3_600_000);

  it('ends a session after its idle time or at its token’s expiry, and keeps a used one', () => {
    const table = new SessionTable(1000);
    const now = Date.now();
    const a = table.open('ptk1.a', hour, now);
    expect(a.id).toMatch(/^[\w-]{43}$/);
    expect(a.csrf).not.toBe(a.id);
    expect(table.use(a.id, now + 900)?.token).toBe('ptk1.a');
    expect(table.use(a.id, now + 1800)?.token).toBe('ptk1.a');
    expect(table.use(a.id, now + 2900)).toBeNull();
    expect(table.use(a.id, now + 2901)).toBeNull();
    const b = table.open('ptk1.b', new Date(now + 500), now);
    expect(table.use(b.id, now + 600)).toBeNull();
  });

  it('drops the least recently used beyond its size, and compares CSRF tokens whole', () => {
    const table = new SessionTable(60_000, 2);
    const now = Date.now();
    const [a, b] = [table.open('a', hour, now), table.open('b', hour, now)];
    table.use(a.id, now + 1);
    const c = table.open('c', hour, now + 2);
    expect(table.size).toBe(2);
    expect(table.use(b.id, now + 3)).toBeNull();
    expect(table.use(a.id, now + 3)?.token).toBe('a');
    expect(table.use(c.id, now + 3)?.token).toBe('c');
    expect(csrfMatches(a, a.csrf)).toBe(true);
    expect(csrfMatches(a, a.csrf.slice(0, -1))).toBe(false);
    expect(csrfMatches(a, c.csrf)).toBe(false);
    expect(csrfMatches(a, undefined)).toBe(false);
    expect(cookieOf('x=1; __Host-petrel-session=abc ; y=2', '__Host-petrel-session')).toBe('abc');
    expect(cookieOf('x=1', '__Host-petrel-session')).toBeNull();
  });
});

import { describe, expect, it } from 'vitest';
import { RING_SIZE, Ring } from '../../src/console/ring.js';

const filled = (n: number) => {
  const ring = new Ring();
  for (let i = 0; i < n; i++) ring.push({ timestamp: 1000 + i, line: Buffer.from(`line ${i}`) });
  return ring;
};
const lines = (entries: { line: Uint8Array }[]) => entries.map((e) => Buffer.from(e.line).toString());

describe('console ring', () => {
  it('keeps the last RING_SIZE lines, oldest first', () => {
    const ring = filled(RING_SIZE + 10);
    expect(ring.size).toBe(RING_SIZE);
    const all = ring.last(RING_SIZE);
    expect(all).toHaveLength(RING_SIZE);
    expect(lines(all.slice(0, 1))).toEqual(['line 10']);
    expect(lines(all.slice(-1))).toEqual([`line ${RING_SIZE + 9}`]);
  });

  it('clamps counts to 0…size (a count ≤ 0 returns nothing instead of looping)', () => {
    const ring = filled(RING_SIZE * 2);
    expect(ring.last(0)).toEqual([]);
    expect(ring.last(-5)).toEqual([]);
    expect(ring.last(Number.MAX_SAFE_INTEGER)).toHaveLength(RING_SIZE);
    expect(lines(filled(3).last(10))).toEqual(['line 0', 'line 1', 'line 2']);
    expect(lines(filled(3).last(2))).toEqual(['line 1', 'line 2']);
  });

  it('replays lines since a time, with their timestamps, scanning at most one turn', () => {
    const ring = filled(5);
    expect(ring.since(1003).map((e) => e.timestamp)).toEqual([1003, 1004]);
    expect(ring.since(0)).toHaveLength(5);
    expect(ring.since(2000)).toEqual([]);
    expect(filled(RING_SIZE * 3).since(0)).toHaveLength(RING_SIZE);
  });

  it('gives back every line byte for byte, also bytes that are not UTF-8', () => {
    const ring = new Ring();
    const odd = Uint8Array.from([0x00, 0xff, 0xc3, 0x28, 0x80, 0x0d, 0x7f]);
    ring.push({ timestamp: 1, line: odd });
    ring.push({ timestamp: 2, line: Buffer.from('petrel-canary ümlaut') });
    expect([...(ring.last(2)[0]?.line ?? [])]).toEqual([...odd]);
    expect(Buffer.from(ring.last(1)[0]?.line ?? []).toString()).toBe('petrel-canary ümlaut');
  });

  it('answers history at every length while its storage grows, and after it wraps', () => {
    const ring = new Ring();
    for (let n = 1; n <= RING_SIZE + 3; n++) {
      ring.push({ timestamp: 1000 + n, line: Buffer.from(`line ${n}`) });
      const newest = ring.last(2);
      expect(lines(newest)).toEqual(n === 1 ? ['line 1'] : [`line ${n - 1}`, `line ${n}`]);
      expect(ring.since(1000 + n).map((e) => e.timestamp)).toEqual([1000 + n]);
    }
    expect(lines(ring.last(1))).toEqual([`line ${RING_SIZE + 3}`]);
    expect(lines(ring.last(RING_SIZE).slice(0, 1))).toEqual(['line 4']);
  });
});

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
});

// The quiet collection (src/host/garbage.ts): one collection once petreld has been without work
// for the quiet period, none while work goes on, none after close.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { COLLECT_EVERY, QuietCollector, TransferCollector } from '../../src/host/garbage.js';

describe('quiet collector', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('collects once, a quiet period after the last work', () => {
    let collections = 0;
    const quiet = new QuietCollector(1000, () => collections++);
    quiet.worked();
    vi.advanceTimersByTime(600);
    quiet.worked();
    vi.advanceTimersByTime(600);
    expect(collections).toBe(0);
    vi.advanceTimersByTime(400);
    expect(collections).toBe(1);
    vi.advanceTimersByTime(10_000);
    expect(collections).toBe(1);
  });

  it('collects again after the next work, and never while work goes on', () => {
    let collections = 0;
    const quiet = new QuietCollector(1000, () => collections++);
    for (let i = 0; i < 50; i++) {
      quiet.worked();
      vi.advanceTimersByTime(900);
    }
    expect(collections).toBe(0);
    vi.advanceTimersByTime(100);
    expect(collections).toBe(1);
    quiet.worked();
    vi.advanceTimersByTime(1000);
    expect(collections).toBe(2);
  });

  it('does not collect after close', () => {
    let collections = 0;
    const quiet = new QuietCollector(1000, () => collections++);
    quiet.worked();
    quiet.close();
    vi.advanceTimersByTime(5000);
    expect(collections).toBe(0);
  });

  it('does not keep the process alive while it waits', () => {
    vi.useRealTimers();
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = timers();
    const quiet = new QuietCollector(60_000, () => undefined);
    quiet.worked();
    const waiting = timers();
    quiet.close();
    expect(waiting).toBe(before);
  });
});

describe('transfer collector', () => {
  it('collects every COLLECT_EVERY bytes of buffers passed on', () => {
    let collections = 0;
    const transfer = new TransferCollector(() => collections++);
    transfer.moved(COLLECT_EVERY - 1);
    expect(collections).toBe(0);
    transfer.moved(1);
    expect(collections).toBe(1);
    transfer.moved(COLLECT_EVERY / 2);
    transfer.moved(COLLECT_EVERY / 2);
    expect(collections).toBe(2);
  });

  it('collects once after a large buffer held whole, not while it is held', async () => {
    let collections = 0;
    const transfer = new TransferCollector(() => collections++);
    transfer.finished(COLLECT_EVERY);
    expect(collections).toBe(0);
    await new Promise((resolve) => setImmediate(resolve));
    expect(collections).toBe(1);
    transfer.finished(COLLECT_EVERY - 1);
    transfer.finished();
    await new Promise((resolve) => setImmediate(resolve));
    expect(collections).toBe(1);
  });
});

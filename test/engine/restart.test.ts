// Restart on failure (semantics §5.7, Petrel (d)) through the engine, with short back-offs.
import { createHash } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_RESTART, decideRestart, NO_HISTORY } from '../../src/engine/restart.js';
import { canaryImage } from './guest.js';
import {
  canaryConfig,
  createCommand,
  makeEngine,
  name,
  replyText,
  storedNames,
  type TestEngine,
  until,
} from './harness.js';

let t: TestEngine | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

describe('restart decisions', () => {
  const input = (code: number | null, exitCodes: number[] = [], extra = {}) => ({
    exit: { code, signal: code === null ? 'SIGKILL' : null },
    failBehaviour: { kind: 'restart' as const, exitCodes },
    addName: false,
    ranForMs: 100,
    now: 1_000_000,
    history: NO_HISTORY,
    options: DEFAULT_RESTART,
    ...extra,
  });

  it.each([null, 1, 60, 61, 62, 63, 64])('never restarts %s', (code) => {
    expect(decideRestart(input(code)).kind).toBe('drop');
  });

  it('restarts other codes when the set is empty or names them', () => {
    expect(decideRestart(input(2)).kind).toBe('restart');
    expect(decideRestart(input(255, [255])).kind).toBe('restart');
    expect(decideRestart(input(2, [3])).kind).toBe('drop');
    expect(decideRestart({ ...input(2), failBehaviour: { kind: 'quit' } }).kind).toBe('drop');
  });

  it('exit 64 with --name retries without it, even under quit', () => {
    expect(decideRestart({ ...input(64), addName: true, failBehaviour: { kind: 'quit' } }).kind).toBe(
      'retry-without-name',
    );
  });

  it('backs off exponentially up to the ceiling, and resets after a stable run', () => {
    let history = NO_HISTORY;
    const delays: number[] = [];
    for (let i = 0; i < 8; i++) {
      const d = decideRestart({ ...input(2), history, now: 1_000_000 + i });
      if (d.kind !== 'restart') throw new Error('expected a restart');
      delays.push(d.delayMs);
      history = d.history;
    }
    expect(delays).toEqual([1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000]);
    const stable = decideRestart({ ...input(2), history, ranForMs: 60_000 });
    expect(stable.kind === 'restart' && stable.delayMs).toBe(1000);
  });

  it('stops a crash loop at the rate cap', () => {
    let history = NO_HISTORY;
    for (let i = 0; i < 10; i++) {
      const d = decideRestart({ ...input(2), history, now: 1_000 + i });
      if (d.kind !== 'restart') throw new Error(`restart ${i} refused`);
      history = d.history;
    }
    const eleventh = decideRestart({ ...input(2), history, now: 2_000 });
    expect(eleventh).toEqual({ kind: 'drop', reason: 'restart rate exceeded (10 restarts within 600 s)' });
    // Outside the window the old restarts no longer count.
    expect(decideRestart({ ...input(2), history, now: 1_000 + 600_001 }).kind).toBe('restart');
  });
});

describe('restart on failure through the engine', () => {
  /** The canary running `args`, failBehaviour `restart` on `exitCodes` (semantics §5.7). */
  const restarting = (args: string[], exitCodes: number[]) =>
    canaryConfig(canaryImage, args, { failBehaviour: { kind: 'restart', exitCodes } });
  /** Until no unikernel runs and the engine's queue is idle (a restart may still be pending). */
  const settled = async (engine: TestEngine) => {
    await until(() => engine.engine.running.length === 0);
    await engine.engine.idle();
  };
  const fast = { backoffBaseMs: 50, backoffMaxMs: 400, stableAfterMs: 60_000, maxCount: 3, windowMs: 60_000 };

  it('restarts a qualifying exit after a back-off, without rewriting the state file', async () => {
    t = await makeEngine({ restart: fast });
    const config = await restarting(['exit', '7'], []);
    expect(replyText(await t.run(':crash', createCommand(config)))).toBe('created unikernel');
    // exit 7 qualifies: it restarts, crashes again... until the rate cap drops it.
    await until(() => (t?.calls.get('spawnTender') ?? 0) >= 4);
    await t.engine.idle();
    await settled(t);
    await new Promise((r) => setTimeout(r, 300));
    expect(t.calls.get('spawnTender')).toBe(4);
    expect(await storedNames(t.stateDir)).toEqual([]);
  });

  it('does not restart exit 1, and drops it from the state file', async () => {
    t = await makeEngine({ restart: fast });
    const config = await restarting(['exit', '1'], []);
    await t.run(':one', createCommand(config));
    await settled(t);
    await new Promise((r) => setTimeout(r, 200));
    expect(t.calls.get('spawnTender')).toBe(1);
    expect(await storedNames(t.stateDir)).toEqual([]);
  });

  it('destroy cancels a pending restart; the image stays in the store while it waits', async () => {
    t = await makeEngine({ restart: { ...fast, backoffBaseMs: 5_000 } });
    const config = await restarting(['exit', '7'], [7]);
    await t.run(':p', createCommand(config));
    await settled(t);
    expect(await storedNames(t.stateDir)).toEqual([':p']);
    const store = path.join(t.stateDir, 'images');
    expect(await readdir(store)).toEqual([createHash('sha256').update(config.image).digest('hex')]);
    expect(replyText(await t.run(':p', { type: 'unikernel-destroy' }))).toBe(
      'destroyed: removed from restarting',
    );
    expect(await storedNames(t.stateDir)).toEqual([]);
    expect(await readdir(store)).toEqual([]);
    expect(replyText(await t.run(':p', { type: 'unikernel-destroy' }))).toBe('Failure: destroy: not found');
    expect(t.engine.pidOf(name(':p'))).toBeUndefined();
  });
});

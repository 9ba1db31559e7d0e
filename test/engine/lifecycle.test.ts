import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { deriveMac } from '../../src/tender/argv.js';
import { engineEachTest } from './each.js';
import { canaryImage, canaryNetImage } from './guest.js';
import { canaryConfig, createCommand, name, replyText, type TestEngine, waitForLine } from './harness.js';

let t: TestEngine;
engineEachTest((made) => {
  t = made;
});

describe('create and destroy', () => {
  it('runs a canary, shows its console line, and leaves nothing behind after destroy', async () => {
    const before = await t.snapshot();
    const created = await t.run(':hello', createCommand(await canaryConfig(canaryImage, ['wait', 'w1'])));
    expect(replyText(created)).toBe('created unikernel');
    await waitForLine(t.hub, ':hello', 'petrel-canary w1');
    const pid = t.engine.pidOf(name(':hello'));
    expect(pid).toBeGreaterThan(0);
    expect(existsSync(`/proc/${pid}`)).toBe(true);
    expect(existsSync(`${t.runDir}/:hello.img`)).toBe(true);
    expect(existsSync(`${t.runDir}/fifo/:hello`)).toBe(true);
    expect(existsSync(`${t.runDir}/tenders/:hello`)).toBe(true);

    expect(replyText(await t.run(':hello', { type: 'unikernel-destroy' }))).toBe('destroyed unikernel');
    expect(existsSync(`/proc/${pid}`)).toBe(false);
    expect(existsSync(`${t.runDir}/:hello.img`)).toBe(false);
    expect(existsSync(`${t.runDir}/fifo/:hello`)).toBe(false);
    expect(existsSync(`${t.runDir}/tenders/:hello`)).toBe(false);
    expect(t.engine.running).toEqual([]);
    const after = await t.snapshot();
    // Only the state file (now listing no unikernel) may differ.
    expect(after.split('\n').slice(0, 2)).toEqual(before.split('\n').slice(0, 2));
  });

  it('a VM on a bridge gets a tap on it, removed when the VM goes', async () => {
    const config = await canaryConfig(canaryNetImage, ['wait', 'net'], {
      bridges: [{ netif: 'service', bridge: 'br0', mac: null }],
    });
    expect(replyText(await t.run(':net', createCommand(config)))).toBe('created unikernel');
    expect(t.netns.links()).toContain('ptap0');
    expect(t.engine.netsOf(name(':net'))?.[0]?.mac).toBe(deriveMac('service', name(':net')));
    await t.run(':net', { type: 'unikernel-destroy' });
    expect(t.netns.links()).not.toContain('ptap0');
  });
});

// Two unikernels on one bridge exchange a frame, through the engine's taps (issue 5). The guests
// are spt canaries under the bundled petrel-spt: real guest code, no KVM needed.
import { describe, expect, it } from 'vitest';
import { engineEachTest } from './each.js';
import { sptCanaryNet } from './guest.js';
import { canaryConfig, createCommand, replyText, type TestEngine, waitForLine } from './harness.js';

let t: TestEngine;
engineEachTest((made) => {
  t = made;
});

describe('unikernels on a bridge', () => {
  it('a frame sent by one reaches the other, which echoes it', async () => {
    const onBridge = { bridges: [{ netif: 'service', bridge: 'br0', mac: null }] };
    expect(
      replyText(
        await t.run(':echo', createCommand(await canaryConfig(sptCanaryNet, ['net-echo'], onBridge))),
      ),
    ).toBe('created unikernel');
    await waitForLine(t.hub, ':echo', 'petrel-canary net-echo ready');
    expect(
      replyText(
        await t.run(':send', createCommand(await canaryConfig(sptCanaryNet, ['net-send'], onBridge))),
      ),
    ).toBe('created unikernel');
    await waitForLine(t.hub, ':send', 'petrel-canary net-send ret=0');
    await waitForLine(t.hub, ':echo', 'petrel-canary echoed 1 ret=0');
    const taps = t.netns
      .links()
      .split(' ')
      .filter((l) => l.startsWith('ptap'));
    expect(taps.length).toBeGreaterThanOrEqual(1);
  });
});

import { describe, expect, it } from 'vitest';
import { unwrap } from '../../src/resources/errors.js';
import { makePolicy } from '../../src/resources/policy.js';
import { engineEachTest } from './each.js';
import { canaryImage, canaryNetImage } from './guest.js';
import {
  CREATE_STEPS,
  canaryConfig,
  createCommand,
  name,
  replyText,
  storedState,
  type TestEngine,
  waitForLine,
} from './harness.js';

let t: TestEngine;
engineEachTest((made) => {
  t = made;
});

const policy = (vms: number, memory: number) =>
  unwrap(makePolicy({ vms, memory, cpuids: [0, 1], block: 10, bridges: ['br0'] }));

describe('rejections change nothing', () => {
  it.each([
    [
      'not an ELF image',
      async () => canaryConfig(canaryImage, ['wait', 'x'], { image: Buffer.from('not an elf at all') }),
    ],
    [
      'a manifest that does not match (net image, no network)',
      async () => canaryConfig(canaryNetImage, ['wait', 'x']),
    ],
    [
      'a bridge that does not exist',
      async () =>
        canaryConfig(canaryNetImage, ['wait', 'x'], {
          bridges: [{ netif: 'service', bridge: 'nope0', mac: null }],
        }),
    ],
    [
      'a corrupt compressed image',
      async () => canaryConfig(canaryImage, ['wait', 'x'], { compressed: true }),
    ],
    [
      'a block device that does not exist',
      async () =>
        canaryConfig(canaryImage, ['wait', 'x'], {
          blocks: [{ device: 'storage', hostDevice: null, sectorSize: null }],
        }),
    ],
  ])('%s', async (_what, config) => {
    expect(replyText(await t.run('alice:', { type: 'policy-add', policy: policy(2, 64) }))).toBe(
      'added policy',
    );
    const before = await t.snapshot();
    const result = await t.run('alice:vm', createCommand(await config()));
    expect(result.kind).toBe('failure');
    expect(await t.snapshot()).toBe(before);
    expect(t.engine.running).toEqual([]);
  });

  it('a policy limit, with the policy message, and nothing is left on the host', async () => {
    await t.run('alice:', { type: 'policy-add', policy: policy(1, 64) });
    expect(
      replyText(await t.run('alice:one', createCommand(await canaryConfig(canaryImage, ['wait', 'a'])))),
    ).toBe('created unikernel');
    const before = await t.snapshot();
    expect(
      replyText(await t.run('alice:two', createCommand(await canaryConfig(canaryImage, ['wait', 'b'])))),
    ).toBe('Failure: maximum amount of unikernels (1) reached');
    expect(await t.snapshot()).toBe(before);
  });

  it('a failure in any host step is undone completely', async () => {
    const config = await canaryConfig(canaryNetImage, ['wait', 'x'], {
      bridges: [{ netif: 'service', bridge: 'br0', mac: null }],
    });
    const before = await t.snapshot();
    for (const step of CREATE_STEPS) {
      t.faults[step] = () => true;
      const result = await t.run(':vm', createCommand(config));
      expect(replyText(result), step).toMatch(/^Failure: /);
      delete t.faults[step];
      expect(await t.snapshot(), step).toBe(before);
      expect(t.engine.running, step).toEqual([]);
    }
    expect(replyText(await t.run(':vm', createCommand(config)))).toBe('created unikernel');
  });

  it('a path is not a unikernel name; bhyve is not supported', async () => {
    const config = await canaryConfig(canaryImage, ['wait', 'x']);
    expect(replyText(await t.run('user:', createCommand(config)))).toBe('Failure: path used instead of name');
    expect(replyText(await t.run(':b', createCommand({ ...config, typ: 'bhyve' })))).toBe(
      'Failure: unsupported unikernel type: bhyve',
    );
  });

  it('a second create of a running name is refused', async () => {
    const config = await canaryConfig(canaryImage, ['wait', 'x']);
    await t.run(':vm', createCommand(config));
    expect(replyText(await t.run(':vm', createCommand(config)))).toBe(
      'Failure: Unikernel with same name is already running',
    );
  });
});

describe('force-create', () => {
  it('replaces a running VM; its console continues under the same name', async () => {
    await t.run(':vm', createCommand(await canaryConfig(canaryImage, ['wait', 'first'])));
    await waitForLine(t.hub, ':vm', 'petrel-canary first');
    const oldPid = t.engine.pidOf(name(':vm'));
    expect(
      replyText(await t.run(':vm', createCommand(await canaryConfig(canaryImage, ['wait', 'second']), true))),
    ).toBe('created unikernel');
    await waitForLine(t.hub, ':vm', 'petrel-canary second');
    expect(t.engine.pidOf(name(':vm'))).not.toBe(oldPid);
    const lines = t.hub
      .ring(name(':vm'))
      ?.last(10)
      .map((l) => Buffer.from(l.line).toString());
    expect(lines?.filter((l) => l.startsWith('petrel-canary '))).toEqual([
      'petrel-canary first',
      'petrel-canary second',
    ]);
  });

  it('a replacement that fails validation leaves the old VM running untouched', async () => {
    await t.run(':vm', createCommand(await canaryConfig(canaryImage, ['wait', 'first'])));
    const oldPid = t.engine.pidOf(name(':vm'));
    const before = await t.snapshot();
    const bad = await canaryConfig(canaryNetImage, ['wait', 'x']);
    expect(replyText(await t.run(':vm', createCommand(bad, true)))).toMatch(
      /^Failure: specified bridge\(s\)|^Failure: .*manifest/,
    );
    expect(t.engine.pidOf(name(':vm'))).toBe(oldPid);
    expect(await t.snapshot()).toBe(before);
  });

  it('a replacement whose launch fails after the old one stopped brings the old one back', async () => {
    await t.run(':vm', createCommand(await canaryConfig(canaryImage, ['wait', 'first'])));
    const oldPid = t.engine.pidOf(name(':vm'));
    const spawns = t.calls.get('spawnTender') ?? 0;
    t.faults.spawnTender = spawns + 1;
    const result = await t.run(
      ':vm',
      createCommand(await canaryConfig(canaryImage, ['wait', 'second']), true),
    );
    expect(replyText(result)).toBe(
      'Failure: could not create unikernel: console failed; the previous unikernel was started again',
    );
    const newPid = t.engine.pidOf(name(':vm'));
    expect(newPid).toBeDefined();
    expect(newPid).not.toBe(oldPid);
    await waitForLine(t.hub, ':vm', 'petrel-canary first');
    // The state still describes the old configuration.
    const state = await storedState(t.stateDir);
    expect(state.unikernels.map((u) => u.config.arguments)).toEqual([['wait', 'first']]);
  });

  it('when bringing the old one back fails too, both errors are reported and nothing runs', async () => {
    await t.run(':vm', createCommand(await canaryConfig(canaryImage, ['wait', 'first'])));
    const spawns = t.calls.get('spawnTender') ?? 0;
    t.faults.spawnTender = (..._args) => (t.calls.get('spawnTender') ?? 0) > spawns;
    const result = await t.run(
      ':vm',
      createCommand(await canaryConfig(canaryImage, ['wait', 'second']), true),
    );
    expect(replyText(result)).toBe(
      'Failure: could not create unikernel: console failed; starting the previous unikernel failed too: could not create unikernel: console failed',
    );
    expect(t.engine.running).toEqual([]);
  });

  it('no other command is served in between: a concurrent info sees the old or the new VM, never neither', async () => {
    await t.run(':vm', createCommand(await canaryConfig(canaryImage, ['wait', 'first'])));
    const replacing = t.run(':vm', createCommand(await canaryConfig(canaryImage, ['wait', 'second']), true));
    const infos = await Promise.all(
      Array.from({ length: 5 }, () => t.run(':vm', { type: 'unikernel-info', release: '2.7' })),
    );
    await replacing;
    for (const info of infos) {
      expect(info.kind === 'reply' && info.reply.type === 'unikernel-info' && info.reply.entries.length).toBe(
        1,
      );
    }
  });
});

describe('restart command', () => {
  it('restarts with new arguments, admitted against the policy', async () => {
    await t.run('alice:', { type: 'policy-add', policy: policy(2, 10) });
    await t.run('alice:vm', createCommand(await canaryConfig(canaryImage, ['wait', 'one'])));
    const oldPid = t.engine.pidOf(name('alice:vm'));
    const args = {
      failBehaviour: { kind: 'quit' as const },
      startup: null,
      addName: false,
      cpuids: [0],
      memory: 4,
      blocks: [],
      bridges: [],
      arguments: ['wait', 'two'],
      cpus: 1,
      linuxBootPartition: null,
    };
    expect(replyText(await t.run('alice:vm', { type: 'unikernel-restart', form: '2.7', args }))).toBe(
      'created unikernel',
    );
    await waitForLine(t.hub, 'alice:vm', 'petrel-canary two');
    expect(t.engine.pidOf(name('alice:vm'))).not.toBe(oldPid);
    // Petrel admits the NEW arguments: more memory than the policy allows is refused, old VM kept.
    const pid = t.engine.pidOf(name('alice:vm'));
    expect(
      replyText(
        await t.run('alice:vm', { type: 'unikernel-restart', form: '2.7', args: { ...args, memory: 11 } }),
      ),
    ).toBe('Failure: maximum allowed memory (10, used 0) would be exceeded (requesting 11)');
    expect(t.engine.pidOf(name('alice:vm'))).toBe(pid);
    expect(replyText(await t.run('alice:nope', { type: 'unikernel-restart', form: 'keep' }))).toBe(
      'Failure: destroy: not found',
    );
  });
});

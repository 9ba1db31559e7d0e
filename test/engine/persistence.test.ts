// The state file after each commit, and start-up: leftovers removed, policies and unikernels back.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, stat, writeFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { unwrap } from '../../src/resources/errors.js';
import { makePolicy } from '../../src/resources/policy.js';
import * as T from '../../src/resources/tree.js';
import { closingAfterEach } from './each.js';
import { canaryImage } from './guest.js';
import {
  canaryConfig,
  createCommand,
  makeEngine,
  name,
  replyText,
  storedState,
  type TestEngine,
  waitForLine,
} from './harness.js';

const closeAfterTest = closingAfterEach();

describe('persistence', () => {
  it('a restarted engine brings back policies and unikernels, by startup priority', async () => {
    const t = closeAfterTest(await makeEngine());
    const policy = unwrap(makePolicy({ vms: 5, memory: 64, cpuids: [0], block: null, bridges: [] }));
    expect(replyText(await t.run('team:', { type: 'policy-add', policy }))).toBe('added policy');
    expect(replyText(await t.run('team:', { type: 'policy-add', policy }))).toBe('no modification of policy');
    await t.run(
      'team:late',
      createCommand(await canaryConfig(canaryImage, ['wait', 'late'], { startup: 90 })),
    );
    await t.run(
      'team:early',
      createCommand(await canaryConfig(canaryImage, ['wait', 'early'], { startup: 10 })),
    );
    const state = await storedState(t.stateDir);
    // A daemon restart: SIGTERM stops the VMs and keeps the state as it was.
    await t.engine.shutdown();
    expect(t.engine.running).toEqual([]);
    expect(await storedState(t.stateDir)).toEqual(state);

    const second = closeAfterTest(await t.reopen());
    expect(T.findPolicy(second.engine.tree, ['team'] as never)).toEqual(policy);
    expect(second.engine.running.sort()).toEqual(['team:early', 'team:late']);
    await waitForLine(second.hub, 'team:early', 'petrel-canary early');
    expect(existsSync(`${t.stateDir}/petrel.state.started`)).toBe(true);
  });

  it('start-up adopts the tender that outlived the daemon and removes leftovers: taps, FIFOs, images', async () => {
    const t = closeAfterTest(await makeEngine());
    await t.run(':keep', createCommand(await canaryConfig(canaryImage, ['wait', 'k'])));
    const pid = t.engine.pidOf(name(':keep')) as number;
    /** Interfaces and the run directory: what the unikernel owns on the host. */
    const artefacts = async (e: TestEngine) => (await e.snapshot()).split('\n').slice(0, 2).join('\n');
    const owned = await artefacts(t);
    // Simulate a crash: the daemon is gone, its tender and artefacts are not.
    const leftoverTap = 'ptap7';
    const { spawnSync } = await import('node:child_process');
    spawnSync('ip', ['-n', t.netns.name, 'tuntap', 'add', 'dev', leftoverTap, 'mode', 'tap']);
    await writeFile(`${t.runDir}/:ghost.img`, 'x');
    await mkdir(`${t.runDir}/fifo`, { recursive: true });
    spawnSync('mkfifo', [`${t.runDir}/fifo/:ghost`]);
    // An earlier version made the FIFO directory 0755; the run directory outlives restarts.
    await chmod(`${t.runDir}/fifo`, 0o755);
    // A process that is not ours with a PID file that does not match must survive.
    const stranger = spawn('sleep', ['30']);
    await t.crash();

    const second = closeAfterTest(await t.reopen());
    expect(existsSync(`/proc/${pid}`)).toBe(true);
    expect(t.netns.links()).not.toContain(leftoverTap);
    expect(existsSync(`${t.runDir}/:ghost.img`)).toBe(false);
    expect(existsSync(`${t.runDir}/fifo/:ghost`)).toBe(false);
    expect((await stat(`${t.runDir}/fifo`)).mode & 0o777).toBe(0o700);
    expect(existsSync(`/proc/${stranger.pid}`)).toBe(true);
    stranger.kill();
    // ...and the stored unikernel runs on, exactly once, with what it owns.
    expect(second.engine.running).toEqual([':keep']);
    expect(second.engine.pidOf(name(':keep'))).toBe(pid);
    expect(await artefacts(second)).toBe(owned);
    await waitForLine(second.hub, ':keep', 'petrel-canary k');
  });

  it('a block removal interrupted by a crash is undone; leftover temporary files are removed', async () => {
    const t = closeAfterTest(await makeEngine());
    const policy = unwrap(makePolicy({ vms: 5, memory: 64, cpuids: [0], block: 10, bridges: [] }));
    await t.run('team:', { type: 'policy-add', policy });
    expect(replyText(await t.run('team:disk', { type: 'block-add', size: 2 }))).toBe('added block device');
    await t.engine.shutdown();
    // The crash: removeBlockFile had set the file aside, the removal was never confirmed.
    const blockDir = `${t.stateDir}/block`;
    const { rename } = await import('node:fs/promises');
    await rename(`${blockDir}/team:disk`, `${blockDir}/~team:disk.4242-0123456789ab`);
    await writeFile(`${blockDir}/~set.4242.1700000000000`, 'half an upload');
    await writeFile(`${t.stateDir}/.state.petrel-tmp-4242-0123456789ab`, 'half a state file');
    await writeFile(`${t.runDir}/.x.img.petrel-tmp-4242-0123456789ab`, 'half an image');

    const second = closeAfterTest(await t.reopen());
    expect(T.findBlock(second.engine.tree, name('team:disk'))).toEqual({ size: 2, inUse: false });
    const { readdir } = await import('node:fs/promises');
    expect((await readdir(blockDir)).sort()).toEqual(['team:disk']);
    expect((await readdir(t.stateDir)).filter((f) => f.includes('petrel-tmp'))).toEqual([]);
    expect((await readdir(t.runDir)).filter((f) => f.includes('petrel-tmp'))).toEqual([]);
  });

  it('an undecodable state file is fatal and names the problem', async () => {
    const t = closeAfterTest(await makeEngine());
    await t.engine.shutdown();
    await writeFile(`${t.stateDir}/petrel.state`, Buffer.from([0x30, 0x03, 0x01]));
    await expect(t.reopen()).rejects.toThrow(/restore failed: bailing out: /);
  });
});

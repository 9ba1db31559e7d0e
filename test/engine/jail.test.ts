// Jailed tenders through the engine (issue 22): each runs under its own id, which owns its block
// file and taps only while it runs; adoption keeps the id; a start hands back block files that a
// crash left owned by a jail id; signals reach an spt tender as they do unjailed.

import { execFileSync, spawnSync } from 'node:child_process';
import { chownSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { discoverCgroups } from '../../src/host/jail.js';
import { claimHolder, DEFAULT_CLAIMS_DIR } from '../../src/host/jail-claims.js';
import { unwrap } from '../../src/resources/errors.js';
import { cgroupLimits, DEFAULT_ID_RANGE } from '../../src/resources/jail.js';
import { makePolicy } from '../../src/resources/policy.js';
import { enginesClosedAfterEach } from './each.js';
import { build, canaryBlkImage, canaryImage, canaryNetImage, sptCanary, testKvmDevice } from './guest.js';
import { canaryConfig, createCommand, makeEngine, name, replyText, until, waitForLine } from './harness.js';

const engines = enginesClosedAfterEach();

const uidOf = (pid: number) =>
  Number(/^Uid:\s+(\d+)/mu.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
const inRange = (id: number) => id >= DEFAULT_ID_RANGE.first && id <= DEFAULT_ID_RANGE.last;

describe.skipIf(process.env.PETREL_TEST_JAIL === '0')('a jailed tender', () => {
  it('owns its block file and tap only while it runs; its id, claim and ownership are gone after', async () => {
    const t = await makeEngine();
    engines.push(t);
    const policy = unwrap(makePolicy({ vms: 2, memory: 64, cpuids: [0], block: 10, bridges: ['br0'] }));
    expect(replyText(await t.run('team:', { type: 'policy-add', policy }))).toBe('added policy');
    expect(replyText(await t.run('team:disk', { type: 'block-add', size: 2 }))).toBe('added block device');
    const block = `${t.stateDir}/block/team:disk`;
    const config = await canaryConfig(canaryBlkImage, ['wait', 'b'], {
      blocks: [{ device: 'storage', hostDevice: 'disk', sectorSize: null }],
    });
    expect(replyText(await t.run('team:vm', createCommand(config)))).toBe('created unikernel');
    await waitForLine(t.hub, 'team:vm', 'petrel-canary b');
    const pid = t.engine.pidOf(name('team:vm')) as number;
    const id = uidOf(pid);
    expect(inRange(id)).toBe(true);
    expect(statSync(block)).toMatchObject({ uid: id, gid: id });
    expect(claimHolder(DEFAULT_CLAIMS_DIR, id)).not.toBeNull();
    // Its /dev/kvm is a node of the configured KVM device's number (here the tests' own device:
    // the host's /dev/kvm, or the double of guest.ts), made for it alone.
    const kvm = statSync(`/proc/${pid}/root/dev/kvm`);
    expect(kvm.isCharacterDevice()).toBe(true);
    expect({ rdev: kvm.rdev, uid: kvm.uid, mode: kvm.mode & 0o777 }).toEqual({
      rdev: statSync(testKvmDevice).rdev,
      uid: id,
      mode: 0o600,
    });
    // In its own cgroups, the whole process (the jailer joins them by its one thread): every
    // controller the host has gives the tender the directory of its id.
    const layout = (await discoverCgroups()).layout;
    const controllers = cgroupLimits(layout);
    const joined = readFileSync(`/proc/${pid}/cgroup`, 'utf8');
    for (const controller of controllers) {
      const line = joined
        .split('\n')
        .find((l) =>
          layout.version === 2 ? l.startsWith('0::') : l.split(':')[1]?.split(',').includes(controller),
        );
      expect(line, `${controller} in ${joined}`).toMatch(new RegExp(`/petrel-tenders/${id}$`, 'u'));
    }
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      expect(readFileSync(`/proc/${pid}/task/${task}/cgroup`, 'utf8')).toBe(joined);
    }

    const net = await canaryConfig(canaryNetImage, ['wait', 'n'], {
      bridges: [{ netif: 'service', bridge: 'br0', mac: null }],
    });
    expect(replyText(await t.run('team:net', createCommand(net)))).toBe('created unikernel');
    await waitForLine(t.hub, 'team:net', 'petrel-canary n');
    const netId = uidOf(t.engine.pidOf(name('team:net')) as number);
    expect(netId).not.toBe(id);
    const taps = execFileSync('ip', ['-n', t.netns.name, '-d', 'link', 'show', 'type', 'tun'], {
      encoding: 'utf8',
    });
    expect(taps).toContain(`user ${netId} group ${netId}`);

    for (const vm of ['team:vm', 'team:net'])
      expect(replyText(await t.run(vm, { type: 'unikernel-destroy' }))).toBe('destroyed unikernel');
    expect(statSync(block)).toMatchObject({ uid: 0, gid: 0 });
    expect(claimHolder(DEFAULT_CLAIMS_DIR, id)).toBeNull();
    expect(claimHolder(DEFAULT_CLAIMS_DIR, netId)).toBeNull();
  });

  it('binds the one stored file of an image into every jail: a later create of it leaves that file linked', async () => {
    // petrel-jail opens each file, then binds it from that descriptor, and the kernel refuses to
    // bind a file no longer linked (ENOENT): a create that renamed its new copy of the image over
    // the stored one failed (exit 125) any jail of that image then between its open and its bind.
    const t = await makeEngine();
    engines.push(t);
    const config = await canaryConfig(canaryImage, ['wait', 'i']);
    for (const vm of [':one', ':two']) {
      expect(replyText(await t.run(vm, createCommand(config)))).toBe('created unikernel');
      await waitForLine(t.hub, vm, 'petrel-canary i');
    }
    const [digest] = readdirSync(`${t.stateDir}/images`);
    const stored = statSync(`${t.stateDir}/images/${digest}`);
    for (const vm of [':one', ':two']) {
      const pid = t.engine.pidOf(name(vm)) as number;
      expect(statSync(`/proc/${pid}/root${t.runDir}/${vm}.img`).ino, vm).toBe(stored.ino);
    }
  });

  it('names what petrel-jail said in the log line of a jail that could not be made (exit 125)', async () => {
    const logged: { msg?: string; limit?: string; jailError?: string }[] = [];
    const log = pino({ level: 'info' }, { write: (line: string) => void logged.push(JSON.parse(line)) });
    const t = await makeEngine({ log });
    engines.push(t);
    // A CPU this host does not have: the jail cannot pin its tender there (a real set-up failure).
    const config = await canaryConfig(canaryImage, ['wait', 'x'], { cpuids: [4095] });
    expect(replyText(await t.run(':nocpu', createCommand(config)))).toBe('created unikernel');
    await until(() => logged.some((l) => l.msg === 'unikernel exited'));
    const exited = logged.find((l) => l.msg === 'unikernel exited');
    expect(exited?.limit).toBe('jail set-up (its console says why)');
    // The cpuset cgroup refuses the CPU first (ERANGE); without one, the affinity call (EINVAL).
    expect(exited?.jailError).toMatch(/^petrel-jail: (write \S+\/cpuset\.cpus|sched_setaffinity 4095): \S/u);
  });

  it('takes the KVM device from kvmDevice: with none there, each create is made and its jail fails at once, naming it', async () => {
    const logged: { msg?: string; name?: string; limit?: string; jailError?: string }[] = [];
    const log = pino({ level: 'info' }, { write: (line: string) => void logged.push(JSON.parse(line)) });
    const missing = '/nonexistent/petrel-test/kvm';
    const t = await makeEngine({ log, kvmDevice: missing });
    engines.push(t);
    // A tender that is gone before its start time can be read is a race the engine must win
    // every time: each create is committed, and each exit says why.
    const names = Array.from({ length: 10 }, (_, i) => `:nokvm${i}`);
    for (const vm of names) {
      const config = await canaryConfig(canaryImage, ['wait', 'k']);
      expect(replyText(await t.run(vm, createCommand(config))), vm).toBe('created unikernel');
    }
    await until(() => logged.filter((l) => l.msg === 'unikernel exited').length === names.length);
    for (const exited of logged.filter((l) => l.msg === 'unikernel exited'))
      expect(exited, exited.name).toMatchObject({
        limit: 'jail set-up (its console says why)',
        jailError: `petrel-jail: KVM device ${missing}: No such file or directory`,
      });
    // An spt tender's jail needs no KVM device: the same engine runs it.
    expect(replyText(await t.run(':spt', createCommand(await canaryConfig(sptCanary, ['wait', 's']))))).toBe(
      'created unikernel',
    );
    await waitForLine(t.hub, ':spt', 'petrel-canary s');
  });

  it('is adopted with its id; a block file a crash left with a jail id goes back to root', async () => {
    const t = await makeEngine();
    engines.push(t);
    const policy = unwrap(makePolicy({ vms: 2, memory: 64, cpuids: [0], block: 10, bridges: [] }));
    await t.run('team:', { type: 'policy-add', policy });
    expect(replyText(await t.run('team:stale', { type: 'block-add', size: 1 }))).toBe('added block device');
    expect(
      replyText(await t.run('team:vm', createCommand(await canaryConfig(canaryImage, ['wait', 'a'])))),
    ).toBe('created unikernel');
    // Jailed once the guest speaks (before its exec the pid is petrel-jail's, still root).
    await waitForLine(t.hub, 'team:vm', 'petrel-canary a');
    const pid = t.engine.pidOf(name('team:vm')) as number;
    const id = uidOf(pid);
    expect(inRange(id)).toBe(true);
    await t.crash();
    // What a crash between chown and release leaves: a block file owned by a jail id.
    const stale = `${t.stateDir}/block/team:stale`;
    chownSync(stale, DEFAULT_ID_RANGE.last - 1, DEFAULT_ID_RANGE.last - 1);
    const second = await t.reopen();
    engines.push(second);
    expect(second.engine.pidOf(name('team:vm'))).toBe(pid);
    expect(uidOf(pid)).toBe(id);
    expect(statSync(stale).uid).toBe(0);
    // The adopted id is held: the next tender gets another.
    expect(
      replyText(await second.run('team:two', createCommand(await canaryConfig(canaryImage, ['wait', 'c'])))),
    ).toBe('created unikernel');
    await waitForLine(second.hub, 'team:two', 'petrel-canary c');
    expect(uidOf(second.engine.pidOf(name('team:two')) as number)).not.toBe(id);
  });

  it('a tender an unjailed petreld started is adopted as it is; the next start is jailed', async () => {
    const t = await makeEngine({ jail: false });
    engines.push(t);
    expect(
      replyText(await t.run(':old', createCommand(await canaryConfig(canaryImage, ['wait', 'o'])))),
    ).toBe('created unikernel');
    await waitForLine(t.hub, ':old', 'petrel-canary o');
    const pid = t.engine.pidOf(name(':old')) as number;
    expect(uidOf(pid)).toBe(0);
    await t.crash();
    const second = await t.reopen({ jail: true });
    engines.push(second);
    expect(second.engine.pidOf(name(':old'))).toBe(pid);
    expect(uidOf(pid)).toBe(0);
    expect(
      replyText(await second.run(':new', createCommand(await canaryConfig(canaryImage, ['wait', 'n'])))),
    ).toBe('created unikernel');
    await waitForLine(second.hub, ':new', 'petrel-canary n');
    expect(inRange(uidOf(second.engine.pidOf(name(':new')) as number))).toBe(true);
    // Destroyed, the unjailed one releases what it had, and nothing of a jail.
    expect(replyText(await second.run(':old', { type: 'unikernel-destroy' }))).toBe('destroyed unikernel');
  });

  it('spt: SIGTERM still ends the guest at once with the signal (no PID namespace)', async () => {
    const t = await makeEngine();
    engines.push(t);
    expect(replyText(await t.run(':spt', createCommand(await canaryConfig(sptCanary, ['wait', 's']))))).toBe(
      'created unikernel',
    );
    await waitForLine(t.hub, ':spt', 'petrel-canary s');
    const pid = t.engine.pidOf(name(':spt')) as number;
    expect(inRange(uidOf(pid))).toBe(true);
    const stopped = t.engine.shutdownOf(name(':spt'));
    const at = Date.now();
    process.kill(pid, 'SIGTERM');
    // Killed by the signal itself (status 143 to a shell), not by a SIGKILL after a grace.
    expect(await stopped).toMatchObject({ code: null, signal: 'SIGTERM' });
    expect(Date.now() - at).toBeLessThan(1_500);
    await until(() => !t.engine.running.includes(':spt'), 5_000);
  });
});

// petrel-jail on its own: what it makes of --kvm before it builds anything (it fails, exit 125,
// with one line naming the device, before any namespace or cgroup is made).
describe('petrel-jail --kvm', () => {
  const jail = path.join(build, 'petrel-jail');
  const run = (args: string[]) =>
    spawnSync(jail, ['--id', '99998', ...args, '--', '/bin/true'], { encoding: 'utf8' });

  it.each([
    [
      ['--kvm', '/nonexistent/petrel-test/kvm'],
      'KVM device /nonexistent/petrel-test/kvm: No such file or directory',
    ],
    [['--kvm', '/etc/hostname'], 'KVM device (not a character device) /etc/hostname: No such device'],
    [['--kvm', 'dev/kvm'], 'usage dev/kvm: invalid'],
    // The device is petreld's kvmDevice, never a name petrel-jail maps to a path of its own.
    [['--dev', 'kvm'], 'usage kvm: invalid'],
  ])('%j: refused, naming it', (args, said) => {
    const r = run(args);
    expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 125, stderr: `petrel-jail: ${said}\n` });
  });
});

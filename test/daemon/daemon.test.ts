// petreld in-process: preflight, restore, sockets and the boot canary, then local clients.
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readdir, readFile, rm, statfs, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Daemon } from '../../src/daemon/daemon.js';
import { unwrap } from '../../src/resources/errors.js';
import { makePolicy } from '../../src/resources/policy.js';
import { readSolo5Notes } from '../../src/tender/elf.js';
import { probeHost } from '../../src/tender/probe.js';
import { build, canaryImage } from '../engine/guest.js';
import { canaryConfig, createCommand, makeNetns, storedState } from '../engine/harness.js';
import { commandFrame, open, request, said, subscribeCommand } from './client.js';
import { startDaemon } from './start.js';

let dir: string;
let netns: ReturnType<typeof makeNetns>;
let daemon: Daemon | undefined;

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'petreld-'));
  netns = makeNetns();
});
afterEach(async () => {
  await daemon?.stop({ stopGuests: true });
  daemon = undefined;
  netns.destroy();
  await rm(dir, { recursive: true, force: true });
});

async function start(extra: Record<string, string> = {}, canary = canaryImage) {
  const started = await startDaemon(dir, netns.name, extra, { hvt: canary });
  daemon = started.daemon;
  return started.started;
}

const sock = (name: string) => path.join(dir, 'run', 'util', name);

describe('petreld start-up', () => {
  it('passes preflight, boots the canary, writes node.json and serves the local sockets', async () => {
    const started = unwrap(await start());
    expect(started.canaries.map((c) => c.runtime)).toEqual(['hvt']);
    expect(started.canaries[0]?.bootMs).toBeGreaterThan(0);
    expect(started.readyMs).toBeGreaterThan(0);
    const node = JSON.parse(await readFile(path.join(dir, 'run', 'node.json'), 'utf8'));
    expect(node.canaries[0].bootMs).toBe(started.canaries[0]?.bootMs);
    expect(node.report.tun).toBe(true);
    // The canary is gone and was never persisted, nor is its image kept in the store.
    expect(daemon?.engine.running).toEqual([]);
    expect(existsSync(path.join(dir, 'state', 'petrel.state'))).toBe(true);
    expect((await storedState(path.join(dir, 'state'))).unikernels).toEqual([]);
    expect(await readdir(path.join(dir, 'state', 'images'))).toEqual([]);

    const policy = unwrap(makePolicy({ vms: 2, memory: 64, cpuids: [0], block: null, bridges: [] }));
    // policy add keeps the connection for the next command (semantics §2.2)
    const session = open(sock('vmmd.sock'), commandFrame('alice:', { type: 'policy-add', policy }));
    await session.waitFor(1);
    session.write(commandFrame('alice:vm', createCommand(await canaryConfig(canaryImage, ['wait', 'hi']))));
    await session.closed;
    expect(session.messages.map(said)).toEqual(['added policy', 'created unikernel']);

    const watch = open(
      sock('console.sock'),
      commandFrame('alice:vm', subscribeCommand({ kind: 'count', count: 10 })),
    );
    await watch.waitFor(2);
    expect(said(watch.messages[0])).toBe('subscribed');
    const lines = () =>
      watch.messages.flatMap((m) =>
        m.payload.kind === 'data' && m.payload.data.type === 'console'
          ? [Buffer.from(m.payload.data.line).toString()]
          : [],
      );
    const deadline = Date.now() + 5000;
    while (!lines().includes('petrel-canary hi') && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    expect(lines()).toContain('petrel-canary hi');
    // Data frames carry the full name and sequence 0.
    expect(watch.messages[1]?.header.sequence).toBe(0n);
    watch.close();

    const info = await request(sock('vmmd.sock'), 'alice:', { type: 'unikernel-info', release: '2.7' });
    expect(
      info[0]?.payload.kind === 'reply' &&
        info[0].payload.reply.type === 'unikernel-info' &&
        info[0].payload.reply.entries.map((e) => e.name.label),
    ).toEqual(['vm']);
    expect((await request(sock('vmmd.sock'), 'alice:vm', { type: 'unikernel-destroy' })).map(said)).toEqual([
      'destroyed unikernel',
    ]);
    expect(
      (await request(sock('console.sock'), 'alice:', { type: 'console-list-inactive' }))[0]?.payload,
    ).toMatchObject({ kind: 'reply', reply: { type: 'consoles' } });
  });

  it('--runtimes spt: boots the ABI-2 spt canary under the bundled petrel-spt, timed by the daemon', async () => {
    const t0 = Date.now();
    const started = await startDaemon(dir, netns.name, { runtimes: 'spt' });
    daemon = started.daemon;
    const report = unwrap(started.started);
    expect(report.canaries.map((c) => c.runtime)).toEqual(['spt']);
    // Measured by the daemon from its create command to the canary's line (src/daemon/canary.ts).
    const bootMs = report.canaries[0]?.bootMs ?? 0;
    expect(bootMs).toBeGreaterThan(0);
    expect(bootMs).toBeLessThan(Date.now() - t0);
    const node = JSON.parse(await readFile(path.join(dir, 'run', 'node.json'), 'utf8'));
    expect(node.report.tenders).toContainEqual({
      kind: 'spt',
      path: path.join(build, 'petrel-spt'),
      version: expect.stringMatching(/^petrel-spt tender, version v/u),
      abi: 2,
    });
    // The canary it booted is a solo5 spt unikernel of ABI version 2.
    const notes = unwrap(readSolo5Notes(await readFile(path.join(build, 'canary.spt'))));
    expect(notes.abi).toMatchObject({ target: 2, version: 2 });
  });

  it('serves Prometheus metrics on loopback when asked: usage per path, command latency, canary', async () => {
    const started = unwrap(await start({ metricsListen: '127.0.0.1:0' }));
    expect(started.metrics).not.toBeNull();
    const policy = unwrap(makePolicy({ vms: 2, memory: 64, cpuids: [0], block: null, bridges: [] }));
    // A successful policy add keeps the connection open for the next command.
    const session = open(sock('vmmd.sock'), commandFrame('team:', { type: 'policy-add', policy }));
    await session.waitFor(1);
    session.write(
      commandFrame('team:vm', createCommand(await canaryConfig(canaryImage, ['wait', 'm'], { memory: 8 }))),
    );
    await session.closed;
    expect(session.messages.map(said)).toEqual(['added policy', 'created unikernel']);
    const text = await (await fetch(`http://127.0.0.1:${started.metrics?.port}/metrics`)).text();
    expect(text).toMatch(/^petrel_unikernels_running\{path="team:"\} 1$/m);
    expect(text).toMatch(/^petrel_memory_used_mib\{path="team:"\} 8$/m);
    expect(text).toMatch(
      /^petrel_command_duration_seconds_count\{command="unikernel-create",outcome="done"\} 1$/m,
    );
    expect(text).toMatch(/^petrel_canary_boot_seconds\{runtime="hvt"\} [0-9.e-]+$/m);
    // The state directory's free bytes, as statfs says them (within what moved meanwhile).
    const free = Number(/^petrel_state_free_bytes (\d+)$/m.exec(text)?.[1]);
    const fs = await statfs(dir);
    expect(Math.abs(free - Number(fs.bavail) * Number(fs.bsize))).toBeLessThan(64 * 1024 * 1024);
    expect((await fetch(`http://127.0.0.1:${started.metrics?.port}/other`)).status).toBe(404);
  });

  it('local sockets: idle connections give way and time out; a subscription and a request do not', async () => {
    unwrap(await start({ localIdleTimeout: '600ms', maxLocalConnections: '3' }));
    const subscriber = open(
      sock('console.sock'),
      commandFrame('team:vm', subscribeCommand({ kind: 'count', count: 5 })),
    );
    await subscriber.waitFor(1);
    const idle = () => {
      const socket = connect(sock('vmmd.sock'));
      socket.on('error', () => {});
      return new Promise<typeof socket>((resolve) => socket.once('connect', () => resolve(socket)));
    };
    const first = await idle();
    const second = await idle();
    // The cap is reached: the next one takes the place of the idlest, not the subscriber's.
    const third = await idle();
    await new Promise<void>((resolve) => first.once('close', () => resolve()));
    expect(second.destroyed).toBe(false);
    // Past the idle timeout, the idle ones are closed; the subscription stays.
    await Promise.all([second, third].map((s) => new Promise((resolve) => s.once('close', resolve))));
    await new Promise((resolve) => setTimeout(resolve, 100));
    let subscriberClosed = false;
    void subscriber.closed.then(() => {
      subscriberClosed = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(subscriberClosed).toBe(false);
    const info = await request(sock('vmmd.sock'), ':', { type: 'unikernel-info', release: '2.7' });
    expect(info.map((w) => w.payload.kind)).toEqual(['reply']);
    subscriber.close();
  });

  it('the metrics listener sheds a connection that sends nothing, and /metrics counts it', async () => {
    const started = unwrap(await start({ metricsListen: '127.0.0.1:0', firstByteTimeout: '300ms' }));
    const port = started.metrics?.port as number;
    const began = performance.now();
    await new Promise<void>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => {});
      socket.on('close', () => resolve());
    });
    expect(performance.now() - began).toBeGreaterThanOrEqual(250);
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(text).toMatch(
      /^petrel_admission_evicted_total\{listener="metrics",reason="first-byte-timeout"\} 1$/m,
    );
    // The request just served settled its connection; the local sockets are listed too.
    expect(text).toMatch(/^petrel_admission_pending\{listener="local"\} \d+$/m);
  });

  it('refuses to start when the canary image is corrupt', async () => {
    const bad = path.join(dir, 'corrupt.hvt');
    await writeFile(bad, 'not an ELF');
    const started = await start({}, bad);
    expect(started.ok).toBe(false);
    if (!started.ok) expect(started.error.message).toMatch(/^hvt boot canary failed: .*image/);
    expect(existsSync(path.join(dir, 'run', 'node.json'))).toBe(false);
  });

  it('refuses to start when the tender hangs past the deadline', async () => {
    const hang = path.join(dir, 'hang-hvt');
    await writeFile(
      hang,
      `#!/bin/sh\n# petrel-jail-allow: /usr/bin/sleep\ncase "$1" in --version) exec '${build}/petrel-hvt' --version;; esac\nexec sleep 30\n`,
    );
    await chmod(hang, 0o755);
    const started = await start({ tenderHvt: hang, canaryDeadline: '500ms' });
    expect(started.ok).toBe(false);
    if (!started.ok)
      expect(started.error.message).toBe(
        'hvt boot canary failed: no "petrel-canary <nonce>" line within 500 ms (no console output)',
      );
  });

  it('refuses to start when the console line does not carry the nonce', async () => {
    const liar = path.join(dir, 'liar-hvt');
    await writeFile(
      liar,
      `#!/bin/sh\n# petrel-jail-allow: /usr/bin/sleep\ncase "$1" in --version) exec '${build}/petrel-hvt' --version;; esac\necho petrel-canary 0000000000000000\nexec sleep 30\n`,
    );
    await chmod(liar, 0o755);
    const started = await start({ tenderHvt: liar, canaryDeadline: '500ms' });
    expect(started.ok).toBe(false);
    if (!started.ok) expect(started.error.message).toContain('not carrying the nonce');
  });

  it('runtimes auto on a host whose /dev/kvm does not open: hosts spt, boots its canary, refuses hvt', async () => {
    // The real probe: the fake-KVM test double would answer yes whatever the device.
    const started = await startDaemon(
      dir,
      netns.name,
      { runtimes: 'auto', kvmDevice: path.join(dir, 'no-kvm') },
      undefined,
      probeHost,
    );
    daemon = started.daemon;
    const report = unwrap(started.started);
    expect(report.canaries.map((c) => c.runtime)).toEqual(['spt']);
    const node = JSON.parse(await readFile(path.join(dir, 'run', 'node.json'), 'utf8'));
    expect(node.runtimes).toEqual(['spt']);
    const replies = await request(
      sock('vmmd.sock'),
      ':vm',
      createCommand(await canaryConfig(canaryImage, ['wait', 'x'])),
    );
    expect(replies.map(said)).toEqual(['Failure: this node does not run hvt unikernels (--runtimes spt)']);
  });

  it('a node with runtimes none boots no canary and refuses to host unikernels', async () => {
    const started = unwrap(await start({ runtimes: 'none' }));
    expect(started.canaries).toEqual([]);
    const replies = await request(
      sock('vmmd.sock'),
      ':vm',
      createCommand(await canaryConfig(canaryImage, ['wait', 'x'])),
    );
    expect(replies.map(said)).toEqual(['Failure: this node does not run hvt unikernels (--runtimes none)']);
  });
});

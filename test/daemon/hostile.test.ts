// A compromised tender, jailed (issue 22): native/build/hostile-tender is given as the tender
// of a real petreld and, for one tenant's unikernel, tries every way out it knows before it
// runs the guest; every one must fail, and another tenant's unikernel must run on unharmed.
// The second tenant's guest runs under the same program (it execs the real tender at once).

import { execFile } from 'node:child_process';
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { readdir, symlink } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { claimHolder, DEFAULT_CLAIMS_DIR } from '../../src/host/jail-claims.js';
import { checkPidRecord, readPidRecords } from '../../src/host/pidrecord.js';
import { unwrap } from '../../src/resources/errors.js';
import { DEFAULT_ID_RANGE, TENDER_OVERHEAD_MIB } from '../../src/resources/jail.js';
import { makePolicy } from '../../src/resources/policy.js';
import {
  sptCanaryBlk as blkImage,
  build,
  canaryImage,
  canaryNetImage,
  kvmUsable,
  repo,
  sptCanary,
  sptCanaryNet,
} from '../engine/guest.js';
import { canaryConfig, createCommand } from '../engine/harness.js';
import { type Petreld, startPetreld } from '../tls/petreld.js';
import { commandFrame, type Exchange, open, request, said } from './client.js';

const hostile = path.join(build, 'hostile-tender');
const cli = path.join(repo, 'dist', 'src', 'cli', 'petrel.cjs');

/** Every attempt the hostile tender reports (its `hostile: NAME:` lines). */
const ATTEMPTS = [
  'root',
  'write-etc',
  'tls-key',
  'image-store',
  'stored-image',
  'state-dir',
  'signal-victim',
  'ptrace-victim',
  'victim-proc-environ',
  'victim-proc-maps',
  'victim-proc-mem',
  'victim-proc-cmdline',
  'vmmd-socket',
  'abstract-socket',
  'create-interface-tun',
  'create-interface-netlink',
  'udp-netlink-length',
  'clone3-process',
  'kvm',
  'fork-600',
  'touch-1GiB',
  'raise-as',
  'raise-nproc',
  'raise-nofile',
  'raise-fsize',
  'raise-core',
  'change-uid',
  'loopback-tcp',
  'loopback-udp',
  'user-namespace',
];

let petreld: Petreld | undefined;
const servers: (Server | UdpSocket)[] = [];
afterEach(async () => {
  await petreld?.stop();
  petreld = undefined;
  for (const server of servers.splice(0)) server.close();
});

function consoleOf(p: Petreld, name: string): { lines: () => string[]; exchange: Exchange } {
  const exchange = open(
    path.join(p.runDir, 'util', 'console.sock'),
    commandFrame(name, { type: 'console-subscribe', release: '2.1', select: { kind: 'count', count: 200 } }),
  );
  const lines = () =>
    exchange.messages.flatMap((m) =>
      m.payload.kind === 'data' && m.payload.data.type === 'console'
        ? [Buffer.from(m.payload.data.line).toString()]
        : [],
    );
  return { lines, exchange };
}

async function until(check: () => boolean, what: string, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const uidOf = (pid: number) =>
  Number(/^Uid:\s+(\d+)/mu.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);

async function listeners(): Promise<{ port: number; abstract: string; reached: () => number }> {
  let reached = 0;
  const tcp = createServer((s) => {
    reached++;
    s.destroy();
  });
  await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve));
  const port = (tcp.address() as { port: number }).port;
  const udp = createSocket('udp4');
  udp.on('message', () => {
    reached++;
  });
  await new Promise<void>((resolve) => udp.bind(port, '127.0.0.1', resolve));
  const abstract = `petrel-hostile-${process.pid}`;
  const unix = createServer((s) => {
    reached++;
    s.destroy();
  });
  await new Promise<void>((resolve) => unix.listen(`\0${abstract}`, resolve));
  servers.push(tcp, udp, unix);
  return { port, abstract, reached: () => reached };
}

/**
 * Mallory's tender tries every way out while a victim's unikernel runs. `networked`: mallory's
 * unikernel has an interface on a bridge, so its jail holds /dev/net/tun and lets it read the
 * routing tables (as solo5's tenders need): no more may come of either.
 */
async function attack(kind: 'spt' | 'hvt', networked = false): Promise<void> {
  const tender = kind === 'spt' ? hostile : path.join(path.dirname(hostile), 'hostile-hvt');
  if (kind === 'hvt' && !existsSync(tender)) await symlink(hostile, tender).catch(() => undefined);
  const image = kind === 'spt' ? sptCanary : canaryImage;
  const real = path.join(build, kind === 'spt' ? 'petrel-spt' : 'petrel-hvt');
  const services = await listeners();
  petreld = await startPetreld(
    {},
    {
      runtimes: kind,
      [kind === 'spt' ? 'tenderSpt' : 'tenderHvt']: tender,
      jail: 'true',
      jailAllow: real,
      ...(networked ? { bridges: 'br0' } : {}),
    },
  );
  const p = petreld;
  const vmmd = path.join(p.runDir, 'util', 'vmmd.sock');
  for (const tenant of ['victim:', 'mallory:']) {
    const bridges = networked && tenant === 'mallory:' ? ['br0'] : [];
    const policy = unwrap(makePolicy({ vms: 1, memory: 64, cpuids: [0], block: null, bridges }));
    // A policy add keeps its connection open for a next command.
    const session = open(vmmd, commandFrame(tenant, { type: 'policy-add', policy }));
    expect((await session.waitFor(1)).map(said)).toEqual(['added policy']);
    session.close();
  }
  const netImage = kind === 'spt' ? sptCanaryNet : canaryNetImage;
  const onBridge = { bridges: [{ netif: 'service', bridge: 'br0', mac: null }] };
  const create = async (name: string, args: string[], withNet = false) => {
    const config = await canaryConfig(withNet ? netImage : image, args, {
      memory: 32,
      ...(withNet ? onBridge : {}),
    });
    return (await request(vmmd, name, createCommand(config))).map(said);
  };
  expect(await create('victim:vm', ['sleep', '60'])).toEqual(['created unikernel']);
  const victimConsole = consoleOf(p, 'victim:vm');
  await until(() => victimConsole.lines().some((l) => l.includes('tick 1')), 'the victim to tick');
  const records = unwrap(readPidRecords(p.runDir)).records;
  const victim = records.find((r) => r.name.label === 'vm' && r.name.path[0] === 'victim');
  expect(victim).toBeDefined();
  const victimPid = victim?.pid ?? 0;

  const stored = await readdir(path.join(p.stateDir, 'images'));
  const args = [
    'hostile:run',
    `hostile:key=${path.join(p.ca, 'server.key')}`,
    `hostile:store=${path.join(p.stateDir, 'images')}`,
    `hostile:image=${path.join(p.stateDir, 'images', stored[0] ?? 'none')}`,
    `hostile:state=${p.stateDir}`,
    `hostile:sock=${vmmd}`,
    `hostile:victim=${victimPid}`,
    `hostile:port=${services.port}`,
    `hostile:abstract=${services.abstract}`,
    'wait',
    'mallory-ran',
  ];
  expect(await create('mallory:vm', args, networked)).toEqual(['created unikernel']);
  const mallory = consoleOf(p, 'mallory:vm');
  await until(() => mallory.lines().includes('petrel-canary mallory-ran'), "mallory's guest to run");
  const reports = mallory.lines().filter((l) => /^hostile: [\w-]+: /u.test(l));
  const outcome = new Map(reports.map((l) => [l.split(': ')[1], l]));
  expect([...outcome.keys()].sort()).toEqual([...ATTEMPTS].sort());
  // An hvt jail holds /dev/kvm: a node made for it, the host's stays root 0600.
  const allowed = kind === 'hvt' ? ['kvm'] : [];
  if (kind === 'hvt') expect(outcome.get('kvm')).toMatch(/: ESCAPED \(\/dev\/kvm: opened\)/u);
  for (const name of ATTEMPTS) {
    if (allowed.includes(name)) continue;
    expect(outcome.get(name), name).toMatch(/: blocked \(/u);
  }
  expect(mallory.lines()).toContain(`hostile: done, ${allowed.length} escaped`);
  // Its limits, soft = hard, as the jail set them for a 32 MiB guest.
  const as = (32 + TENDER_OVERHEAD_MIB) * 1024 * 1024;
  const nproc = kind === 'hvt' ? 4 : 2;
  const nofile = 64 + (networked ? 1 : 0);
  expect(mallory.lines()).toContain(
    `hostile: limits as=${as}/${as} nproc=${nproc}/${nproc} nofile=${nofile}/${nofile} fsize=1048576/1048576 core=0/0`,
  );

  // Nothing reached: the host, the other tenant, the services.
  expect(services.reached()).toBe(0);
  expect(existsSync('/etc/petrel-hostile')).toBe(false);
  const stillAlive = checkPidRecord(victim as NonNullable<typeof victim>);
  expect(stillAlive).toEqual({ ok: true, value: 'alive' });
  const ticks = victimConsole.lines().length;
  await until(() => victimConsole.lines().length > ticks, 'the victim to tick on');
  const malloryRecord = unwrap(readPidRecords(p.runDir)).records.find((r) => r.name.path[0] === 'mallory');
  const ids = [uidOf(victimPid), uidOf(malloryRecord?.pid ?? 0)];
  expect(ids[0]).not.toBe(ids[1]);
  for (const id of ids)
    expect(id >= DEFAULT_ID_RANGE.first && id <= DEFAULT_ID_RANGE.last, `id ${id}`).toBe(true);
  // petrel node info says which limits are in force.
  const node = JSON.parse(readFileSync(path.join(p.runDir, 'node.json'), 'utf8'));
  expect(node.jail).toMatchObject({ enabled: true, ids: '65536-99999' });
  expect(node.jail.limits).toEqual(expect.arrayContaining(['RLIMIT_NPROC', 'RLIMIT_CORE=0']));

  // Each id is claimed host-wide by this petreld's holder while its tender runs.
  for (const id of ids) expect(claimHolder(DEFAULT_CLAIMS_DIR, id)).not.toBeNull();

  // Destroyed, a jail leaves nothing: no process, no cgroup, no claim, the id free for the next.
  for (const name of ['mallory:vm', 'victim:vm'])
    expect((await request(vmmd, name, { type: 'unikernel-destroy' })).map(said)).toEqual([
      'destroyed unikernel',
    ]);
  victimConsole.exchange.close();
  mallory.exchange.close();
  const cgroups = readFileSync('/proc/self/cgroup', 'utf8');
  const pidsPath = /^\d+:pids:(.*)$/mu.exec(cgroups)?.[1];
  if (pidsPath !== undefined && existsSync('/sys/fs/cgroup/pids')) {
    for (const id of ids)
      expect(existsSync(path.join('/sys/fs/cgroup/pids', pidsPath, 'petrel-tenders', String(id)))).toBe(
        false,
      );
  }
}

describe('a guest beyond a limit of its jail', () => {
  it('dies alone, and its exit is logged and shown by petrel info --json with the limit', {
    timeout: 120_000,
  }, async () => {
    petreld = await startPetreld(
      {},
      { runtimes: 'spt', tenderSpt: hostile, jail: 'true', jailAllow: path.join(build, 'petrel-spt') },
    );
    const p = petreld;
    const vmmd = path.join(p.runDir, 'util', 'vmmd.sock');
    const policy = unwrap(makePolicy({ vms: 2, memory: 64, cpuids: [0], block: 4, bridges: [] }));
    const session = open(vmmd, commandFrame('team:', { type: 'policy-add', policy }));
    expect((await session.waitFor(1)).map(said)).toEqual(['added policy']);
    session.close();
    expect((await request(vmmd, 'team:disk', { type: 'block-add', size: 1 })).map(said)).toEqual([
      'added block device',
    ]);
    const storage = { blocks: [{ device: 'storage', hostDevice: 'disk', sectorSize: null }] };
    const create = async (vm: string, args: string[], blocks = false) => {
      const config = await canaryConfig(blocks ? blkImage : sptCanary, args, {
        memory: 32,
        // Restart on failure: an exit by a signal still never restarts (semantics §5.7).
        failBehaviour: { kind: 'restart', exitCodes: [] },
        ...(blocks ? storage : {}),
      });
      return (await request(vmmd, vm, createCommand(config))).map(said);
    };
    expect(await create('team:other', ['sleep', '60'])).toEqual(['created unikernel']);
    const other = consoleOf(p, 'team:other');
    await until(() => other.lines().some((l) => l.includes('tick 1')), 'the other guest to tick');
    const block = path.join(p.stateDir, 'block', 'team:disk');
    expect(await create('team:grow', [`hostile:grow=${block}`, 'wait', 'never'], true)).toEqual([
      'created unikernel',
    ]);
    await until(
      () => p.logs.some((l) => l.msg === 'unikernel exited' && l.name === 'team:grow'),
      'the exit to be logged',
    );
    const exited = p.logs.find((l) => l.msg === 'unikernel exited' && l.name === 'team:grow');
    expect(exited).toMatchObject({ exit: 'signal SIGXFSZ', limit: 'RLIMIT_FSIZE' });
    // The real client shows it: gone, why, and the limit (petreld's unikernel-exits).
    // Asynchronously: petreld runs in this process and must answer meanwhile.
    const info = (...args: string[]) =>
      new Promise<string>((resolve, reject) => {
        execFile(process.execPath, [cli, 'info', ...args, '--run-dir', p.runDir], (error, stdout, stderr) => {
          if (error !== null) reject(new Error(`petrel info ${args.join(' ')}: ${error.message} ${stderr}`));
          else if (stderr !== '') reject(new Error(`petrel info ${args.join(' ')} said: ${stderr}`));
          else resolve(stdout);
        });
      });
    const lastExit = {
      exit: 'signal SIGXFSZ',
      limit: 'RLIMIT_FSIZE',
      at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/u),
      restarts: 0,
    };
    const gone = { name: 'team:grow', state: 'dropped', reason: 'signal SIGXFSZ does not restart', lastExit };
    const shown = JSON.parse(await info('team:grow', '--json'));
    expect(shown).toEqual([gone]);
    const at = Date.parse((shown[0] as typeof gone).lastExit.at);
    expect(Math.abs(at - Date.now())).toBeLessThan(60_000);
    const team = JSON.parse(await info('team:', '--json')) as Record<string, unknown>[];
    expect(team).toEqual([
      expect.objectContaining({ name: ':other', state: 'running', lastExit: null, memory: 32 }),
      { ...gone, name: ':grow' },
    ]);
    expect(await info('team:')).toMatch(
      /\nlast exits:\nNAME +STATE +EXIT +LIMIT +EXITED +RESTARTS +THEN\n:grow +dropped +signal SIGXFSZ +RLIMIT_FSIZE +\S+Z +0 +signal SIGXFSZ does not restart\n$/u,
    );
    // The block file is as large as it was, and root's again; the other guest ticks on.
    expect(statSync(block)).toMatchObject({ size: 1024 * 1024, uid: 0 });
    const ticks = other.lines().length;
    await until(() => other.lines().length > ticks, 'the other guest to tick on');
    other.exchange.close();
  });
});

describe('a hostile tender, jailed', () => {
  it('spt: gets out no way of 30, and the other tenant runs on', { timeout: 120_000 }, async () => {
    await attack('spt');
  });

  it('spt with a network: gets out no way of 30 either, though its jail may read the routing tables', {
    timeout: 120_000,
  }, async () => {
    await attack('spt', true);
  });

  it.runIf(kvmUsable)(
    'hvt: gets out no way but its own /dev/kvm, and the other tenant runs on',
    { timeout: 120_000 },
    async () => {
      await attack('hvt');
    },
  );
});

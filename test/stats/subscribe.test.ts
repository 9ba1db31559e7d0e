// `stats subscribe` over the real stat.sock of in-process local sockets (semantics §12.2, §12.3).
// The "VMs" are STAND-INS: ordinary processes this file starts (a busy shell loop, `sleep`) and a
// tap it makes in a private namespace, reported by a fake engine source; the real engine running
// a canary is tested in daemon.test.ts.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type LocalSockets, listenLocalSockets } from '../../src/daemon/sockets.js';
import { unwrap } from '../../src/resources/errors.js';
import { type Name, printName } from '../../src/resources/name.js';
import { fsProcReader, type ProcReader, type TapAttachment } from '../../src/stats/sample.js';
import { createStatsService, type StatsHub, type StatsSource } from '../../src/stats/service.js';
import { frame } from '../../src/wire/framing.js';
import { encodeWire } from '../../src/wire/message.js';
import { commandFrame, type Exchange, open, said } from '../daemon/client.js';
import { makeEngine, type TestEngine } from '../engine/harness.js';
import { VECTORS } from '../wire/helpers.js';
import { cpuMicros, ipIn, Processes, sendFrames, sleep, statsOf, until } from './helpers.js';

const INTERVAL = 200;
const TAP = 'stap0';

let t: TestEngine;
let sockets: LocalSockets;
let service: StatsHub;
const processes = new Processes();
const exchanges: Exchange[] = [];
const vms = new Map<string, { pid: number; nets: TapAttachment[] }>();
const source: StatsSource = {
  get running() {
    return [...vms.keys()];
  },
  pidOf: (name: Name) => vms.get(printName(name))?.pid,
  netsOf: (name: Name) => vms.get(printName(name))?.nets,
};
let reads: string[] = [];
const counting: ProcReader = {
  readText: (file) => {
    reads.push(file);
    return fsProcReader.readText(file);
  },
  changeTimeNs: (file) => {
    reads.push(file);
    return fsProcReader.changeTimeNs(file);
  },
};
const warnings: string[] = [];
const log = {
  warn: (fields: Record<string, unknown>, message: string) =>
    void warnings.push(`${message} ${JSON.stringify(fields)}`),
  debug: () => undefined,
};

beforeAll(async () => {
  t = await makeEngine();
  ipIn(t.netns.name, ['tuntap', 'add', 'dev', TAP, 'mode', 'tap'], ['link', 'set', TAP, 'up']);
});
afterAll(async () => {
  await t?.close(); // removes the namespace and the tap in it
});

beforeEach(async () => {
  reads = [];
  warnings.length = 0;
  service = createStatsService({
    source,
    interval: INTERVAL,
    maxQueue: 16,
    log,
    netns: t.netns.name,
    procReader: counting,
  });
  sockets = await listenLocalSockets({
    runDir: t.runDir,
    engine: t.engine,
    hub: t.hub,
    log: pino({ level: 'silent' }),
    stats: service,
  });
});
afterEach(async () => {
  for (const e of exchanges.splice(0)) e.close();
  service.close();
  await sockets.close();
  processes.killAll();
  vms.clear();
});

function subscribe(name: string): Exchange {
  const exchange = open(sockets.paths.stats, commandFrame(name, { type: 'stats-subscribe' }, 7n));
  exchanges.push(exchange);
  return exchange;
}

describe('stats subscribe', () => {
  it('answers `subscribed` byte for byte as Albatross 2.1 did (capture 28), even for a name not running', async () => {
    const dir = path.join(VECTORS, '28-stats-subscribe');
    const request = readFileSync(path.join(dir, 'albatross-stats-23361-015-unix-read.bin'));
    const expected = readFileSync(path.join(dir, 'albatross-stats-23361-016-unix-write.bin'));
    const exchange = open(sockets.paths.stats, request);
    exchanges.push(exchange);
    const [reply] = await exchange.waitFor(1);
    expect(Buffer.from(frame(unwrap(encodeWire(reply as never))))).toEqual(expected);
    // sub:ctl does not run: nothing follows, and nothing is read for it.
    await sleep(3 * INTERVAL);
    expect(exchange.messages).toHaveLength(1);
    expect(reads).toEqual([]);
  });

  it('reads nothing while nobody listens, and stops reading when the last listener leaves', async () => {
    vms.set('sub:busy', { pid: processes.idle(), nets: [] });
    await sleep(3 * INTERVAL);
    expect(reads).toEqual([]);
    expect(service.sampling).toBe(false);

    const exchange = subscribe('sub:busy');
    await exchange.waitFor(2);
    expect(reads.length).toBeGreaterThan(0);
    expect(service.sampling).toBe(true);

    exchange.close();
    await exchange.closed;
    await until(() => service.listeners === 0, 'the listener to go');
    await sleep(INTERVAL); // a sample already under way may finish
    const after = reads.length;
    await sleep(3 * INTERVAL);
    expect(reads.length).toBe(after);
    expect(service.sampling).toBe(false);
  });

  it('reports a busy process: CPU time grows, memory is filled in, tap counters change as frames pass', async () => {
    const began = Date.now();
    const pid = processes.busy();
    vms.set('sub:busy', { pid, nets: [{ netif: 'service', tap: TAP }] });
    const exchange = subscribe('sub:busy');
    const [reply] = await exchange.waitFor(3);
    expect(said(reply)).toBe('subscribed');
    expect(reply?.header.sequence).toBe(7n);
    const first = statsOf(exchange.messages)[0];
    if (first === undefined) throw new Error('no statistics');

    await sendFrames(t.netns.name, TAP);
    const seen = exchange.messages.length;
    await exchange.waitFor(seen + 1);
    const last = statsOf(exchange.messages).at(-1);
    if (last === undefined) throw new Error('no statistics');

    // Data frames: wire version 5, sequence 0, the name relative to the path of `sub:busy`.
    expect(last.wire.header).toMatchObject({ version: 5, sequence: 0n });
    expect(last.name).toBe(':busy');
    expect(cpuMicros(last.stats)).toBeGreaterThan(cpuMicros(first.stats));
    const kinfo = last.stats.kinfoMem;
    expect(kinfo?.rss).toBeGreaterThan(0n);
    expect(kinfo?.vsize).toBeGreaterThan(0n);
    expect(last.stats.rusage.maxrss).toBe(kinfo?.rss);
    expect(kinfo?.runtime).toBe(cpuMicros(last.stats) - (cpuMicros(last.stats) % 10_000n));
    expect(Number(kinfo?.start.seconds)).toBeGreaterThanOrEqual(Math.floor(began / 1000) - 1);
    expect(Number(kinfo?.start.seconds)).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000));
    expect(last.stats.vmmStats).toBeNull();

    const [before] = first.stats.ifdata;
    const [after] = last.stats.ifdata;
    expect(after?.bridge).toBe('service');
    expect(after?.mtu).toBe(1500);
    expect((after?.flags ?? 0) & 1).toBe(1); // UP
    expect(after?.inputPackets).toBeGreaterThan(before?.inputPackets ?? 0n);
    expect(after?.inputBytes).toBeGreaterThanOrEqual((before?.inputBytes ?? 0n) + 60n);
  });

  it('names are relative to the subscription path; two subscriptions are two independent streams', async () => {
    vms.set('sub:web', { pid: processes.idle(), nets: [] });
    vms.set('other:db', { pid: processes.idle(), nets: [] });
    const root = subscribe(':');
    const sub = subscribe('sub:');
    await until(
      () => statsOf(root.messages).length >= 4 && statsOf(sub.messages).length >= 2,
      'both streams',
    );
    expect(new Set(statsOf(root.messages).map((r) => r.name))).toEqual(new Set(['sub:web', 'other:db']));
    expect(new Set(statsOf(sub.messages).map((r) => r.name))).toEqual(new Set([':web']));

    root.close();
    await root.closed;
    await until(() => service.listeners === 1, 'one listener left');
    const rootCount = root.messages.length;
    const subCount = sub.messages.length;
    await sub.waitFor(subCount + 2);
    expect(root.messages.length).toBe(rootCount);
  });

  it('a second subscription under the same name replaces the first, which is closed', async () => {
    vms.set('sub:web', { pid: processes.idle(), nets: [] });
    const first = subscribe('sub:web');
    await first.waitFor(1);
    const second = subscribe('sub:web');
    await first.closed;
    await second.waitFor(2);
    expect(said(second.messages[0])).toBe('subscribed');
    expect(statsOf(second.messages)[0]?.name).toBe(':web');
    expect(service.listeners).toBe(1);
  });

  it('a subscription waits for its VM: data once it runs, none after it stops', async () => {
    const exchange = subscribe('sub:late');
    await exchange.waitFor(1);
    await sleep(2 * INTERVAL);
    expect(exchange.messages).toHaveLength(1);
    vms.set('sub:late', { pid: processes.idle(), nets: [] });
    await exchange.waitFor(2);
    vms.delete('sub:late');
    await sleep(INTERVAL);
    const count = exchange.messages.length;
    await sleep(3 * INTERVAL);
    expect(exchange.messages.length).toBe(count);
  });

  it('a tender that cannot be read is skipped and logged once, other VMs still reported', async () => {
    const gone = spawnSync('true').pid;
    vms.set('sub:gone', { pid: gone, nets: [] });
    vms.set('sub:web', { pid: processes.idle(), nets: [{ netif: 'service', tap: 'nosuch0' }] });
    const exchange = subscribe('sub:');
    await until(() => statsOf(exchange.messages).length >= 3, 'three samples');
    expect(new Set(statsOf(exchange.messages).map((r) => r.name))).toEqual(new Set([':web']));
    expect(statsOf(exchange.messages)[0]?.stats.ifdata).toEqual([]);
    expect(warnings.filter((w) => w.includes('sub:gone'))).toHaveLength(1);
    expect(warnings.filter((w) => w.includes('nosuch0'))).toHaveLength(1);
  });
});

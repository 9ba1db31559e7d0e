// Issue 23's connection floods against a real petreld process, for test/tls/flood*.test.ts and
// bench/flood.ts: the flood shapes, the flooder child (test/tls/flooder.mjs), petreld with its
// TLS endpoint inside or as `petreld tls-endpoint` beside it, a delegated client running
// `info`, and the RSS and descriptors of the processes under test read from /proc.

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { unwrap } from '../../src/resources/errors.js';
import { parseName } from '../../src/resources/name.js';
import { createRemoteTransport } from '../../src/tls/client.js';
import { type DaemonProcess, launchDaemon } from '../daemon/process.js';
import { repo, testTender } from '../engine/guest.js';
import { makeNetns } from '../engine/harness.js';
import { petrelCa } from './petreld.js';

export interface Shape {
  readonly count: number;
  readonly from: readonly string[];
  /** Sent once connected, then nothing (hex). */
  readonly bytes?: string;
}

/** A TLS record header announcing a ClientHello, and three bytes of it: then nothing. */
export const STALLED_HELLO = '1603010200010001fc';

const loopbacks = (n: number): string[] =>
  Array.from({ length: n }, (_, i) => `127.0.${1 + Math.floor(i / 250)}.${1 + (i % 250)}`);

/**
 * The floods: from one address (127.0.0.2) 300 idle and 300 stalled in their
 * ClientHello, and 600 idle from 200 loopback addresses; then the one-address shapes from the
 * client's own address.
 */
export const FLOODS: Readonly<Record<string, readonly Shape[]>> = {
  'one address': [
    { count: 300, from: ['127.0.0.2'] },
    { count: 300, from: ['127.0.0.2'], bytes: STALLED_HELLO },
  ],
  '200 addresses': [{ count: 600, from: loopbacks(200) }],
  "the client's own address": [
    { count: 300, from: ['127.0.0.1'] },
    { count: 300, from: ['127.0.0.1'], bytes: STALLED_HELLO },
  ],
};

export interface Flood {
  /** Every connection opened once (or 10 s passed). */
  readonly ready: Promise<void>;
  /** Stops it; resolves with what the flooder saw once it has closed every socket. */
  stop(): Promise<{ opened: number; closedByPeer: number; openAtEnd: number }>;
}

export function startFlood(port: number, shapes: readonly Shape[]): Flood {
  const spec = { host: '127.0.0.1', port, shapes };
  const child = spawn(
    process.execPath,
    [path.join(repo, 'test', 'tls', 'flooder.mjs'), JSON.stringify(spec)],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  let result: ((line: string) => void) | null = null;
  const ready = new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, 10_000);
    lines.on('line', (line) => {
      if (line === 'READY') {
        clearTimeout(timer);
        resolve();
      } else result?.(line);
    });
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    ready,
    async stop() {
      const line = new Promise<string>((resolve) => {
        result = resolve;
      });
      child.kill('SIGTERM');
      const [text] = await Promise.all([line, exited]);
      return JSON.parse(text);
    },
  };
}

export async function rss(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]) * 1024;
}

export async function descriptors(pid: number): Promise<number> {
  return (await readdir(`/proc/${pid}/fd`)).length;
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

export interface Target {
  readonly port: number;
  /** The processes that must hold up: petreld, and the endpoint when it is its own process. */
  readonly pids: readonly number[];
  /** The metrics port of petreld (its /metrics counts the endpoint it hosts). */
  readonly metricsPort: number;
  /** One `info` as `petrel info --remote` sends it: its latency in ms, or the error. */
  info(): Promise<{ ms: number; error: string | null }>;
  stop(): Promise<void>;
}

/** petreld with its endpoint `inside`, or with `petreld tls-endpoint` as its own process. */
export async function startTarget(
  mode: 'inside' | 'process',
  logLevel = 'warn',
  extra: readonly string[] = [],
): Promise<Target> {
  const dir = await mkdtemp(path.join(tmpdir(), 'petrel-flood-'));
  const netns = makeNetns();
  const stops: (() => Promise<void> | void)[] = [
    () => rm(dir, { recursive: true, force: true }),
    () => netns.destroy(),
  ];
  const stop = async () => {
    for (const s of stops.splice(0).reverse()) await s();
  };
  try {
    const ca = path.join(dir, 'ca');
    await mkdir(ca, { recursive: true });
    await petrelCa('init', '--dir', ca);
    await petrelCa('delegate', 'alice', '--vms', '2', '--mem', '64', '--dir', ca);
    const [port, metricsPort] = [await freePort(), await freePort()];
    const files = [`${ca}/cacert.pem`, `${ca}/server.pem`, `${ca}/server.key`] as const;
    const flags = ['--state-dir', `${dir}/state`, '--run-dir', `${dir}/run`];
    flags.push('--tender-hvt', await testTender(dir), '--runtimes', 'hvt', '--canary-deadline', '10s');
    // Guests are not what these floods are about: unjailed, so daemons of other tests running
    // jailed tenders at the same time (the jail ids are host-wide) cannot fail the preflight.
    flags.push('--jail', 'false');
    flags.push('--log-level', logLevel, '--metrics-listen', `127.0.0.1:${metricsPort}`, ...extra);
    if (mode === 'inside') {
      flags.push('--tls-listen', `127.0.0.1:${port}`, '--tls-ca', files[0], '--tls-cert', files[1]);
      flags.push('--tls-key', files[2]);
    }
    const daemon: DaemonProcess = await launchDaemon(
      flags,
      { PETREL_TEST_NETNS: netns.name, PETREL_FAKE_KVM: '1' },
      undefined,
      120_000,
    );
    stops.push(() => daemon.stop());
    const pids = [daemon.pid];
    if (mode === 'process') {
      const endpoint = await startEndpoint(`${dir}/run`, port, files);
      stops.push(() => endpoint.stop());
      pids.push(endpoint.pid);
    }
    const alice = createRemoteTransport({
      host: '127.0.0.1',
      port,
      ca: files[0],
      cert: `${ca}/alice.pem`,
      key: `${ca}/alice.key`,
    });
    const root = unwrap(parseName(':'));
    return {
      port,
      pids,
      metricsPort,
      async info() {
        const began = performance.now();
        const answer = await alice.request(root, { type: 'unikernel-info', release: '2.7' });
        const error = !answer.ok
          ? answer.error.message
          : answer.value.kind === 'reply'
            ? null
            : answer.value.message;
        return { ms: performance.now() - began, error };
      },
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}

async function startEndpoint(
  runDir: string,
  port: number,
  [ca, cert, key]: readonly [string, string, string],
): Promise<{ pid: number; stop(): Promise<void> }> {
  const petreldJs = path.join(repo, 'dist', 'src', 'cli', 'petreld.js');
  const child: ChildProcess = spawn(
    process.execPath,
    [petreldJs, 'tls-endpoint', '--run-dir', runDir, '--ca', ca, '--cert', cert, '--key', key].concat([
      '--ip',
      '127.0.0.1',
      '--port',
      String(port),
    ]),
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('petreld tls-endpoint did not listen')), 20_000);
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    lines.on('line', (line) => {
      if (line.includes('tls.listening')) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  return {
    pid: child.pid as number,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

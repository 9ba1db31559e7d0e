// Benchmark: console throughput from a real flood canary (spt, no KVM needed) through petreld's
// console to 1 and to 5 subscribers in separate processes (lines/s, wall time from create to
// the last line at every subscriber), and the memory of an empty and of a full console ring.
// Target (issue 6): ≥ 100,000 lines/s to one subscriber. Run: npm run bench -- console.

import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Ring } from '../src/console/ring.js';
import { request } from '../test/daemon/client.js';
import { launchDaemon } from '../test/daemon/process.js';
import { repo, sptCanary } from '../test/engine/guest.js';
import { canaryConfig, makeNetns } from '../test/engine/harness.js';
import { loadAverage } from './support/load.js';

const LINES = 200_000;
const reader = path.join(repo, 'test', 'console', 'reader.mjs');

async function flood(runDir: string, vm: string, subscribers: number): Promise<number> {
  const readers = Array.from({ length: subscribers }, () => {
    const child = spawn(process.execPath, [reader, `${runDir}/util/console.sock`, vm, String(LINES)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    return {
      subscribed: new Promise<void>((resolve) =>
        child.stdout.on('data', () => out.includes('SUBSCRIBED') && resolve()),
      ),
      done: new Promise<Record<string, unknown>>((resolve) =>
        child.once('exit', () => resolve(JSON.parse(out.trim().split('\n').pop() ?? '{}'))),
      ),
    };
  });
  await Promise.all(readers.map((r) => r.subscribed));
  const started = performance.now();
  await request(`${runDir}/util/vmmd.sock`, vm, {
    type: 'unikernel-create',
    force: false,
    release: '2.7',
    config: await canaryConfig(sptCanary, ['flood', String(LINES)]),
  });
  const results = await Promise.all(readers.map((r) => r.done));
  const seconds = (performance.now() - started) / 1000;
  for (const result of results) {
    if (result.received !== LINES || result.disorder !== 0)
      throw new Error(`lost lines: ${JSON.stringify(result)}`);
  }
  return LINES / seconds;
}

function ringBytes(lines: number): number {
  (globalThis as { gc?: () => void }).gc?.();
  const before = process.memoryUsage().heapUsed;
  const rings = Array.from({ length: 200 }, () => {
    const ring = new Ring();
    for (let i = 0; i < lines; i++)
      ring.push({ timestamp: Date.now(), line: Buffer.from(`petrel-canary flood ${i}`) });
    return ring;
  });
  (globalThis as { gc?: () => void }).gc?.();
  return Math.round((process.memoryUsage().heapUsed - before) / rings.length);
}

const dir = await mkdtemp(path.join(tmpdir(), 'petrel-bench-console-'));
const netns = makeNetns();
const daemon = await launchDaemon(
  ['--state-dir', `${dir}/state`, '--run-dir', `${dir}/run`, '--runtimes', 'spt', '--log-level', 'warn'],
  { PETREL_TEST_NETNS: netns.name },
);
try {
  const one = await flood(`${dir}/run`, ':one', 1);
  const five = await flood(`${dir}/run`, ':five', 5);
  console.log(`console flood of ${LINES} lines from a real spt canary, subscribers in their own processes`);
  console.log(`  1 subscriber:  ${Math.round(one).toLocaleString('en')} lines/s (target ≥ 100,000)`);
  console.log(
    `  5 subscribers: ${Math.round(five).toLocaleString('en')} lines/s each, every line to all five`,
  );
  console.log(
    `  ring memory: empty ${ringBytes(0)} B, full (1024 lines of ~25 B) ${ringBytes(1024)} B (JS heap)`,
  );
  console.log(`  load average: ${loadAverage()}`);
} finally {
  await daemon.stop();
  netns.destroy();
  await rm(dir, { recursive: true, force: true });
}

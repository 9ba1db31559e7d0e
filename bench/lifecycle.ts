// Benchmark: the engine's lifecycle cost. (1) create → first console line latency through the
// engine vs. spawning the same tender directly (p50, difference and ratio); (2) create+destroy
// throughput for 200 VMs; (3) daemon RSS growth per running VM. Targets (issue 5): overhead
// ≤ 10 ms p50, ≥ 50 create+destroy pairs/s, ≤ 100 KiB RSS per running VM.
// Run: npm run bench -- lifecycle. The tender is the one the engine tests use (test/engine/guest.ts):
// real guests with KVM or SOLO5_HVT, otherwise petrel-hvt on the fake-kvm stand-in, which is printed.

import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Subscriber } from '../src/console/hub.js';
import { canaryImage, guestMode, testTender } from '../test/engine/guest.js';
import { canaryConfig, createCommand, makeEngine, name } from '../test/engine/harness.js';

const RUNS = 40;
const PAIRS = 200;

const p = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
};

/** Direct spawn of the tender: time to the first line that carries the word. */
async function direct(tender: string, word: string): Promise<number> {
  const started = performance.now();
  const child = spawn(tender, ['--mem=4', '--', canaryImage, 'hello', word], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes(`petrel-canary ${word}`)) resolve(performance.now() - started);
    });
    child.once('exit', () => reject(new Error(`tender exited without its line: ${out}`)));
  });
}

function firstLine(hubSubscribe: (s: Subscriber) => void, word: string): Promise<void> {
  return new Promise((resolve) => {
    hubSubscribe({
      begin: () => true,
      offer: (_n, entry) => {
        if (Buffer.from(entry.line).toString().includes(`petrel-canary ${word}`)) resolve();
        return true;
      },
      close: () => undefined,
    });
  });
}

const rssKiB = () => Math.round(process.memoryUsage().rss / 1024);

const t = await makeEngine({ stopTimeoutMs: 2_000 });
const scratch = await mkdtemp(path.join(tmpdir(), 'petrel-bench-'));
try {
  const tender = await testTender(scratch);
  const config = await canaryConfig(canaryImage, ['hello', 'x']);
  for (let i = 0; i < 5; i++) await direct(tender, `warm${i}`);

  const viaDirect: number[] = [];
  const viaEngine: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    viaDirect.push(await direct(tender, `d${i}`));
    const word = `e${i}`;
    const vm = name(`:lat${i}`);
    const seen = firstLine((s) => t.hub.subscribe(vm, s, { count: 0 }), word);
    const started = performance.now();
    const created = await t.engine.execute({
      name: vm,
      command: createCommand({ ...config, arguments: ['hello', word] }),
    });
    if (created.kind !== 'reply') throw new Error(JSON.stringify(created));
    await seen;
    viaEngine.push(performance.now() - started);
    await t.engine.execute({ name: vm, command: { type: 'unikernel-destroy' } });
    await t.engine.idle();
  }

  const waitConfig = await canaryConfig(canaryImage, ['wait', 'w']);
  const pairStart = performance.now();
  for (let i = 0; i < PAIRS; i++) {
    const vm = name(`:pair${i}`);
    const created = await t.engine.execute({ name: vm, command: createCommand(waitConfig) });
    if (created.kind !== 'reply') throw new Error(JSON.stringify(created));
    await t.engine.execute({ name: vm, command: { type: 'unikernel-destroy' } });
  }
  const pairsPerSecond = PAIRS / ((performance.now() - pairStart) / 1000);

  (globalThis as { gc?: () => void }).gc?.();
  const before = rssKiB();
  const running = 50;
  for (let i = 0; i < running; i++)
    await t.engine.execute({ name: name(`:idle${i}`), command: createCommand(waitConfig) });
  (globalThis as { gc?: () => void }).gc?.();
  const after = rssKiB();

  const d50 = p(viaDirect, 0.5);
  const e50 = p(viaEngine, 0.5);
  console.log(
    `guests: ${guestMode}${guestMode === 'fake-kvm' ? ' (no usable /dev/kvm: petrel-hvt with the scripted fake-kvm.so)' : ''}`,
  );
  console.log(`create → first console line, ${RUNS} runs`);
  console.log(`  direct spawn   p50 ${d50.toFixed(2)} ms  p99 ${p(viaDirect, 0.99).toFixed(2)} ms`);
  console.log(`  through engine p50 ${e50.toFixed(2)} ms  p99 ${p(viaEngine, 0.99).toFixed(2)} ms`);
  console.log(
    `  engine overhead p50 ${(e50 - d50).toFixed(2)} ms (target ≤ 10), ratio ${(e50 / d50).toFixed(2)}×`,
  );
  console.log(`create+destroy: ${PAIRS} pairs, ${pairsPerSecond.toFixed(1)} pairs/s (target ≥ 50)`);
  console.log(
    `daemon RSS: ${before} KiB → ${after} KiB with ${running} running VMs: ${((after - before) / running).toFixed(1)} KiB per VM (target ≤ 100; includes each VM's image copy of ${Math.round(config.image.length / 1024)} KiB)`,
  );
} finally {
  await t.close();
  await rm(scratch, { recursive: true, force: true });
}

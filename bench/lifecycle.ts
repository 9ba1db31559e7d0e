// Benchmark: the engine's lifecycle cost. (1) create → first console line latency through the
// engine vs. spawning the same tender directly (p50, difference and ratio); (2) create+destroy
// throughput for 200 VMs; (3) daemon RSS growth per running VM (between 50 and 150 running).
// Targets (issue 5): overhead ≤ 10 ms p50, ≥ 50 create+destroy pairs/s, ≤ 100 KiB RSS per VM.
// The latency is measured jailed (the default) and unjailed side by side, interleaved (issue 22:
// jailed ≤ 1.1 × unjailed, or + 2 ms); PETREL_TEST_JAIL=0 makes both engines unjailed.
// Run: npm run bench -- lifecycle. Measured for spt (the bundled petrel-spt: real guests, no KVM
// needed) and for hvt with the tender the engine tests use (test/engine/guest.ts): real guests
// with KVM or SOLO5_HVT, otherwise petrel-hvt on the fake-kvm stand-in, which is printed.
// Then the latency alone for spt with an image of MirageOS size: the canary followed by 30 MB
// of random bytes the tender loads and the guest ignores (a jail that copied the image would
// show here).

import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Subscriber } from '../src/console/hub.js';
import { build, canaryImage, guestMode, sptCanary, testTender } from '../test/engine/guest.js';
import { canaryConfig, createCommand, makeEngine, name } from '../test/engine/harness.js';
import { loadAverage } from './support/load.js';

const RUNS = 40;
const PAIRS = 200;
/** Running VMs at the first RSS reading, and how many more at the second. */
const FIRST = 50;
const MORE = 100;

const p = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
};

/** Direct spawn of the tender, pinned with taskset as the engine does: time to the line with the word. */
async function direct(tender: string, image: string, word: string): Promise<number> {
  const started = performance.now();
  const child = spawn('taskset', ['-c', '0', tender, '--mem=4', '--', image, 'hello', word], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes(`petrel-canary ${word}`)) resolve(performance.now() - started);
    });
    // 'close', not 'exit': a fast tender can be gone before its output has been read.
    child.once('close', () => reject(new Error(`tender exited without its line: ${out}`)));
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
const unjailed = await makeEngine({ stopTimeoutMs: 2_000, jail: false });
const scratch = await mkdtemp(path.join(tmpdir(), 'petrel-bench-'));
try {
  const runtimes = [
    { runtime: 'spt', tender: path.join(build, 'petrel-spt'), image: sptCanary, guests: 'real (petrel-spt)' },
    {
      runtime: 'hvt',
      tender: await testTender(scratch),
      image: canaryImage,
      guests: guestMode === 'fake-kvm' ? 'fake-kvm.so stands in for KVM (no usable /dev/kvm)' : 'real (KVM)',
    },
  ];
  const big = path.join(scratch, 'canary-30mb.spt');
  await writeFile(big, Buffer.concat([await readFile(sptCanary), randomBytes(30 * 1024 * 1024)]));
  runtimes.push({
    runtime: 'spt30mb',
    tender: path.join(build, 'petrel-spt'),
    image: big,
    guests: 'real (petrel-spt), a 30 MB image',
  });
  for (const { runtime, tender, image, guests } of runtimes) {
    const latencyOnly = runtime === 'spt30mb';
    const runs = latencyOnly ? 15 : RUNS;
    const config = await canaryConfig(image, ['hello', 'x']);
    for (let i = 0; i < 5; i++) await direct(tender, image, `warm${i}`);
    const viaDirect: number[] = [];
    const viaEngine: number[] = [];
    const viaUnjailed: number[] = [];
    let refused = 0;
    const latency = async (engine: typeof t, word: string): Promise<number> => {
      for (let attempt = 0; ; attempt++) {
        const vm = name(`:${runtime}lat${word}${attempt}`);
        const seen = firstLine((s) => engine.hub.subscribe(vm, s, { count: 0 }), word);
        const started = performance.now();
        const created = engine.engine.execute({
          name: vm,
          command: createCommand({ ...config, arguments: ['hello', word] }),
        });
        // The line may arrive before the reply, which waits for the state file's fsync. A
        // refused create (a tender gone before petreld read its start time) is tried again.
        const first: 'line' | 'refused' = await Promise.race([
          seen.then(() => 'line' as const),
          created.then((reply) =>
            reply.kind === 'reply' ? seen.then(() => 'line' as const) : ('refused' as const),
          ),
        ]);
        const ms = performance.now() - started;
        const reply = await created;
        if (first === 'line' && reply.kind === 'reply') {
          await engine.engine.execute({ name: vm, command: { type: 'unikernel-destroy' } });
          await engine.engine.idle();
          return ms;
        }
        refused++;
        if (attempt >= 5) throw new Error(JSON.stringify(reply));
        await engine.engine.idle();
      }
    };
    for (let i = 0; i < runs; i++) {
      viaDirect.push(await direct(tender, image, `d${i}`));
      viaEngine.push(await latency(t, `e${i}`));
      viaUnjailed.push(await latency(unjailed, `u${i}`));
    }
    const d50 = p(viaDirect, 0.5);
    const e50 = p(viaEngine, 0.5);
    const u50 = p(viaUnjailed, 0.5);
    console.log(`${runtime}: guests ${guests}`);
    console.log(`  create → first console line, ${runs} runs`);
    console.log(`    direct spawn   p50 ${d50.toFixed(2)} ms  p99 ${p(viaDirect, 0.99).toFixed(2)} ms`);
    console.log(
      `    through engine p50 ${e50.toFixed(2)} ms  p99 ${p(viaEngine, 0.99).toFixed(2)} ms (jailed)`,
    );
    console.log(`    unjailed       p50 ${u50.toFixed(2)} ms  p99 ${p(viaUnjailed, 0.99).toFixed(2)} ms`);
    console.log(
      `    jail cost p50 ${(e50 - u50).toFixed(2)} ms, ratio ${(e50 / u50).toFixed(2)}× (target ≤ 1.1×, or + 2 ms)`,
    );
    console.log(
      `    engine overhead p50 ${(e50 - d50).toFixed(2)} ms (target ≤ 10), ratio ${(e50 / d50).toFixed(2)}×`,
    );
    if (refused > 0) console.log(`  (${refused} latency creates refused and tried again)`);
    if (latencyOnly) continue;

    const waitConfig = await canaryConfig(image, ['wait', 'w']);
    const pairStart = performance.now();
    for (let i = 0; i < PAIRS; i++) {
      const vm = name(`:${runtime}pair${i}`);
      const created = await t.engine.execute({ name: vm, command: createCommand(waitConfig) });
      if (created.kind !== 'reply') throw new Error(JSON.stringify(created));
      await t.engine.execute({ name: vm, command: { type: 'unikernel-destroy' } });
    }
    const pairsPerSecond = PAIRS / ((performance.now() - pairStart) / 1000);

    // RSS per running VM as the slope between FIRST and FIRST + MORE running VMs, each read
    // after a full collection: one-off growth (heap expansion, code compiled on first use, the
    // file thread) falls before the first reading and cancels out.
    const running = async (from: number, to: number) => {
      for (let i = from; i < to; i++) {
        await t.engine.execute({ name: name(`:${runtime}idle${i}`), command: createCommand(waitConfig) });
      }
      (globalThis as { gc?: () => void }).gc?.();
      await new Promise((resolve) => setTimeout(resolve, 100));
      return rssKiB();
    };
    const before = await running(0, FIRST);
    const after = await running(FIRST, FIRST + MORE);
    for (let i = 0; i < FIRST + MORE; i++) {
      await t.engine.execute({ name: name(`:${runtime}idle${i}`), command: { type: 'unikernel-destroy' } });
    }

    console.log(`  create+destroy: ${PAIRS} pairs, ${pairsPerSecond.toFixed(1)} pairs/s (target ≥ 50)`);
    console.log(
      `  daemon RSS: ${before} KiB with ${FIRST} running VMs → ${after} KiB with ${FIRST + MORE}: ${((after - before) / MORE).toFixed(1)} KiB per VM (target ≤ 100; the image is in the store, not in memory)`,
    );
  }
  console.log(`load average: ${loadAverage()}`);
} finally {
  await unjailed.close();
  await t.close();
  await rm(scratch, { recursive: true, force: true });
}

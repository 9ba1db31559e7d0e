// Legitimate `info` latency under issue 23's connection floods, side by side in one run: no
// flood, then each flood of test/tls/flood.ts (300 idle + 300 stalled-in-ClientHello from
// 127.0.0.2; 600 idle from 200 loopback addresses; the first again from the client's own
// address), the cases alternated round by round so the machine's load hits them alike. Each
// case: the flood is brought up (re-opened when closed), then a delegated client on 127.0.0.1
// runs BENCH_FLOOD_REQUESTS `info` sessions one after another, BENCH_FLOOD_GAP_MS apart.
// petreld runs as its own process with its TLS endpoint inside (BENCH_FLOOD_MODE=process: as
// `petreld tls-endpoint` beside it). Guests are not involved (fake-kvm TEST DOUBLE without KVM).
// Goal (issue 23): p99 under every flood ≤ 3 × the quiet p99, no request lost.
// Run: npm run bench -- flood

import { FLOODS, rss, type Shape, startFlood, startTarget } from '../test/tls/flood.js';
import { loadAverage } from './support/load.js';

const ROUNDS = Number(process.env.BENCH_FLOOD_ROUNDS ?? 2);
const REQUESTS = Number(process.env.BENCH_FLOOD_REQUESTS ?? 40);
const GAP_MS = Number(process.env.BENCH_FLOOD_GAP_MS ?? 100);
const MODE = process.env.BENCH_FLOOD_MODE === 'process' ? 'process' : 'inside';

const CASES: [string, readonly Shape[]][] = [
  ['no flood', []],
  ...Object.entries(FLOODS).map(([label, shapes]): [string, readonly Shape[]] => [label, shapes]),
];

const quantile = (sorted: readonly number[], q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;

async function main(): Promise<void> {
  const target = await startTarget(MODE, 'error');
  const latencies = new Map<string, number[]>(CASES.map(([label]) => [label, []]));
  const lost = new Map<string, number>(CASES.map(([label]) => [label, 0]));
  const shed = new Map<string, number>(CASES.map(([label]) => [label, 0]));
  const peakRise = new Map<string, number>(CASES.map(([label]) => [label, 0]));
  try {
    for (let i = 0; i < 5; i++) await target.info();
    for (let round = 0; round < ROUNDS; round++) {
      for (const [label, shapes] of CASES) {
        const flood = shapes.length === 0 ? null : startFlood(target.port, shapes);
        await flood?.ready;
        const base = await rss(target.pids.at(-1) as number);
        let peak = base;
        for (let i = 0; i < REQUESTS; i++) {
          const { ms, error } = await target.info();
          if (error === null) latencies.get(label)?.push(ms);
          else lost.set(label, (lost.get(label) ?? 0) + 1);
          peak = Math.max(peak, await rss(target.pids.at(-1) as number));
          await new Promise((resolve) => setTimeout(resolve, GAP_MS));
        }
        const seen = await flood?.stop();
        shed.set(label, (shed.get(label) ?? 0) + (seen?.closedByPeer ?? 0));
        peakRise.set(label, Math.max(peakRise.get(label) ?? 0, peak - base));
      }
    }
  } finally {
    await target.stop();
  }
  const quiet = [...(latencies.get('no flood') ?? [])].sort((a, b) => a - b);
  const quietP99 = quantile(quiet, 0.99);
  console.log(
    `endpoint ${MODE}; ${ROUNDS} rounds × ${REQUESTS} info per case; load average ${loadAverage()}`,
  );
  console.log(
    'case                        p50 ms   p99 ms   p99/quiet   lost   shed by petreld   RSS rise MiB',
  );
  let met = true;
  for (const [label] of CASES) {
    const sorted = [...(latencies.get(label) ?? [])].sort((a, b) => a - b);
    const p99 = quantile(sorted, 0.99);
    const ratio = p99 / quietP99;
    const missing = lost.get(label) ?? 0;
    if (label !== 'no flood' && (ratio > 3 || missing > 0)) met = false;
    console.log(
      `${label.padEnd(26)}  ${quantile(sorted, 0.5).toFixed(1).padStart(6)}   ${p99.toFixed(1).padStart(6)}   ${ratio.toFixed(2).padStart(9)}   ${String(missing).padStart(4)}   ${String(shed.get(label)).padStart(15)}   ${((peakRise.get(label) ?? 0) / 2 ** 20).toFixed(1).padStart(12)}`,
    );
  }
  console.log(`goal: p99 under flood ≤ 3 × quiet, none lost: ${met ? 'met' : 'NOT met'}`);
}

await main();

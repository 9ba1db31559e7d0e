// The rounds of flood.test.ts and flood-endpoint.test.ts: two 20 s windows (the floods from
// 127.0.0.2 and from 200 addresses together, then the flood from the client's own address),
// `info` every 2 s in each, and the bounds checked on every process under test.

import { expect } from 'vitest';
import { descriptors, FLOODS, rss, type Shape, startFlood, startTarget } from './flood.js';

const WINDOW_MS = 20_000;
const EVERY_MS = 2_000;
const ANSWER_MS = 5_000;
const RSS_RISE = 64 * 1024 * 1024;

export async function floodRounds(mode: 'inside' | 'process'): Promise<void> {
  const target = await startTarget(mode);
  try {
    // Warm, as a running service is: the first sessions load the code the path needs, and the
    // young generation V8 grows under any sustained allocation (to 32 MiB) is not counted as
    // what the flood cost (petreld grows it during its start; a bare endpoint process has not).
    for (let i = 0; i < 100; i++) expect((await target.info()).error).toBeNull();
    const fds = await Promise.all(target.pids.map(descriptors));
    const base = await Promise.all(target.pids.map(rss));
    const rounds: [string, readonly Shape[]][] = [
      ['127.0.0.2 and 200 addresses', [...(FLOODS['one address'] ?? []), ...(FLOODS['200 addresses'] ?? [])]],
      ["the client's own address", FLOODS["the client's own address"] ?? []],
    ];
    for (const [label, shapes] of rounds) {
      const flood = startFlood(target.port, shapes);
      await flood.ready;
      const peak = [...base];
      const sampler = setInterval(() => {
        target.pids.forEach((pid, i) => {
          void rss(pid).then(
            (r) => {
              peak[i] = Math.max(peak[i] as number, r);
            },
            () => {},
          );
        });
      }, 250);
      const answers: Promise<{ ms: number; error: string | null }>[] = [];
      const began = performance.now();
      for (let at = 0; at < WINDOW_MS; at += EVERY_MS) {
        const wait = began + at - performance.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        answers.push(target.info());
      }
      const results = await Promise.all(answers);
      clearInterval(sampler);
      const seen = await flood.stop();
      for (const [i, r] of results.entries()) {
        expect(r.error, `${label}: request ${i + 1}: ${r.error}`).toBeNull();
        expect(r.ms, `${label}: request ${i + 1} answered within 5 s`).toBeLessThan(ANSWER_MS);
      }
      for (const [i, pid] of target.pids.entries()) {
        expect((peak[i] as number) - (base[i] as number), `${label}: RSS rise of ${pid}`).toBeLessThan(
          RSS_RISE,
        );
      }
      // The flood was really shed (re-opened connections), not simply held.
      expect(seen.closedByPeer, `${label}: connections closed by the endpoint`).toBeGreaterThan(0);
    }
    // Every descriptor given back (the flood's were all closed by the flooder).
    const deadline = Date.now() + 15_000;
    let now = await Promise.all(target.pids.map(descriptors));
    while (now.some((n, i) => n > (fds[i] as number)) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      now = await Promise.all(target.pids.map(descriptors));
    }
    expect(now.map((n, i) => n <= (fds[i] as number))).toEqual(target.pids.map(() => true));
    // Served after it too.
    expect((await target.info()).error).toBeNull();
  } finally {
    await target.stop();
  }
}

// Console fan-out under a flood (issue 6, Petrel (i)): a real spt canary prints 200,000 lines to
// five subscribers, one of which never reads. The other four get every line in order, the silent
// one is closed, petreld's memory follows a window of the flood, not the flood (test/memory.ts),
// and the engine keeps answering meanwhile.
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { request, said } from '../daemon/client.js';
import { repo, sptCanary } from '../engine/guest.js';
import { canaryConfig, createCommand } from '../engine/harness.js';
import { peakRise, transferAllowance } from '../memory.js';
import { floodReader, sptDaemon } from './flood.js';

const LINES = Number(process.env.FLOOD_LINES ?? 200_000);
const children: ChildProcess[] = [];
const cleanups: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  for (const child of children.splice(0)) child.kill();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('console fan-out', () => {
  it('delivers a 200,000-line flood to four readers while a silent fifth is closed', async () => {
    if (!existsSync(path.join(repo, 'dist', 'src', 'wire', 'message.js')))
      throw new Error('run npm run build first');
    const d = await sptDaemon('petrel-fanout-', cleanups);
    const consoleSock = path.join(d.runDir, 'util', 'console.sock');
    const engineSock = path.join(d.runDir, 'util', 'vmmd.sock');
    const subs = [false, false, false, false, true].map((silent) =>
      floodReader(consoleSock, ':flood', LINES, silent, children),
    );
    await Promise.all(subs.map((s) => s.subscribed));

    const latencies: number[] = [];
    const measured = await peakRise(d.process, async () => {
      const created = await request(
        engineSock,
        ':flood',
        createCommand(await canaryConfig(sptCanary, ['flood', String(LINES)])),
      );
      expect(created.map(said)).toEqual(['created unikernel']);
      // The engine answers while the flood is delivered.
      for (let i = 0; i < 5; i++) {
        const started = performance.now();
        const info = await request(engineSock, ':', { type: 'unikernel-info', release: '2.7' });
        latencies.push(performance.now() - started);
        expect(info[0]?.payload.kind).toBe('reply');
        await new Promise((r) => setTimeout(r, 50));
      }
      const results = await Promise.all(subs.slice(0, 4).map((s) => s.summary));
      // The silent one reads only now: if petreld had not closed it, it would get every line.
      subs[4]?.wake();
      results.push(await (subs[4] as (typeof subs)[number]).summary);
      return results;
    });
    const results = measured.value;

    for (const result of results.slice(0, 4)) {
      expect(result).toMatchObject({ status: 'waiting for VM', received: LINES, disorder: 0 });
    }
    // The silent one was closed by petreld long before the end of the flood.
    expect(results[4]).toMatchObject({ closed: true, disorder: 0 });
    expect(results[4]?.received).toBeLessThan(LINES);
    expect(Math.max(...latencies)).toBeLessThan(200);
    // Petreld's peak memory (from a collected baseline) follows a window of the flood, never the
    // flood it delivered (test/memory.ts).
    const delivered = results.reduce((sum, r) => sum + Number(r.bytes), 0);
    expect(delivered).toBeGreaterThan(4 * LINES * 20);
    expect(measured.bytes).toBeLessThan(transferAllowance(delivered));
  }, 120_000);
});

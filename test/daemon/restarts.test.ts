// Issue 17 from the outside: petreld (a separate process) restarted 20 times, half by SIGTERM
// and half by SIGKILL, with 10 running unikernels (hvt where KVM works, spt elsewhere: real
// guests either way). Every guest keeps its process, taps, FIFO and PID record; info lists them
// all; a guest printing a numbered line every 100 ms loses no line for a subscriber that comes
// back after each restart and asks for history. With a console buffer too small for the time
// petreld is away, a marker says exactly how many bytes were dropped.
import { readFileSync } from 'node:fs';
import { mkdtemp, readdir } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Wire } from '../../src/wire/types.js';
import { build, canaryImage, canaryNetImage, kvmUsable, sptCanary, sptCanaryNet } from '../engine/guest.js';
import { canaryConfig, createCommand, makeNetns } from '../engine/harness.js';
import { commandFrame, open, request, said, subscribeCommand } from './client.js';
import { tenderPids, unikernelLabels } from './guests.js';
import type { DaemonProcess } from './process.js';
import { processTests } from './process-tests.js';

const runtime = kvmUsable ? 'hvt' : 'spt';
const netImage = runtime === 'hvt' ? canaryNetImage : sptCanaryNet;
const image = runtime === 'hvt' ? canaryImage : sptCanary;

const suite = processTests('restarts');

const startDaemon = (dir: string, netns: string, extra: string[] = []): Promise<DaemonProcess> =>
  suite.launch(dir, netns, {
    ...(runtime === 'hvt' ? {} : { tenderFlags: ['--tender-spt', path.join(build, 'petrel-spt')] }),
    flags: ['--runtimes', runtime, '--canary-deadline', '10s', ...extra],
  });

/** What lies around for the unikernels: FIFOs, PID records (name → pid), taps. */
async function artefacts(run: string, netns: ReturnType<typeof makeNetns>) {
  const records: Record<string, number> = {};
  for (const file of await readdir(`${run}/tenders`).catch(() => [])) {
    records[file] = Number(readFileSync(`${run}/tenders/${file}`, 'utf8').split(' ')[0]);
  }
  const fifos = (await readdir(`${run}/fifo`).catch(() => [])).filter((f) => !f.startsWith('.')).sort();
  const taps = netns
    .links()
    .split(' ')
    .filter((l) => l.startsWith('ptap'))
    .sort();
  return { records, fifos, taps };
}

const infoNames = async (socket: string): Promise<string[]> =>
  (await unikernelLabels(socket)).map((label) => `:${label}`);

const consoleLines = (messages: readonly Wire[]): string[] =>
  messages.flatMap((m) =>
    m.payload.kind === 'data' && m.payload.data.type === 'console'
      ? [Buffer.from(m.payload.data.line).toString()]
      : [],
  );

/**
 * A subscriber of `:counter` that asks for the whole history, reads until it has seen a number
 * beyond `after + ahead`, and hands back every console line it got.
 */
async function readCounter(consoleSocket: string, after: number, ahead: number): Promise<string[]> {
  const watch = open(
    consoleSocket,
    commandFrame(':counter', subscribeCommand({ kind: 'count', count: 1024 })),
  );
  try {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const lines = consoleLines(watch.messages);
      const numbers = lines.flatMap((l) => /^petrel-canary count (\d+)$/u.exec(l)?.[1] ?? []).map(Number);
      if (numbers.some((n) => n > after + ahead)) return lines;
      if (Date.now() > deadline)
        throw new Error(`counter stuck after ${after}: ${lines.slice(-5).join(' | ')}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    watch.close();
  }
}

/** Checks the lines continue the count after `last` with no gap; returns the new last number. */
function continues(lines: readonly string[], last: number): number {
  let at = last;
  for (const line of lines) {
    const match = /^petrel-canary count (\d+)$/u.exec(line);
    expect(match, `an unexpected console line: ${line}`).not.toBeNull();
    const n = Number(match?.[1]);
    if (n <= at) continue; // history the subscriber saw before the restart
    expect(n, `line ${at + 1} is missing`).toBe(at + 1);
    at = n;
  }
  return at;
}

const bridged = { bridges: [{ netif: 'service', bridge: 'br0', mac: null }] };

describe('petreld restarts are not guest restarts', () => {
  it('20 restarts, half SIGTERM, half SIGKILL, with 10 running unikernels: same processes, no line lost', async () => {
    const dir = await mkdtemp(path.join(suite.base, 'case-'));
    const netns = makeNetns();
    const run = `${dir}/run`;
    const vmmd = `${run}/util/vmmd.sock`;
    const consoleSocket = `${run}/util/console.sock`;
    let daemon = await startDaemon(dir, netns.name);
    try {
      const names = [':counter', ...Array.from({ length: 9 }, (_, i) => `:w${i}`)].sort();
      for (const vm of names) {
        const args = vm === ':counter' ? ['count', '100'] : ['wait', vm.slice(1)];
        const created = await request(vmmd, vm, createCommand(await canaryConfig(netImage, args, bridged)));
        expect(said(created[0])).toBe('created unikernel');
      }
      const pids = await tenderPids(run);
      expect(Object.keys(pids).sort()).toEqual(names);
      const before = await artefacts(run, netns);
      expect(before.fifos).toEqual(names);
      expect(before.records).toEqual(pids);
      expect(before.taps).toHaveLength(10);
      let last = continues(await readCounter(consoleSocket, 0, 3), 0);

      for (let i = 0; i < 20; i++) {
        const signal = i % 2 === 0 ? 'SIGTERM' : 'SIGKILL';
        daemon.child.kill(signal);
        await daemon.exited;
        daemon = await startDaemon(dir, netns.name);
        expect(await tenderPids(run), `after restart ${i + 1} (${signal})`).toEqual(pids);
        expect(await infoNames(vmmd)).toEqual(names);
        expect(await artefacts(run, netns)).toEqual(before);
        last = continues(await readCounter(consoleSocket, last, 2), last);
      }
      // The explicit mode: every guest stopped, nothing left.
      await daemon.stop('SIGUSR2');
      expect(await tenderPids(run)).toEqual({});
      expect((await artefacts(run, netns)).taps).toEqual([]);
    } finally {
      await daemon.stop('SIGUSR2');
      netns.destroy();
    }
  }, 300_000);

  it('says how many bytes were dropped when the holder buffer overflowed while petreld was away', async () => {
    const dir = await mkdtemp(path.join(suite.base, 'case-'));
    const netns = makeNetns();
    const run = `${dir}/run`;
    const consoleSocket = `${run}/util/console.sock`;
    let daemon = await startDaemon(dir, netns.name, ['--console-buffer', '1024']);
    try {
      const created = await request(
        `${run}/util/vmmd.sock`,
        ':counter',
        createCommand(await canaryConfig(image, ['count', '5'])),
      );
      expect(said(created[0])).toBe('created unikernel');
      const seen = continues(await readCounter(consoleSocket, 0, 10), 0);
      // petreld acknowledges a line to the holder at most two turns of its event loop after
      // handling it (setImmediate): three requests answered one after another mean those turns
      // have come, so the holder's `acked` is at least `seen` when petreld dies (the marker
      // counts from there). On a busy machine petreld could otherwise be killed in between.
      for (let i = 0; i < 3; i++) await infoNames(`${run}/util/vmmd.sock`);
      daemon.child.kill('SIGKILL');
      await daemon.exited;
      // ~25 bytes every 5 ms for 2 s: 10 KiB, ten times the holder's 1 KiB buffer, so it
      // overflows even when a busy machine gives the guest a fraction of its time.
      await new Promise((r) => setTimeout(r, 2_000));
      daemon = await startDaemon(dir, netns.name, ['--console-buffer', '1024']);
      const lines = await readCounter(consoleSocket, seen, 10);
      const marker = lines.findIndex((l) => l.startsWith('[petrel: '));
      expect(marker).toBeGreaterThanOrEqual(0);
      const dropped = Number(
        /^\[petrel: (\d+) bytes of console output dropped\]$/u.exec(lines[marker] ?? '')?.[1],
      );
      const next = Number(/^petrel-canary count (\d+)$/u.exec(lines[marker + 1] ?? '')?.[1]);
      expect(next).toBeGreaterThan(seen + 1);
      // The lines from the marker on continue without a gap...
      continues(lines.slice(marker + 1), next - 1);
      // ...and the marker counts exactly the lines lost between the last one petreld handled
      // (the subscriber saw up to `seen`, petreld may have handled a few more) and `next`.
      const bytes = (n: number) => `petrel-canary count ${n}\n`.length;
      const suffixes = new Set<number>();
      for (let handled = seen, sum = 0; handled < next - 1; handled++) {
        sum = 0;
        for (let n = handled + 1; n < next; n++) sum += bytes(n);
        suffixes.add(sum);
      }
      expect(
        suffixes.has(dropped),
        `${dropped} is not the size of lines ${seen + 1}…${next - 1} or a suffix`,
      ).toBe(true);
    } finally {
      await daemon.stop('SIGUSR2');
      netns.destroy();
    }
  }, 120_000);
});

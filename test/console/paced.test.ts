// A guest printing 50,000 lines a second, each its own write (issue 21 item 3): a subscriber in
// its own process gets every line in order, and afterwards history by count and since a time
// answers the last lines of the console, in order, with the timestamps the live lines had.
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { RING_SIZE } from '../../src/console/ring.js';
import type { Wire } from '../../src/wire/types.js';
import { commandFrame, open, request, said } from '../daemon/client.js';
import { repo, sptCanary } from '../engine/guest.js';
import { canaryConfig, createCommand } from '../engine/harness.js';
import { floodReader, sptDaemon } from './flood.js';

const LINES = 150_000;
const PER_MS = 50;
const children: ChildProcess[] = [];
const cleanups: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  for (const child of children.splice(0)) child.kill();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The lines of a console history reply: (timestamp, text) of each Data message. */
function lines(messages: readonly Wire[]): { timestamp: number; text: string }[] {
  return messages.flatMap((m) =>
    m.payload.kind === 'data' && m.payload.data.type === 'console'
      ? [{ timestamp: m.payload.data.timestamp.getTime(), text: Buffer.from(m.payload.data.line).toString() }]
      : [],
  );
}

async function history(
  socket: string,
  select: { kind: 'count'; count: number } | { kind: 'since'; since: Date },
  expected: number,
) {
  const exchange = open(
    socket,
    commandFrame(':paced', { type: 'console-subscribe', release: '2.1', select }),
  );
  const messages = await exchange.waitFor(1 + expected, 30_000);
  // Nothing more comes: the guest has halted.
  await new Promise((r) => setTimeout(r, 200));
  exchange.close();
  expect(said(messages[0])).toBe('subscribed');
  return lines(messages);
}

describe('a guest printing 50,000 lines a second', () => {
  it('loses and reorders nothing, and history answers the last lines with their times', async () => {
    if (!existsSync(path.join(repo, 'dist', 'src', 'wire', 'message.js')))
      throw new Error('run npm run build first');
    const d = await sptDaemon('petrel-paced-', cleanups);
    const consoleSock = `${d.runDir}/util/console.sock`;
    const { subscribed, summary } = floodReader(consoleSock, ':paced', LINES, false, children);
    await subscribed;
    const started = performance.now();
    const created = await request(
      `${d.runDir}/util/vmmd.sock`,
      ':paced',
      createCommand(await canaryConfig(sptCanary, ['flood', String(LINES), String(PER_MS)])),
    );
    expect(created.map(said)).toEqual(['created unikernel']);
    expect(await summary).toMatchObject({ status: 'waiting for VM', received: LINES, disorder: 0 });
    const seconds = (performance.now() - started) / 1000;
    // For the record: the rate the guest kept on this machine (it paces itself at 50,000/s).
    console.log(`paced console: ${LINES} lines in ${seconds.toFixed(2)} s`);

    // History by count: the last RING_SIZE lines, in order, times never going back.
    const last = await history(consoleSock, { kind: 'count', count: RING_SIZE }, RING_SIZE);
    expect(last.map((l) => l.text)).toEqual(
      Array.from({ length: RING_SIZE }, (_, i) => `petrel-canary flood ${LINES - RING_SIZE + 1 + i}`),
    );
    for (let i = 1; i < last.length; i++)
      expect(last[i]?.timestamp).toBeGreaterThanOrEqual(last[i - 1]?.timestamp as number);
    // Since the time of a line in the middle: exactly the lines from the first one of that
    // time on, with the same times.
    const pivot = last[RING_SIZE >> 1]?.timestamp as number;
    const expected = last.slice(last.findIndex((l) => l.timestamp >= pivot));
    const since = await history(consoleSock, { kind: 'since', since: new Date(pivot) }, expected.length);
    expect(since).toEqual(expected);
  }, 180_000);
});

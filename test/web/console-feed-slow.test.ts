// The fan-out of src/web/console-feed.ts under a follower that stops reading: real HTTP followers
// on loopback, and a TEST DOUBLE for petreld's side only (its subscription's frames, encoded as
// petreld encodes them and written straight into the web layer's channel, as fast as it takes
// them), so that megabytes of console lines can be pushed in a moment without a guest. The
// upstream is never held back, the reading follower gets every line in order, the stalled one
// is closed once its backlog passes the bound, and the subscription ends with its last follower.

import { createServer, get, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { unwrap } from '../../src/resources/errors.js';
import { parseName } from '../../src/resources/name.js';
import type { RequestChannel } from '../../src/web/channel.js';
import { ConsoleFeeds } from '../../src/web/console-feed.js';
import { encodeWire, frame } from '../../src/wire/index.js';
import { type Payload, WIRE_VERSION } from '../../src/wire/types.js';
import { eventually } from './client.js';

const BACKLOG = 256 * 1024;
const LINES = 40_000;
/** Each line about half a KiB: 40,000 of them are far more than the loopback's buffers hold. */
const PAD = 'x'.repeat(480);
const logs: Record<string, unknown>[] = [];
const feeds = new ConsoleFeeds(
  pino({ level: 'debug' }, { write: (line: string) => logs.push(JSON.parse(line)) }),
  BACKLOG,
);
let server: Server;
let upstream: RequestChannel | null = null;
let upstreamClosed = false;
let opened = 0;
const responses: ServerResponse[] = [];

const send = (payload: Payload) =>
  (upstream as RequestChannel).write(
    frame(
      unwrap(
        encodeWire({
          header: { version: WIRE_VERSION, sequence: 1n, name: unwrap(parseName('a:vm')) },
          payload,
        }),
      ),
    ),
  );

beforeAll(async () => {
  server = createServer((_request, response) => {
    responses.push(response);
    void feeds.follow('a:vm', { kind: 'count', count: 0 }, response, async (channel) => {
      opened++;
      upstream = channel as RequestChannel;
      await send({ kind: 'reply', reply: { type: 'string', text: 'subscribed' } });
      await channel.closed;
      upstreamClosed = true;
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});
afterAll(
  () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
);

function follow(): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    get(
      { host: '127.0.0.1', port: (server.address() as AddressInfo).port, path: '/', agent: false },
      resolve,
    ).on('error', reject);
  });
}

it('closes a follower that stops reading, never holding back petreld or the one that reads', async () => {
  const fast = await follow();
  const slow = await follow();
  slow.pause();
  expect(opened).toBe(1);
  const numbers: number[] = [];
  let text = '';
  fast.on('data', (c: Buffer) => {
    text += c.toString('utf8');
    const end = text.lastIndexOf('\n\n');
    if (end < 0) return;
    for (const m of text.slice(0, end).matchAll(/ n (\d+)\\n"/g)) numbers.push(Number(m[1]));
    text = text.slice(end + 2);
  });
  // Let the reply's settling pass: these are live lines, not history.
  await new Promise((r) => setTimeout(r, 250));
  const started = Date.now();
  let refused = 0;
  for (let i = 1; i <= LINES; i++) {
    const line = new TextEncoder().encode(`${PAD} n ${i}\n`);
    if (!(await send({ kind: 'data', data: { type: 'console', timestamp: new Date(), line } }))) {
      refused++;
    }
    // A turn of the event loop every 20 lines (12 KB), as reads from petreld's socket leave.
    if (i % 20 === 0) await new Promise((r) => setImmediate(r));
  }
  // The upstream never waited on a follower and took every frame.
  expect(refused).toBe(0);
  await eventually(() => numbers.length === LINES, 30_000, 'the reading follower has every line');
  expect(numbers.every((n, i) => n === i + 1)).toBe(true);
  // Closed on petreld's side of it (the stalled client, reading nothing, would hear of it last).
  await eventually(() => responses[1]?.destroyed === true, 10_000, 'the stalled follower is closed');
  expect(responses[0]?.destroyed).toBe(false);
  slow.destroy();
  const slowLine = logs.find((l) => l.event === 'web.console-slow');
  expect(slowLine).toMatchObject({ unikernel: 'a:vm', level: 40 });
  expect(Number(slowLine?.unsent)).toBeGreaterThan(BACKLOG);
  console.log(`${LINES} lines fanned out in ${Date.now() - started} ms; the stalled follower closed`);
  // The last follower gone, the one subscription ends.
  expect(upstreamClosed).toBe(false);
  fast.destroy();
  await eventually(() => upstreamClosed, 5000, 'the subscription ended');
  expect(feeds.counts()).toEqual({ feeds: 0, followers: 0 });
}, 60_000);

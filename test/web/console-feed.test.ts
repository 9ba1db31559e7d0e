// The web layer's one console subscription per unikernel, over REAL HTTPS against a REAL petreld
// (test/tls/petreld.ts, the fake-kvm TEST DOUBLE standing in for KVM where it is missing): eight
// Server-Sent Event followers of a unikernel and five real `petrel console` processes all get
// its live lines, and petreld's own count of the unikernel's console subscribers (its metric)
// shows the five and one for the web layer, within the five-subscriber limit (maxSubscribers 5:
// beyond five and one, petreld closes the oldest). The subscription goes when the last follower
// does; a new follower gets its history from the web layer's ring.

import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { ClientRequest } from 'node:http';
import { request } from 'node:https';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canaryImage, repo } from '../engine/guest.js';
import { mintToken, type Petreld, startPetreld } from '../tls/petreld.js';
import { eventually } from './client.js';
import { checkResponse } from './openapi.js';

const executable = path.join(repo, 'dist', 'src', 'cli', 'petrel.js');
let petreld: Petreld;
let cacert: Buffer;
let token = '';
const children: ChildProcess[] = [];

/** petreld's console subscribers below dave:, from its Prometheus endpoint. */
async function subscribers(): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${petreld.report.metrics?.port}/metrics`)).text();
  const line = /^petrel_console_subscribers\{path="dave:"\} (\d+)$/m.exec(text);
  return line === null ? 0 : Number(line[1]);
}

interface Follower {
  readonly req: ClientRequest;
  /** The count numbers of the lines received, in order. */
  readonly numbers: number[];
  readonly opened: Promise<number>;
}

function follow(query: string): Follower {
  const numbers: number[] = [];
  let opened: (status: number) => void = () => {};
  const status = new Promise<number>((resolve) => {
    opened = resolve;
  });
  const req = request(
    {
      host: '127.0.0.1',
      port: petreld.webPort as number,
      path: `/api/v1/unikernels/talker/console${query}`,
      headers: { authorization: `Bearer ${token}` },
      ca: cacert,
      agent: false,
    },
    (res) => {
      opened(res.statusCode as number);
      let text = '';
      res.on('data', (c: Buffer) => {
        text += c.toString('utf8');
        for (let end = text.indexOf('\n\n'); end >= 0; end = text.indexOf('\n\n')) {
          const block = text.slice(0, end);
          text = text.slice(end + 2);
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (!/^event: line$/m.test(block) || data === undefined) continue;
          const parsed = JSON.parse(data);
          checkResponse('GET', '/api/v1/unikernels/{name}/console', 200, parsed);
          numbers.push(Number(/count (\d+)$/.exec(parsed.line)?.[1]));
        }
      });
    },
  );
  req.on('error', () => {});
  req.end();
  return { req, numbers, opened: status };
}

const consecutive = (ns: readonly number[]) => ns.every((n, i) => i === 0 || n === (ns[i - 1] as number) + 1);

beforeAll(async () => {
  if (!existsSync(executable)) throw new Error('dist/ is missing the client: run `npm run build:ts` first');
  petreld = await startPetreld(
    { dave: ['--vms', '2', '--mem', '32'] },
    { metricsListen: '127.0.0.1:0', maxSubscribers: '5', maxConnectionsPerIdentity: '16' },
    { web: true },
  );
  cacert = await readFile(path.join(petreld.ca, 'cacert.pem'));
  token = await mintToken(petreld, 'dave', 'feed');
  const made = await new Promise<number>((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: petreld.webPort as number,
        method: 'PUT',
        // A numbered line every 50 ms, forever.
        path: '/api/v1/unikernels/talker?mem=8&arg=count&arg=50&no-add-name',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/octet-stream' },
        ca: cacert,
        agent: false,
      },
      (res) => {
        res.resume();
        resolve(res.statusCode as number);
      },
    );
    req.on('error', reject);
    readFile(canaryImage).then((image) => req.end(image), reject);
  });
  if (made !== 201) throw new Error(`create talker: ${made}`);
});
afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  await petreld?.stop();
});

describe('console followers of the web API', () => {
  it('eight SSE followers and five `petrel console` followers all get live lines; petreld holds one subscription for the web', async () => {
    const cli = [1, 2, 3, 4, 5].map(() => {
      const child = spawn(
        process.execPath,
        [executable, 'console', 'dave:talker', '--count', '0', '--run-dir', petreld.runDir],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      children.push(child);
      const out = { text: '', err: '' };
      child.stdout?.on('data', (d: Buffer) => {
        out.text += d.toString();
      });
      child.stderr?.on('data', (d: Buffer) => {
        out.err += d.toString();
      });
      return { child, out };
    });
    await eventually(() => cli.every((c) => c.out.err.includes('subscribed')), 20_000);
    await eventually(async () => (await subscribers()) === 5, 5000);

    const sse = Array.from({ length: 8 }, () => follow('?count=0'));
    expect(await Promise.all(sse.map((f) => f.opened))).toEqual(Array(8).fill(200));
    const cliBefore = cli.map((c) => c.out.text.length);
    // Every follower gets live lines, in order, none lost.
    await eventually(() => sse.every((f) => f.numbers.length >= 5), 15_000);
    for (const f of sse) expect(consecutive(f.numbers)).toBe(true);
    // petreld counts five CLI subscribers and ONE of the web layer's, whatever its eight followers.
    expect(await subscribers()).toBe(6);
    // No CLI follower was pushed out: each is still running and still receiving lines.
    await eventually(() => cli.every((c, i) => c.out.text.length > (cliBefore[i] as number) + 100), 15_000);
    for (const c of cli) expect(c.child.exitCode).toBeNull();
    for (const c of cli) expect(c.out.err).not.toContain('closed');

    // The last web follower gone, petreld's subscription for the web goes with it.
    for (const f of sse) f.req.destroy();
    await eventually(async () => (await subscribers()) === 5, 5000);

    // A new follower opens a new one: its history (the last 3 lines) comes from the ring, then live.
    const late = follow('?count=3');
    expect(await late.opened).toBe(200);
    await eventually(() => late.numbers.length >= 6, 10_000);
    expect(consecutive(late.numbers)).toBe(true);
    expect(await subscribers()).toBe(6);
    // A second follower joining the open subscription gets its history from the ring too.
    const second = follow('?count=4');
    await eventually(() => second.numbers.length >= 4, 10_000);
    expect(consecutive(second.numbers)).toBe(true);
    expect(await subscribers()).toBe(6);
    late.req.destroy();
    second.req.destroy();
    for (const c of cli) c.child.kill('SIGINT');
    await eventually(async () => (await subscribers()) === 0, 10_000);
  });
});

// Benchmark: the web API against the mutual-TLS path it stands beside (issue 24). Create → first
// console line, the same canary image, through one in-process petreld: by the web API (an
// event stream of the console opened first, then PUT with the image as the body) and by the TLS
// endpoint as `petrel create --remote` and `petrel console --remote` send them (a console
// subscription first, then a streamed create), rounds alternating. p50 and p90 of each and the
// ratio (target ≤ 1.2 ×). Then GET /api/v1/unikernels with 50 running beside `info` over TLS, and
// GET /api/v1/node in a row: a request's own latency and CPU.
// Guests run under the fake-kvm stand-in where KVM is missing (printed).
// The browser's side (a console line into the DOM, first render with 1,000) is bench/dashboard.ts.
// Run: npm run bench -- web (BENCH_WEB_ROUNDS, default 20).

import { readFile } from 'node:fs/promises';
import { request } from 'node:https';
import path from 'node:path';
import { unwrap } from '../src/resources/errors.js';
import { parseName } from '../src/resources/name.js';
import type { Command } from '../src/wire/types.js';
import { subscribeCommand } from '../test/daemon/client.js';
import { canaryImage, guestMode } from '../test/engine/guest.js';
import { canaryConfig, createCommand } from '../test/engine/harness.js';
import { mintToken, startPetreld } from '../test/tls/petreld.js';
import { loadAverage } from './support/load.js';

const ROUNDS = Number(process.env.BENCH_WEB_ROUNDS ?? 20);
const LIST = 50;

const pct = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
};

const petreld = await startPetreld(
  { alice: ['--vms', String(LIST + 4), '--mem', String(8 * (LIST + 4))] },
  {},
  { web: true },
);
try {
  const cacert = await readFile(path.join(petreld.ca, 'cacert.pem'));
  const token = await mintToken(petreld, 'alice', 'bench');
  const image = await readFile(canaryImage);
  const port = petreld.webPort as number;
  const headers = { authorization: `Bearer ${token}` };

  /** Resolves with the response once its head is in; `body` sent as the request's. */
  const http = (method: string, url: string, body?: Buffer) =>
    new Promise<import('node:http').IncomingMessage>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port,
          method,
          path: url,
          headers: { ...headers, ...(body === undefined ? {} : { 'content-length': body.length }) },
          ca: cacert,
        },
        resolve,
      );
      req.on('error', reject);
      req.end(body);
    });
  const drained = (res: import('node:http').IncomingMessage) =>
    new Promise<string>((resolve) => {
      let text = '';
      res.on('data', (c: Buffer) => {
        text += c.toString();
      });
      res.on('end', () => resolve(text));
    });

  async function viaWeb(vm: string): Promise<number> {
    const follow = await http('GET', `/api/v1/unikernels/${vm}/console?count=0`);
    const began = performance.now();
    const line = new Promise<number>((resolve) => {
      let text = '';
      follow.on('data', (c: Buffer) => {
        text += c.toString();
        if (text.includes(`petrel-canary ${vm}`)) resolve(performance.now() - began);
      });
    });
    const created = await http('PUT', `/api/v1/unikernels/${vm}?mem=8&arg=wait&arg=${vm}&no-add-name`, image);
    if (created.statusCode !== 201)
      throw new Error(`web create: ${created.statusCode} ${await drained(created)}`);
    await drained(created);
    const ms = await line;
    follow.destroy();
    await drained(await http('DELETE', `/api/v1/unikernels/${vm}`));
    return ms;
  }

  const remote = petreld.remote('alice');
  async function viaTls(vm: string): Promise<number> {
    const name = unwrap(parseName(vm));
    const watch = await remote.stream(name, subscribeCommand({ kind: 'count', count: 0 }));
    if (!watch.ok) throw new Error(watch.error.message);
    const began = performance.now();
    const line = (async () => {
      for await (const event of watch.value.events) {
        if (
          event.kind === 'data' &&
          event.data.type === 'console' &&
          Buffer.from(event.data.line).toString().includes(`petrel-canary ${vm}`)
        ) {
          return performance.now() - began;
        }
      }
      throw new Error('the console ended without the line');
    })();
    const create: Command = createCommand(
      await canaryConfig(canaryImage, ['wait', vm], { memory: 8, image }),
    );
    const created = await remote.request(name, create);
    if (!created.ok || created.value.kind !== 'reply')
      throw new Error(`tls create: ${JSON.stringify(created)}`);
    const ms = await line;
    watch.value.close();
    await remote.request(name, { type: 'unikernel-destroy' });
    return ms;
  }

  const web: number[] = [];
  const tls: number[] = [];
  await viaWeb('warmweb');
  await viaTls('warmtls');
  for (let i = 0; i < ROUNDS; i++) {
    if (i % 2 === 0) {
      web.push(await viaWeb(`w${i}`));
      tls.push(await viaTls(`t${i}`));
    } else {
      tls.push(await viaTls(`t${i}`));
      web.push(await viaWeb(`w${i}`));
    }
  }
  console.log(`guests: ${guestMode}; load average ${loadAverage()}`);
  console.log(`create → first console line, ${ROUNDS} rounds each, alternating:`);
  console.log(`  web API      p50 ${pct(web, 0.5).toFixed(1)} ms  p90 ${pct(web, 0.9).toFixed(1)} ms`);
  console.log(`  mutual TLS   p50 ${pct(tls, 0.5).toFixed(1)} ms  p90 ${pct(tls, 0.9).toFixed(1)} ms`);
  const ratio = pct(web, 0.5) / pct(tls, 0.5);
  console.log(`  ratio web/TLS p50 ${ratio.toFixed(2)} × (target ≤ 1.2 ×) ${ratio <= 1.2 ? 'OK' : 'MISSED'}`);

  for (let i = 0; i < LIST; i++) {
    const created = await http('PUT', `/api/v1/unikernels/l${i}?mem=8&arg=wait&no-add-name`, image);
    const said = await drained(created);
    if (created.statusCode !== 201) throw new Error(`create l${i}: ${created.statusCode} ${said}`);
  }
  const list: number[] = [];
  const info: number[] = [];
  // What runs when listed (a guest the host could not keep is not among them; said below).
  let listed = 0;
  for (let i = 0; i < ROUNDS; i++) {
    let began = performance.now();
    const page = JSON.parse(await drained(await http('GET', '/api/v1/unikernels?limit=1000'))) as {
      total: number;
    };
    list.push(performance.now() - began);
    listed = page.total;
    began = performance.now();
    await remote.request(unwrap(parseName('alice:')), { type: 'unikernel-info', release: '2.7' });
    info.push(performance.now() - began);
  }
  console.log(
    `list of ${listed} running (${LIST} created): GET /api/v1/unikernels p50 ${pct(list, 0.5).toFixed(1)} ms, info over TLS p50 ${pct(info, 0.5).toFixed(1)} ms`,
  );

  // A request's own cost: the token checked (chain, deny-list), its policy installed, one
  // command; on a kept-alive connection, one after another.
  const node: number[] = [];
  const cpu0 = process.cpuUsage();
  const wall0 = performance.now();
  for (let i = 0; i < ROUNDS * 10; i++) {
    const began = performance.now();
    await drained(await http('GET', '/api/v1/node'));
    node.push(performance.now() - began);
  }
  const seconds = (performance.now() - wall0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  console.log(
    `GET /api/v1/node, ${node.length} in a row: p50 ${pct(node, 0.5).toFixed(2)} ms, p90 ${pct(node, 0.9).toFixed(2)} ms, ${(node.length / seconds).toFixed(0)}/s; CPU of petreld and client together ${((cpu.user + cpu.system) / node.length).toFixed(0)} µs a request (one process)`,
  );
} finally {
  await petreld.stop();
}

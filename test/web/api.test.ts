// The web API over REAL HTTPS against a REAL petreld (test/tls/petreld.ts, `web: true`): its
// certificate made by `petrel ca web-cert` and verified by the client for 127.0.0.1, tokens made
// by `petrel ca token`, every response checked against docs/openapi.json. Unikernels are
// created by mutual TLS (the canary; the fake-kvm TEST DOUBLE stands in for KVM where it is
// missing). Token scope, expired, revoked, forged and malformed tokens, requests with bodies
// they do not take: refused with their codes, nothing changed.

import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import type { ClientRequest, IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeDer } from '../../src/tls/certs.js';
import { importPrivateKey } from '../../src/tls/keys.js';
import { issue } from '../../src/tls/pki.js';
import { encodeToken, parseToken } from '../../src/tls/token.js';
import { parseUsage } from '../../src/tls/token-usage.js';
import { x509 } from '../../src/tls/x509.js';
import { canaryImage } from '../engine/guest.js';
import { until } from '../engine/harness.js';
import { createCanary, mintToken, type Petreld, petrelCa, startPetreld } from '../tls/petreld.js';
import { type ApiReply, bodyOf, getBytes, openApi, type WebClient, webClient } from './client.js';
import { checkResponse } from './openapi.js';

type Reply = ApiReply;

let petreld: Petreld;
let web: WebClient;
const tokens: Record<string, string> = {};

/** One HTTPS request as `token`; the response checked against the document for `template`. */
const call = (
  method: string,
  url: string,
  token: string | null,
  template: string | null,
  body?: string | Buffer,
  localAddress?: string,
): Promise<Reply> =>
  web.call(method, url, template, body, {
    as: token,
    ...(localAddress === undefined ? {} : { localAddress }),
  });

/** An event stream for `ms`: its status and how many `line` events came. */
function sse(token: string, url: string, ms: number): Promise<{ status: number; lines: number }> {
  return new Promise((resolve, reject) => {
    const req = openApi(web, token, 'GET', url);
    req.on('response', (res: IncomingMessage) => {
      let text = '';
      res.on('data', (c: Buffer) => {
        text += c.toString('utf8');
      });
      setTimeout(() => {
        req.destroy();
        resolve({ status: res.statusCode as number, lines: text.split('event: line').length - 1 });
      }, ms);
    });
    req.on('error', (e) => (req.destroyed ? undefined : reject(e)));
    req.end();
  });
}

/**
 * A PUT of an image of `length` bytes as alice, of which `send` sends what it sends and never
 * ends it; the JSON reply (checked against the document), the connection then dropped.
 */
function putUnfinished(vm: string, length: number, send: (req: ClientRequest) => void): Promise<Reply> {
  return new Promise<Reply>((resolve, reject) => {
    const req = openApi(web, tokens.alice as string, 'PUT', `/api/v1/unikernels/${vm}`, {
      'content-type': 'application/octet-stream',
      'content-length': String(length),
    });
    req.on('response', (res: IncomingMessage) => {
      bodyOf(res).then((body) => {
        const json = JSON.parse(body.toString('utf8'));
        checkResponse('PUT', '/api/v1/unikernels/{name}', res.statusCode as number, json);
        resolve({ status: res.statusCode as number, headers: res.headers, json });
        req.destroy();
      }, reject);
    });
    req.on('error', reject);
    send(req);
  });
}

const U = '/api/v1/unikernels';
const ONE = '/api/v1/unikernels/{name}';
const RESTART = '/api/v1/unikernels/{name}/restart';
const NODE = '/api/v1/node';

const createByTls = (label: string, vm: string) => createCanary(petreld, label, vm, ['wait', vm]);

const running = () => [...petreld.daemon.engine.running].sort();
const audits = () => petreld.logs.filter((l) => l.event === 'web.audit');
const error = (reply: Reply) =>
  (reply.json as { error: { code: string; message: string; exit: number } }).error;
const items = (reply: Reply) => (reply.json as { items: { name: string }[] }).items.map((u) => u.name);

beforeAll(async () => {
  petreld = await startPetreld(
    {
      alice: ['--vms', '4', '--mem', '64', '--block', '8'],
      bob: ['--vms', '1', '--mem', '32'],
      carol: ['--vms', '1', '--mem', '32', '--cpus', '0'],
    },
    { maxConnectionsPerIdentity: '3', statsInterval: '200ms', frameStallTimeout: '1s' },
    { web: true },
  );
  for (const label of ['alice', 'bob', 'carol']) tokens[label] = await mintToken(petreld, label, 'ci');
  web = await webClient(petreld, tokens.alice as string);
  for (const vm of ['vm3', 'vm1', 'vm2']) await createByTls('alice', vm);
  await createByTls('bob', 'b1');
});
afterAll(async () => {
  await petreld?.stop();
});

describe('the web API over HTTPS', () => {
  it('lists the caller’s unikernels with their configuration, a page at a time', async () => {
    const all = await call('GET', U, tokens.alice as string, U);
    expect(all.status).toBe(200);
    expect(items(all)).toEqual(['vm1', 'vm2', 'vm3']);
    const digest = createHash('sha256')
      .update(await readFile(canaryImage))
      .digest('hex');
    const [first] = (all.json as { items: Record<string, unknown>[] }).items;
    expect(first).toMatchObject({ fullName: 'alice:vm1', state: 'running', memory: 16, cpus: 1, digest });
    expect(first?.arguments).toEqual(['wait', 'vm1']);
    expect(Math.abs(Date.parse(String(first?.started)) - Date.now())).toBeLessThan(120_000);
    expect(all.headers['content-security-policy']).toContain("frame-ancestors 'none'");

    const page = await call('GET', `${U}?limit=2`, tokens.alice as string, U);
    expect(items(page)).toEqual(['vm1', 'vm2']);
    expect(page.json).toMatchObject({ next: 'vm2', total: 3 });
    const rest = await call('GET', `${U}?limit=2&after=vm2`, tokens.alice as string, U);
    expect(items(rest)).toEqual(['vm3']);
    expect(rest.json).toMatchObject({ next: null });
    const bad = await call('GET', `${U}?limit=0`, tokens.alice as string, U);
    expect(bad.status).toBe(400);
    expect(error(bad)).toMatchObject({ code: 'E_WEB_QUERY', exit: 124 });

    const one = await call('GET', `${U}/vm2`, tokens.alice as string, ONE);
    expect(one.json).toMatchObject({ name: 'vm2', fullName: 'alice:vm2' });
  });

  it('node info: the delegation, its policy installed by the request itself, and its usage', async () => {
    const alice = await call('GET', NODE, tokens.alice as string, NODE);
    expect(alice.json).toMatchObject({
      delegation: 'alice',
      token: { name: 'ci' },
      usage: { unikernels: 3, memory: 48 },
    });
    // Only her own delegation's policies: neither the root's nor bob's.
    const paths = (alice.json as { policies: { path: string }[] }).policies.map((p) => p.path);
    expect(paths).toEqual(['alice']);
    // carol never spoke TLS: her policy is there because her token's request installed it first.
    const carol = await call('GET', NODE, tokens.carol as string, NODE);
    expect((carol.json as { policies: unknown[] }).policies).toEqual([
      { path: 'carol', relative: '', unikernels: 1, memory: 32, cpuids: [0], block: null, bridges: [] },
    ]);
    expect(carol.json).toMatchObject({ usage: { unikernels: 0, memory: 0 } });
    // petreld wrote the first use of a token at once (the next at most a minute later).
    const file = path.join(petreld.stateDir, 'web-token-usage.json');
    await until(() => existsSync(file));
    const seen = [...parseUsage(await readFile(file, 'utf8')).values()];
    expect(seen[0]).toMatchObject({ name: 'ci', delegation: 'alice' });
  });

  it("alice's token neither sees nor touches bob's unikernels, nor bob's hers", async () => {
    const bob = tokens.bob as string;
    expect(items(await call('GET', U, bob, U))).toEqual(['b1']);
    expect((await call('GET', `${U}/vm1`, bob, ONE)).status).toBe(404);
    const before = audits().length;
    const destroy = await call('DELETE', `${U}/vm1`, bob, ONE);
    expect(destroy.status).toBe(404);
    expect(error(destroy)).toMatchObject({ code: 'E_REFUSED', exit: 117 });
    // A path in the URL stays below the token's own: bob's alice:vm1 is bob:alice:vm1.
    expect((await call('DELETE', `${U}/${encodeURIComponent('alice:vm1')}`, bob, ONE)).status).toBe(404);
    const rooted = await call('DELETE', `${U}/${encodeURIComponent(':vm1')}`, bob, ONE);
    expect(rooted.status).toBe(400);
    expect(error(rooted)).toMatchObject({ code: 'E_NAME_INVALID', exit: 124 });
    expect((await call('POST', `${U}/vm1/restart`, bob, RESTART)).status).toBe(404);
    expect(running()).toEqual(['alice:vm1', 'alice:vm2', 'alice:vm3', 'bob:b1']);
    expect(items(await call('GET', U, tokens.alice as string, U))).not.toContain('b1');
    // Refused changes are changes asked for: each has its audit line.
    expect(audits().length - before).toBe(4);
  });

  it('restart and destroy change petreld, each with one audit line naming token, delegation and action', async () => {
    const alice = tokens.alice as string;
    const before = audits().length;
    const startedBefore = ((await call('GET', `${U}/vm1`, alice, ONE)).json as { started: string }).started;
    const restart = await call('POST', `${U}/vm1/restart`, alice, RESTART);
    expect(restart.status).toBe(200);
    expect(restart.json).toMatchObject({ name: 'vm1' });
    const after = ((await call('GET', `${U}/vm1`, alice, ONE)).json as { started: string }).started;
    expect(Date.parse(after)).toBeGreaterThanOrEqual(Date.parse(startedBefore));
    const destroy = await call('DELETE', `${U}/vm3`, alice, ONE);
    expect(destroy.json).toEqual({ name: 'vm3', reply: 'destroyed unikernel' });
    expect(running()).toEqual(['alice:vm1', 'alice:vm2', 'bob:b1']);
    const lines = audits().slice(before);
    expect(lines.map((l) => [l.token, l.delegation, l.action, l.unikernel, l.status])).toEqual([
      ['ci', 'alice', 'restart', 'alice:vm1', 200],
      ['ci', 'alice', 'destroy', 'alice:vm3', 200],
    ]);
    expect(JSON.stringify(lines)).not.toContain(alice.slice(5, 40));
  });

  it('refuses missing, malformed, forged, expired and revoked tokens with their codes, changing nothing', async () => {
    const expectRefused = async (token: string | null, code: string) => {
      const reply = await call('DELETE', `${U}/vm2`, token, ONE);
      expect(reply.status, code).toBe(401);
      expect(error(reply)).toMatchObject({ code, exit: 119 });
      expect(reply.headers['www-authenticate']).toContain('invalid_token');
    };
    await expectRefused(null, 'E_TOKEN_MISSING');
    await expectRefused('garbage', 'E_TOKEN_MALFORMED');
    await expectRefused('ptk1.!!!', 'E_TOKEN_MALFORMED');
    const ders = (parseToken(tokens.alice as string) as { value: Uint8Array[] }).value.map(
      (d) => new Uint8Array(d),
    );
    const forged = new Uint8Array(ders[0] as Uint8Array);
    forged[forged.length - 3] = ((forged[forged.length - 3] as number) ^ 0x40) & 0xff;
    await expectRefused(encodeToken([forged, ...ders.slice(1)]), 'E_TLS_SIGNATURE');

    // A token whose expiry has passed, signed by alice's key as `petrel ca token` would.
    const key = await importPrivateKey(await readFile(path.join(petreld.ca, 'alice.key')));
    if (!key.ok) throw new Error(key.error.message);
    const chain = decodeDer(await readFile(path.join(petreld.ca, 'alice.pem'))).map(
      (d) => new x509.X509Certificate(d),
    );
    const throwaway = (await import('../../src/tls/keys.js')).generateKey;
    const old = await issue({
      profile: 'token',
      commonName: 'old',
      publicKey: (await throwaway('ed25519')).publicKey,
      validity: { notBefore: new Date(Date.now() - 7_200_000), notAfter: new Date(Date.now() - 3_600_000) },
      issuer: { chain, key: key.value },
    });
    await expectRefused(encodeToken([old.der, ...ders.slice(1)]), 'E_TOKEN_EXPIRED');

    const doomed = await mintToken(petreld, 'alice', 'doomed');
    expect((await call('GET', `${U}/vm2`, doomed, ONE)).status).toBe(200);
    await petrelCa('revoke', doomed, '--state-dir', petreld.stateDir);
    await expectRefused(doomed, 'E_TOKEN_REVOKED');
    expect(running()).toContain('alice:vm2');
    expect(petreld.logs.filter((l) => l.event === 'web.refused').map((l) => l.code)).toContain(
      'E_TOKEN_REVOKED',
    );
  });

  it('refuses a body where none is taken, unknown resources and methods, with nothing changed', async () => {
    const alice = tokens.alice as string;
    const started = ((await call('GET', `${U}/vm2`, alice, ONE)).json as { started: string }).started;
    const restart = await call('POST', `${U}/vm2/restart`, alice, RESTART, '{"memory": 1000000}');
    expect(restart.status).toBe(400);
    expect(error(restart)).toMatchObject({ code: 'E_WEB_BODY', exit: 124 });
    const destroy = await call('DELETE', `${U}/vm2`, alice, ONE, '{}');
    expect(error(destroy).code).toBe('E_WEB_BODY');
    expect(((await call('GET', `${U}/vm2`, alice, ONE)).json as { started: string }).started).toBe(started);
    expect(running()).toContain('alice:vm2');
    const unknown = await call('GET', '/api/v1/nothing', alice, null);
    expect(unknown.status).toBe(404);
    expect(error(unknown).code).toBe('E_WEB_NOT_FOUND');
    const method = await call('PATCH', `${U}/vm2`, alice, null);
    expect(method.status).toBe(405);
    expect(error(method).code).toBe('E_WEB_METHOD');
  });

  it('admits like the TLS endpoint: a peer that does not speak TLS is closed without a byte', async () => {
    const received = await new Promise<number>((resolve, reject) => {
      const socket = connect(petreld.webPort as number, '127.0.0.1', () => {
        socket.write('GET /api/v1/node HTTP/1.1\r\nHost: x\r\n\r\n');
      });
      let bytes = 0;
      socket.on('data', (c: Buffer) => {
        bytes += c.length;
      });
      socket.on('close', () => resolve(bytes));
      socket.on('error', reject);
    });
    expect(received).toBe(0);
  });

  it('creates from a raw body streamed to petreld, with the CLI flags as parameters; a bad one changes nothing', async () => {
    const alice = tokens.alice as string;
    const image = await readFile(canaryImage);
    const before = audits().length;
    const made = await call('PUT', `${U}/ticker?mem=16&arg=count&arg=50`, alice, ONE, image);
    expect(made.status).toBe(201);
    expect(made.json).toEqual({ name: 'ticker', reply: 'created unikernel' });
    const got = await call('GET', `${U}/ticker`, alice, ONE);
    expect(got.json).toMatchObject({ memory: 16, arguments: ['count', '50'] });
    expect(
      audits()
        .slice(before)
        .map((l) => [l.action, l.unikernel, l.status]),
    ).toEqual([['create', 'alice:ticker', 201]]);

    const refusals: [string, Buffer | undefined, number, string, RegExp][] = [
      [`${U}/x?mem=lots`, image, 400, 'E_WEB_CONFIG', /^--mem must be a whole number/],
      [`${U}/x?exit-code=3`, image, 400, 'E_WEB_CONFIG', /--exit-code needs --restart-on-fail/],
      [`${U}/x?memory=16`, image, 400, 'E_WEB_QUERY', /unknown parameter "memory"/],
      [`${U}/x`, undefined, 400, 'E_WEB_BODY', /the image is the request body/],
      [`${U}/x`, Buffer.from('not an ELF at all'), 409, 'E_REFUSED', /./],
      // Above alice's 64 MiB: her delegation's policy, installed before the command, refuses it.
      [`${U}/x?mem=60`, image, 409, 'E_REFUSED', /memory/],
    ];
    for (const [url, body, status, code, message] of refusals) {
      const reply = await call('PUT', url, alice, ONE, body);
      expect(reply.status, url).toBe(status);
      expect(error(reply).code, url).toBe(code);
      expect(error(reply).message, url).toMatch(message);
    }
    expect(running()).toEqual(['alice:ticker', 'alice:vm1', 'alice:vm2', 'bob:b1']);
    // bob's token creates under bob: only, within bob's policy.
    const bobs = await call('PUT', `${U}/b2`, tokens.bob as string, ONE, image);
    expect(error(bobs)).toMatchObject({
      code: 'E_REFUSED',
      message: expect.stringMatching(/unikernels \(1\)/),
    });
  });

  it('refuses an image above maxFrameBytes by its length, before reading it', async () => {
    const reply = await putUnfinished('huge', 65 * 1024 * 1024, (req) => req.flushHeaders());
    expect(reply.status).toBe(413);
    expect(error(reply)).toMatchObject({ code: 'E_WEB_TOO_LARGE', exit: 124 });
    expect(reply.headers.connection).toBe('close');
    expect(running()).not.toContain('alice:huge');
  });

  it('follows a console as Server-Sent Events: the history first, then lines as they are printed', async () => {
    const image = await readFile(canaryImage);
    const made = await call(
      'PUT',
      `${U}/talker?mem=8&arg=count&arg=100&no-add-name`,
      tokens.alice as string,
      ONE,
      image,
    );
    expect(made.status).toBe(201);
    await new Promise((r) => setTimeout(r, 600));
    // When the subscription's reply arrived: the history was in the ring before it.
    let subscribed = 0;
    const events = await new Promise<{ event: string; data: { timestamp: string; line: string } }[]>(
      (resolve, reject) => {
        const seen: { event: string; data: { timestamp: string; line: string } }[] = [];
        const req = openApi(web, tokens.alice as string, 'GET', `${U}/talker/console?count=3`);
        req.on('response', (res: IncomingMessage) => {
          expect(res.statusCode).toBe(200);
          expect(res.headers['content-type']).toContain('text/event-stream');
          let text = '';
          res.on('data', (c: Buffer) => {
            text += c.toString('utf8');
            if (subscribed === 0 && text.startsWith(': subscribed')) subscribed = Date.now();
            for (let end = text.indexOf('\n\n'); end >= 0; end = text.indexOf('\n\n')) {
              const block = text.slice(0, end);
              text = text.slice(end + 2);
              const kind = /^event: (.*)$/m.exec(block)?.[1];
              const data = /^data: (.*)$/m.exec(block)?.[1];
              if (kind === undefined || data === undefined) continue;
              const parsed = JSON.parse(data);
              checkResponse('GET', '/api/v1/unikernels/{name}/console', 200, parsed);
              seen.push({ event: kind, data: parsed });
              if (seen.length === 6) {
                req.destroy();
                resolve(seen);
              }
            }
          });
        });
        req.on('error', (e) => (seen.length === 6 ? undefined : reject(e)));
        req.end();
      },
    );
    const numbers = events.map((e) => Number(/count (\d+)$/.exec(e.data.line)?.[1]));
    // Consecutive lines, none lost or repeated between the history and what followed it.
    expect(numbers.slice(1).map((n, i) => n - (numbers[i] as number))).toEqual([1, 1, 1, 1, 1]);
    const at = events.map((e) => Date.parse(e.data.timestamp));
    expect(at.slice(0, 3).every((t) => t <= subscribed)).toBe(true);
    // Then live lines, at the guest's pace (one every 100 ms).
    expect((at[5] as number) - (at[2] as number)).toBeGreaterThanOrEqual(250);
    // The subscriber went away: petreld's console for it ends (no subscriber left behind).
    const other = await call(
      'GET',
      `${U}/talker/console?count=1&since=2026-01-01T00:00:00Z`,
      tokens.alice as string,
      '/api/v1/unikernels/{name}/console',
    );
    expect(error(other).code).toBe('E_WEB_QUERY');
    // bob's talker is bob:talker (a console may be followed before its unikernel exists, as
    // Albatross allows): none of alice's lines reach him while hers prints ten a second.
    expect(await sse(tokens.bob as string, `${U}/talker/console?count=10`, 500)).toEqual({
      status: 200,
      lines: 0,
    });
  });

  it('a client that goes away in the middle of an image creates nothing and leaves nothing behind', async () => {
    const images = path.join(petreld.stateDir, 'images');
    const before = (await readdir(images)).sort();
    const image = Buffer.concat([await readFile(canaryImage), Buffer.alloc(4 * 1024 * 1024)]);
    const aborted = await new Promise<string>((resolve) => {
      const req = openApi(web, tokens.alice as string, 'PUT', `${U}/half`, {
        'content-type': 'application/octet-stream',
        'content-length': String(image.length),
      });
      req.on('error', (e) => resolve(e.message));
      req.on('response', () => resolve('answered'));
      req.write(image.subarray(0, image.length / 2), () => setTimeout(() => req.destroy(), 200));
    });
    expect(aborted).not.toBe('answered');
    await until(() => petreld.logs.some((l) => l.event === 'web.audit' && l.unikernel === 'alice:half'));
    const line = petreld.logs.find((l) => l.event === 'web.audit' && l.unikernel === 'alice:half');
    expect(line).toMatchObject({ action: 'create' });
    expect(line?.status).not.toBe(201);
    expect(running()).not.toContain('alice:half');
    expect((await call('GET', `${U}/half`, tokens.alice as string, ONE)).status).toBe(404);
    expect((await readdir(images)).sort()).toEqual(before);
  });

  it('an address that keeps failing is refused before any check, others are not', async () => {
    // From 127.0.0.2 (loopback), so the other tests' address keeps its count.
    for (let i = 0; i < 30; i++) {
      const bad = await call('GET', NODE, `ptk1.guess${i}`, NODE, undefined, '127.0.0.2');
      expect(error(bad).code).toBe('E_TOKEN_MALFORMED');
    }
    const blocked = await call('GET', NODE, tokens.alice as string, NODE, undefined, '127.0.0.2');
    expect(blocked.status).toBe(429);
    expect(error(blocked)).toMatchObject({ code: 'E_WEB_TOO_MANY_FAILURES', exit: 119 });
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
    expect((await call('GET', NODE, tokens.alice as string, NODE)).status).toBe(200);
  });

  it("one delegation's requests at once are bounded as its TLS sessions are; others are not", async () => {
    const carol = tokens.carol as string;
    const follows = [1, 2, 3].map(() => sse(carol, `${U}/c1/console`, 800));
    await new Promise((r) => setTimeout(r, 300));
    const fourth = await call('GET', NODE, carol, NODE);
    expect(fourth.status).toBe(429);
    expect(error(fourth)).toMatchObject({ code: 'E_WEB_TOO_MANY_REQUESTS', exit: 117 });
    expect(error(fourth).message).toBe(
      'carol: has 3 requests open, the limit is 3 (maxConnectionsPerIdentity)',
    );
    expect((await call('GET', NODE, tokens.alice as string, NODE)).status).toBe(200);
    expect((await Promise.all(follows)).map((f) => f.status)).toEqual([200, 200, 200]);
    // Once they have closed (petreld hears of it a moment later), carol is served again.
    let status = 0;
    for (const deadline = Date.now() + 5000; status !== 200 && Date.now() < deadline; ) {
      status = (await call('GET', NODE, carol, NODE)).status;
    }
    expect(status).toBe(200);
  });

  it('block devices: add, list, set from a streamed body, dump relayed, remove; bob touches none of them', async () => {
    const alice = tokens.alice as string;
    const B = '/api/v1/blocks';
    const ONE_B = '/api/v1/blocks/{name}';
    const DATA = '/api/v1/blocks/{name}/data';
    expect((await call('PUT', `${B}/disk?size=2`, alice, ONE_B)).json).toEqual({
      name: 'disk',
      reply: 'added block device',
    });
    expect((await call('GET', B, alice, B)).json).toEqual({
      items: [{ name: 'disk', fullName: 'alice:disk', size: 2, inUse: false }],
    });
    const pattern = Buffer.alloc(1024 * 1024);
    for (let i = 0; i < pattern.length; i++) pattern[i] = (i * 7) & 0xff;
    const set = await call('PUT', `${B}/disk/data`, alice, DATA, pattern);
    expect(set.status).toBe(200);
    const dump = (token: string) => getBytes(web, token, `${B}/disk/data`);
    const got = await dump(alice);
    expect(got.status).toBe(200);
    expect(got.bytes.length).toBe(2 * 1024 * 1024);
    expect(got.bytes.subarray(0, pattern.length).equals(pattern)).toBe(true);
    // Larger than the device: petreld's refusal, and the content is what it was.
    const over = await call('PUT', `${B}/disk/data`, alice, DATA, Buffer.alloc(3 * 1024 * 1024, 1));
    expect(error(over)).toMatchObject({ code: 'E_REFUSED', exit: 117 });
    expect((await dump(alice)).bytes.subarray(0, pattern.length).equals(pattern)).toBe(true);
    const bad = await call('PUT', `${B}/other?size=0`, alice, ONE_B);
    expect(error(bad).code).toBe('E_WEB_QUERY');

    const bob = tokens.bob as string;
    expect((await call('GET', B, bob, B)).json).toEqual({ items: [] });
    expect((await call('DELETE', `${B}/disk`, bob, ONE_B)).status).toBeGreaterThanOrEqual(400);
    expect((await dump(bob)).status).toBeGreaterThanOrEqual(400);
    expect((await call('GET', B, alice, B)).json).toMatchObject({ items: [{ name: 'disk' }] });

    const before = audits().length;
    expect((await call('DELETE', `${B}/disk`, alice, ONE_B)).json).toEqual({
      name: 'disk',
      reply: 'removed block',
    });
    expect((await call('GET', B, alice, B)).json).toEqual({ items: [] });
    expect(
      audits()
        .slice(before)
        .map((l) => [l.action, l.block, l.status]),
    ).toEqual([['block-remove', 'alice:disk', 200]]);
  });

  it('follows a unikernel’s resource usage as Server-Sent Events, each sample checked against the document', async () => {
    const events = await new Promise<unknown[]>((resolve, reject) => {
      const seen: unknown[] = [];
      const req = openApi(web, tokens.alice as string, 'GET', `${U}/vm1/stats`);
      req.on('response', (res: IncomingMessage) => {
        expect(res.statusCode).toBe(200);
        let text = '';
        res.on('data', (c: Buffer) => {
          text += c.toString('utf8');
          for (const m of text.matchAll(/event: stats\ndata: (.*)\n\n/g))
            seen.push(JSON.parse(m[1] as string));
          text = text.slice(text.lastIndexOf('\n\n') + 2);
          if (seen.length >= 2) {
            req.destroy();
            resolve(seen);
          }
        });
      });
      req.on('error', (e) => (seen.length >= 2 ? undefined : reject(e)));
      req.end();
    });
    for (const sample of events) checkResponse('GET', '/api/v1/unikernels/{name}/stats', 200, sample);
    expect(events[0]).toMatchObject({ networks: [] });
    expect((events[0] as { memory: { residentPages: number } }).memory.residentPages).toBeGreaterThan(0);
    const bad = await call(
      'GET',
      `${U}/vm1/stats?every=1s`,
      tokens.alice as string,
      '/api/v1/unikernels/{name}/stats',
    );
    expect(error(bad).code).toBe('E_WEB_QUERY');
  });

  it('a body that stalls longer than frameStallTimeout is refused, and nothing is created', async () => {
    const image = Buffer.concat([await readFile(canaryImage), Buffer.alloc(1024 * 1024)]);
    // Half of it, then nothing: the client neither sends the rest nor goes away.
    const reply = await putUnfinished('stalled', image.length, (req) =>
      req.write(image.subarray(0, image.length / 2)),
    );
    expect(reply.status).toBe(408);
    expect(error(reply)).toMatchObject({ code: 'E_TLS_FRAME_STALLED', exit: 124 });
    expect(running()).not.toContain('alice:stalled');
  });

  it('gets an image as stored, relayed with its length; bob gets none of alice’s', async () => {
    const image = await readFile(canaryImage);
    const get = async (token: string, vm: string) => {
      const got = await getBytes(web, token, `${U}/${vm}/image`);
      return { ...got, length: got.headers['content-length'] };
    };
    const got = await get(tokens.alice as string, 'vm1');
    expect(got.status).toBe(200);
    expect(got.length).toBe(String(image.length));
    expect(got.bytes.equals(image)).toBe(true);
    const bobs = await get(tokens.bob as string, 'vm1');
    expect(bobs.status).toBe(404);
    const body = JSON.parse(bobs.bytes.toString('utf8'));
    checkResponse('GET', '/api/v1/unikernels/{name}/image', 404, body);
    expect(body.error).toMatchObject({ code: 'E_REFUSED', exit: 117 });
  });
});

// Browser sessions over REAL HTTPS against a REAL petreld (test/tls/petreld.ts, `web: true`):
// sign in with a token into a cookie, the CSRF token every cookie change needs, revocation and
// idle time ending a session, sign-out, failed sign-ins limited, the dashboard's own CSP.
// Unikernels are the canary, created by mutual TLS (the fake-kvm TEST DOUBLE where KVM is missing).

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { caCommand } from '../../src/cli/commands/ca.js';
import {
  createCanary,
  eventually,
  mintToken,
  type Petreld,
  startPetreld,
  type WebReply,
  webRequest,
} from '../tls/petreld.js';
import { sessionOf, signIn as signInTo } from './client.js';
import { checkResponse } from './openapi.js';

let petreld: Petreld;
let token: string;

const json = (reply: WebReply) => JSON.parse(reply.text) as Record<string, unknown>;
const code = (reply: WebReply) => (json(reply).error as { code: string }).code;
const cookieOf = (reply: WebReply): string => sessionOf(reply).cookie;
const running = () => [...petreld.daemon.engine.running].sort();

const signIn = (text: string, localAddress?: string) => signInTo(petreld, text, localAddress);

const createByTls = (vm: string, args = ['wait', vm]) => createCanary(petreld, 'alice', vm, args);

beforeAll(async () => {
  petreld = await startPetreld(
    { alice: ['--vms', '2', '--mem', '64'] },
    { webSessionIdleTimeout: '3s', statsInterval: '200ms' },
    { web: true },
  );
  token = await mintToken(petreld, 'alice', 'browser');
  await createByTls('s1');
});
afterAll(async () => {
  await petreld?.stop();
});

describe('browser sessions of the web API', () => {
  it('signs in into a Secure, HttpOnly, SameSite=Strict cookie that acts as the token', async () => {
    const reply = await signIn(token);
    expect(reply.status).toBe(201);
    const set = String(reply.headers['set-cookie']);
    expect(set).toMatch(/^__Host-petrel-session=[\w-]{43};/);
    for (const attribute of ['Path=/', 'Secure', 'HttpOnly', 'SameSite=Strict'])
      expect(set.split('; ')).toContain(attribute);
    const body = json(reply);
    expect(body).toMatchObject({ delegation: 'alice', token: { name: 'browser' }, idleTimeout: 3 });
    const cookie = cookieOf(reply);
    const who = await webRequest(petreld, 'GET', '/api/v1/session', { cookie });
    expect(json(who).csrf).toBe(body.csrf);
    const list = await webRequest(petreld, 'GET', '/api/v1/unikernels', { cookie });
    expect(list.status).toBe(200);
    expect((json(list).items as { name: string }[]).map((u) => u.name)).toEqual(['s1']);
    // A cookie made up is no session.
    const forged = await webRequest(petreld, 'GET', '/api/v1/unikernels', {
      cookie: `__Host-petrel-session=${'A'.repeat(43)}`,
    });
    expect(forged.status).toBe(401);
    expect(code(forged)).toBe('E_WEB_SESSION');
  });

  it('gives the dashboard the last hour of samples and the restart history, below the delegation only', async () => {
    const bearer = { authorization: `Bearer ${token}` };
    await createByTls('x1', ['exit', '3']);
    let samples: number[][] = [];
    await eventually('three samples of s1', async () => {
      const reply = await webRequest(petreld, 'GET', '/api/v1/unikernels/s1/samples', bearer);
      checkResponse('GET', '/api/v1/unikernels/{name}/samples', reply.status, json(reply));
      samples = json(reply).samples as number[][];
      return samples.length >= 3;
    });
    const times = samples.map((row) => row[0] as number);
    expect(times).toEqual([...times].sort((a, b) => a - b));
    expect(Math.abs((times.at(-1) as number) - Date.now())).toBeLessThan(60_000);
    // The tender's resident memory, in bytes; its CPU seconds never go back.
    expect(samples.at(-1)?.[2]).toBeGreaterThan(100_000);
    const cpu = samples.map((row) => row[1] as number);
    expect(cpu).toEqual([...cpu].sort((a, b) => a - b));
    // Nothing of another delegation: a name below the token's own has no samples.
    const other = await webRequest(petreld, 'GET', '/api/v1/unikernels/nobody/samples', bearer);
    expect(json(other).samples).toEqual([]);
    let exits: Record<string, unknown>[] = [];
    await eventually('the exit of x1', async () => {
      const reply = await webRequest(petreld, 'GET', '/api/v1/exits', bearer);
      checkResponse('GET', '/api/v1/exits', reply.status, json(reply));
      exits = json(reply).items as Record<string, unknown>[];
      return exits.length > 0;
    });
    expect(exits).toEqual([expect.objectContaining({ name: 'x1', state: 'dropped', exit: 'exit 3' })]);
  });

  it('refuses a cookie change without its CSRF token (403), changing nothing; with it, the change is made', async () => {
    const { cookie, csrf } = sessionOf(await signIn(token));
    const before = petreld.logs.filter((l) => l.event === 'web.audit').length;
    const bare = await webRequest(petreld, 'DELETE', '/api/v1/unikernels/s1', { cookie });
    expect(bare.status).toBe(403);
    expect(code(bare)).toBe('E_WEB_CSRF');
    const wrong = await webRequest(petreld, 'POST', '/api/v1/unikernels/s1/restart', {
      cookie,
      'x-csrf-token': `${csrf.slice(0, -1)}${csrf.endsWith('A') ? 'B' : 'A'}`,
    });
    expect(wrong.status).toBe(403);
    expect(running()).toEqual(['alice:s1']);
    const done = await webRequest(petreld, 'DELETE', '/api/v1/unikernels/s1', {
      cookie,
      'x-csrf-token': csrf,
    });
    expect(done.status).toBe(200);
    expect(running()).toEqual([]);
    const audits = petreld.logs.filter((l) => l.event === 'web.audit').slice(before);
    expect(audits.map((l) => [l.action, l.token, l.delegation, l.status])).toEqual([
      ['destroy', 'browser', 'alice', 200],
    ]);
  });

  it('ends a session at sign-out, with its token revoked, and after its idle time', async () => {
    const out = await signIn(token);
    const cookie = cookieOf(out);
    const refused = await webRequest(petreld, 'DELETE', '/api/v1/session', { cookie });
    expect(refused.status).toBe(403);
    const gone = await webRequest(petreld, 'DELETE', '/api/v1/session', {
      cookie,
      'x-csrf-token': String(json(out).csrf),
    });
    expect(gone.status).toBe(200);
    expect(String(gone.headers['set-cookie'])).toContain('Max-Age=0');
    expect(code(await webRequest(petreld, 'GET', '/api/v1/node', { cookie }))).toBe('E_WEB_SESSION');
    expect(
      petreld.logs.filter((l) => l.event === 'web.audit' && l.token === 'browser').map((l) => l.action),
    ).toEqual(expect.arrayContaining(['sign-in', 'sign-out']));

    // Revoked after sign-in: the deny-list holds for the session from its next request.
    const doomed = await mintToken(petreld, 'alice', 'doomed');
    const session = cookieOf(await signIn(doomed));
    expect((await webRequest(petreld, 'GET', '/api/v1/node', { cookie: session })).status).toBe(200);
    expect(await caCommand.run(['revoke', doomed, '--state-dir', petreld.stateDir], quiet)).toBe(0);
    const revoked = await webRequest(petreld, 'GET', '/api/v1/node', { cookie: session });
    expect(revoked.status).toBe(401);
    expect(code(revoked)).toBe('E_TOKEN_REVOKED');
    expect((await signIn(doomed)).status).toBe(401);

    const idle = cookieOf(await signIn(token));
    await new Promise((r) => setTimeout(r, 3500));
    expect(code(await webRequest(petreld, 'GET', '/api/v1/node', { cookie: idle }))).toBe('E_WEB_SESSION');
  });

  it('limits failed sign-ins per address with the API’s 429, and refuses bodies that are not a sign-in', async () => {
    const from = '127.0.0.9';
    const statuses: number[] = [];
    for (let i = 0; i < 31; i++) statuses.push((await signIn(`ptk1.bogus${i}`, from)).status);
    expect(statuses.slice(0, 30)).toEqual(Array(30).fill(401));
    expect(statuses[30]).toBe(429);
    // The good token too, from there, until the minute is over; elsewhere it signs in.
    expect((await signIn(token, from)).status).toBe(429);
    expect((await signIn(token)).status).toBe(201);
    const form = await webRequest(
      petreld,
      'POST',
      '/api/v1/session',
      { 'content-type': 'text/plain' },
      token,
    );
    expect(form.status).toBe(400);
    expect(code(form)).toBe('E_WEB_BODY');
  });

  it('serves the dashboard under its own CSP, the API keeping default-src none', async () => {
    const page = await webRequest(petreld, 'GET', '/');
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toContain('text/html');
    const csp = String(page.headers['content-security-policy']);
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(page.text).toContain('src="/app.js"');
    expect(page.text).not.toMatch(/<script>[^<]/);
    const script = await webRequest(petreld, 'GET', '/app.js');
    expect(script.headers['content-type']).toContain('javascript');
    const api = await webRequest(petreld, 'GET', '/api/v1/node');
    expect(api.headers['content-security-policy']).toBe("default-src 'none'; frame-ancestors 'none'");
  });
});

const quiet = {
  stdout: () => {},
  stderr: () => {},
  readFile: async () => new Uint8Array(),
  writeFile: async () => {},
};

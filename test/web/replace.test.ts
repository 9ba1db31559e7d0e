// Replace (Petrel (m)) from afar against a REAL petreld (test/tls/petreld.ts): `petrel replace
// --remote` over mutual TLS with alice's delegation, and POST /api/v1/unikernels/{name}/replace
// over HTTPS with her token, the HTTP check against a server this test runs on loopback. Every
// response is checked against docs/openapi.json; bad input is refused with its code and nothing
// changes. Unikernels are the canary (the fake-kvm TEST DOUBLE stands in for KVM where missing).

import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { petrel } from '../cli/io.js';
import { canaryImage } from '../engine/guest.js';
import { storedState } from '../engine/harness.js';
import { createCanary, mintToken, type Petreld, remoteFlags, startPetreld } from '../tls/petreld.js';
import { type WebClient, webClient } from './client.js';

let petreld: Petreld;
let oldImage: Buffer;
let newImage: Buffer;
let newFile: string;
let health: ReturnType<typeof createServer>;
let healthPort: number;
let healthStatus = 503;
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
const REPLACE = '/api/v1/unikernels/{name}/replace';
const ONE = '/api/v1/unikernels/{name}';

let web: WebClient;
const call = async (method: string, url: string, template: string, body?: Buffer) => {
  const reply = await web.call(method, url, template, body);
  return { status: reply.status, json: reply.json as Record<string, unknown> };
};

const error = (reply: { json: Record<string, unknown> }) =>
  reply.json.error as { code: string; message: string; exit: number };

async function digestOf(vm: string): Promise<string> {
  const reply = await call('GET', `/api/v1/unikernels/${vm}`, ONE);
  return String(reply.json.digest);
}

beforeAll(async () => {
  petreld = await startPetreld(
    { alice: ['--vms', '3', '--mem', '64'], dora: ['--vms', '1', '--mem', '24'] },
    {},
    { web: true },
  );
  web = await webClient(petreld, await mintToken(petreld, 'alice', 'ci'));
  oldImage = await readFile(canaryImage);
  newImage = Buffer.concat([oldImage, Buffer.from('replacement v2')]);
  newFile = path.join(petreld.dir, 'canary-v2.hvt');
  await writeFile(newFile, newImage);
  health = createServer((_req, res) => {
    res.writeHead(healthStatus);
    res.end();
  });
  health.listen(0, '127.0.0.1');
  await once(health, 'listening');
  healthPort = (health.address() as { port: number }).port;
  for (const [who, vm] of [
    ['alice', 'web'],
    ['alice', 'tls'],
    ['dora', 'small'],
  ] as const)
    await createCanary(petreld, who, vm, ['wait', vm]);
}, 60_000);
afterAll(async () => {
  health?.close();
  await petreld?.stop();
});

describe('replace over TLS and over the web API', () => {
  it('petrel replace --remote: petreld runs the check; a pass keeps the new image', {
    timeout: 60_000,
  }, async () => {
    const remote = remoteFlags(petreld, 'alice');
    const run = await petrel(['replace', 'tls', newFile, '--console-line', '^petrel-canary tls$', ...remote]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^replaced unikernel alice:tls: console line .* passed/u);
    expect(await digestOf('tls')).toBe(sha(newImage));
    // A failing one over TLS: rolled back, the reason on stderr.
    const failed = await petrel([
      'replace',
      'tls',
      canaryImage,
      '--console-line',
      'never',
      '--within',
      '1s',
      ...remote,
    ]);
    expect(failed.code).toBe(117);
    expect(failed.stderr).toMatch(
      /no console line matching \/never\/ within 1 s; the previous unikernel runs again/u,
    );
    expect(await digestOf('tls')).toBe(sha(newImage));
  });

  it("petrel replace --remote keeping the configuration is not held to create's defaults", {
    timeout: 60_000,
  }, async () => {
    // dora may use 24 MB; create's default is 32, her unikernel's configuration 16.
    const remote = remoteFlags(petreld, 'dora');
    const run = await petrel([
      'replace',
      'small',
      newFile,
      '--console-line',
      '^petrel-canary small$',
      ...remote,
    ]);
    expect(run.stderr).toBe('');
    expect(run.stdout).toMatch(/^replaced unikernel dora:small: /u);
    // With a configuration, that configuration is checked, as a create's.
    const bigger = await petrel([
      'replace',
      'small',
      newFile,
      '--console-line',
      'x',
      '--mem',
      '32',
      ...remote,
    ]);
    expect(bigger.code).not.toBe(0);
    expect(bigger.stderr).toMatch(/32 MB memory assigned to unikernel exceeds policy \(24MB\)/u);
  });

  it('POST …/replace with an HTTP check: a 503 is rolled back and says so; a 200 stays', {
    timeout: 60_000,
  }, async () => {
    const url = `http://127.0.0.1:${healthPort}/health`;
    healthStatus = 503;
    const q = `http-check=${encodeURIComponent(url)}&within=2s`;
    const failed = await call('POST', `/api/v1/unikernels/web/replace?${q}`, REPLACE, newImage);
    expect(failed.status).toBe(409);
    expect(error(failed).code).toBe('E_REFUSED');
    expect(error(failed).message).toMatch(
      new RegExp(
        `failed its check \\(HTTP GET ${url.replace(/[.]/gu, '\\.')}\\): no pass within 2 s \\(\\d+ tries\\), the last: HTTP status 503; the previous unikernel runs again`,
        'u',
      ),
    );
    expect(await digestOf('web')).toBe(sha(oldImage));
    healthStatus = 200;
    const passed = await call('POST', `/api/v1/unikernels/web/replace?${q}`, REPLACE, newImage);
    expect(passed.status).toBe(200);
    expect(String(passed.json.reply)).toMatch(
      /^replaced unikernel alice:web: HTTP GET .* passed \(HTTP 200 from/u,
    );
    expect(await digestOf('web')).toBe(sha(newImage));
    // The old configuration kept: its arguments.
    const info = await call('GET', '/api/v1/unikernels/web', ONE);
    expect(info.json.arguments).toEqual(['wait', 'web']);
    const audit = petreld.logs.filter((l) => l.event === 'web.audit' && l.action === 'replace');
    expect(audit.map((l) => l.status)).toEqual([409, 200]);
  });

  it('refuses bad input with its code and changes nothing', { timeout: 60_000 }, async () => {
    const before = await digestOf('web');
    const cases: [string, number, string, RegExp][] = [
      [
        'console-line=a&tcp-check=127.0.0.1:1',
        400,
        'E_REPLACE_CHECK',
        /exactly one of http-check, tcp-check and console-line \(2 given\)/u,
      ],
      ['', 400, 'E_REPLACE_CHECK', /\(0 given\)/u],
      ['console-line=(a%2B)%2B', 400, 'E_REPLACE_CHECK', /repeated group/u],
      ['http-check=gopher://x/', 400, 'E_REPLACE_CHECK', /only http/u],
      ['console-line=a&within=0s', 400, 'E_REPLACE_CHECK', /between 1s and 10m/u],
      ['console-line=a&force', 400, 'E_WEB_QUERY', /takes no force/u],
      ['console-line=a&mem=lots', 400, 'E_WEB_CONFIG', /mem/u],
    ];
    for (const [query, status, code, message] of cases) {
      const reply = await call('POST', `/api/v1/unikernels/web/replace?${query}`, REPLACE, newImage);
      expect([reply.status, error(reply).code], query).toEqual([status, code]);
      expect(error(reply).message, query).toMatch(message);
    }
    const unknown = await call('POST', '/api/v1/unikernels/nobody/replace?console-line=a', REPLACE, newImage);
    expect([unknown.status, error(unknown).code]).toEqual([404, 'E_REFUSED']);
    expect(error(unknown).message).toBe('replace: unikernel alice:nobody not found');
    expect(await digestOf('web')).toBe(before);
    expect((await storedState(petreld.stateDir)).replacements).toBeUndefined();
  });
});

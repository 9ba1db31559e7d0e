// `petreld tls-endpoint` as the daemon will run it, end to end with `petrel ca` files: a CA and
// server certificate from `ca init`, a delegation from `ca delegate`, an on-the-fly leaf as the
// remote client makes it, and FakePetreld standing in for the daemon's sockets.

import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { runPetrel } from '../../src/cli/dispatch.js';
import { decodeDer } from '../../src/tls/certs.js';
import { parseTlsEndpointArgs, runTlsEndpoint } from '../../src/tls/cli.js';
import { exportPrivateKey, importPrivateKey } from '../../src/tls/keys.js';
import { issueCommandLeaf } from '../../src/tls/pki.js';
import { ADMISSION_DEFAULTS } from '../../src/tls/settings.js';
import { x509 } from '../../src/tls/x509.js';
import { FrameReader } from '../../src/wire/index.js';
import { FakePetreld } from './fake-petreld.js';
import { INFO, name } from './helpers.js';

describe('parseTlsEndpointArgs', () => {
  it('flags or Albatross positionals, with the documented defaults', () => {
    const flags = parseTlsEndpointArgs(['--run-dir', '/r', '--ca', 'a', '--cert', 'b', '--key', 'c']);
    expect(flags).toEqual({
      ok: true,
      value: {
        runDir: '/r',
        ca: 'a',
        cert: 'b',
        key: 'c',
        host: '::',
        port: 1025,
        maxFrameBytes: 64 * 1024 * 1024,
        admission: ADMISSION_DEFAULTS,
        maxConnectionsPerIdentity: 64,
        frameStallTimeoutMs: 30_000,
        web: null,
      },
    });
    const web = parseTlsEndpointArgs([
      'a',
      'b',
      'c',
      '--web-port',
      '8443',
      '--web-cert',
      'w',
      '--web-key',
      'k',
    ]);
    expect(web.ok && web.value.web).toEqual({ port: 8443, cert: 'w', key: 'k', stateDir: '/var/lib/petrel' });
    const positional = parseTlsEndpointArgs([
      'a',
      'b',
      'c',
      '--port',
      '4443',
      '--handshake-stall-timeout',
      '3',
      '--max-pending-per-address',
      '7',
    ]);
    expect(
      positional.ok && [
        positional.value.ca,
        positional.value.port,
        positional.value.admission.handshakeStallMs,
        positional.value.admission.maxPendingPerAddress,
      ],
    ).toEqual(['a', 4443, 3000, 7]);
  });

  it.each([
    [[]],
    [['a', 'b']],
    [['a', 'b', 'c', '--port', 'x']],
    [['a', 'b', 'c', '--max-frame-bytes', '0']],
    [['--bogus']],
  ])('refuses %j', (args) => {
    expect(parseTlsEndpointArgs(args)).toMatchObject({ ok: false, error: { code: 'E_TLS_USAGE' } });
  });
});

describe('runTlsEndpoint', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('serves a delegated remote client until aborted', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'petrel-ep-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const quiet = {
      stdout: () => {},
      stderr: () => {},
      readFile: async () => new Uint8Array(),
      writeFile: async () => {},
    };
    expect(await runPetrel(['ca', 'init', '--dir', dir], quiet)).toBe(0);
    const args = ['alice', '--vms', '2', '--mem', '64', '--dir', dir];
    expect(await runPetrel(['ca', 'delegate', ...args], quiet)).toBe(0);
    const fake = await FakePetreld.start();
    cleanups.push(() => fake.close());

    const logs: Record<string, unknown>[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => logs.push(JSON.parse(line)) });
    const controller = new AbortController();
    const files = ['cacert.pem', 'server.pem', 'server.key'].map((f) => join(dir, f));
    const running = runTlsEndpoint(['--run-dir', fake.runDir, '--ip', '127.0.0.1', '--port', '0', ...files], {
      logger,
      signal: controller.signal,
      stderr: (text) => {
        throw new Error(text);
      },
    });
    const port = await until(() => logs.find((l) => l.event === 'tls.listening')?.port as number | undefined);

    const chain = decodeDer(await readFile(join(dir, 'alice.pem'), 'utf8')).map(
      (d) => new x509.X509Certificate(d),
    );
    const key = await importPrivateKey(await readFile(join(dir, 'alice.key')));
    if (!key.ok) throw new Error(key.error.message);
    const leaf = await issueCommandLeaf({ chain, key: key.value }, INFO, name(':web'));
    if (!leaf.ok) throw new Error(leaf.error.message);
    const tlsOptions = {
      host: '127.0.0.1',
      port,
      ca: await readFile(join(dir, 'cacert.pem'), 'utf8'),
      cert: leaf.value.chain.map((c) => c.toString('pem')).join('\n'),
      key: await exportPrivateKey(leaf.value.key),
      checkServerIdentity: () => undefined,
    };
    const frames = await new Promise<number>((resolve, reject) => {
      const socket = connect(tlsOptions);
      const reader = new FrameReader();
      let count = 0;
      socket.on('data', (chunk: Buffer) => {
        const events = reader.push(new Uint8Array(chunk));
        if (events.ok) count += events.value.length;
      });
      socket.on('error', reject);
      socket.on('close', () => resolve(count));
    });
    expect(frames).toBe(1);
    expect(fake.messages()).toEqual([
      ['vmmd', 'alice:', 'policy-add'],
      ['vmmd', 'alice:web', 'unikernel-info'],
    ]);
    controller.abort();
    expect(await running).toBe(0);
  });

  it('exits 1 when the files are unusable, 2 on bad flags', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'petrel-ep-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    await writeFile(join(dir, 'x.pem'), 'not a certificate');
    const signal = AbortSignal.abort();
    let stderr = '';
    const options = {
      signal,
      stderr: (t: string) => {
        stderr += t;
      },
    };
    expect(await runTlsEndpoint([join(dir, 'x.pem'), join(dir, 'x.pem'), join(dir, 'x.pem')], options)).toBe(
      1,
    );
    expect(await runTlsEndpoint([join(dir, 'missing'), 'b', 'c'], options)).toBe(1);
    expect(await runTlsEndpoint(['--port'], options)).toBe(2);
    expect(stderr).toContain('petreld tls-endpoint:');
  });
});

async function until<T>(probe: () => T | undefined): Promise<T> {
  for (let i = 0; i < 200; i++) {
    const value = probe();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error('timed out');
}

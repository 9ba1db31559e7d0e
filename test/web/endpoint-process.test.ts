// The web API beside `petreld tls-endpoint` in its own process (the compiled dist/src/cli/
// petreld.js), in front of the sockets of a real petreld started without TLS or web: the same
// tokens and requests reach it through the run directory's sockets, petreld's deny-list is
// honoured from its state directory, and SIGTERM stops it cleanly.

import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { canaryImage } from '../engine/guest.js';
import { until } from '../engine/harness.js';
import { endpointFlags, launchEndpoint } from '../tls/endpoint-process.js';
import { mintToken, type Petreld, petrelCa, startPetreld } from '../tls/petreld.js';
import { requestApi } from './client.js';

let petreld: Petreld | undefined;
afterEach(async () => {
  await petreld?.stop();
  petreld = undefined;
});

it('serves the web API from a separate endpoint process, through petreld’s sockets', async () => {
  petreld = await startPetreld({ alice: ['--vms', '1', '--mem', '32'] }, {}, { tls: false });
  const dir = petreld.ca;
  await petrelCa('web-cert', '127.0.0.1', '--dir', dir);
  const token = await mintToken(petreld, 'alice', 'ci');
  const {
    process: proc,
    logs,
    exited,
  } = launchEndpoint([
    ...endpointFlags(petreld),
    ...['--web-port', '0', '--web-cert', path.join(dir, 'web.pem'), '--web-key', path.join(dir, 'web.key')],
    ...['--state-dir', petreld.stateDir],
  ]);
  await until(() => logs.some((l) => l.event === 'web.listening'));
  const port = logs.find((l) => l.event === 'web.listening')?.port as number;
  const api = { port, ca: await readFile(path.join(dir, 'cacert.pem')) };
  const call = async (method: string, url: string, body?: Buffer) => {
    const reply = await requestApi(api, method, url, { authorization: `Bearer ${token}` }, body);
    return { status: reply.status, json: JSON.parse(reply.text) as unknown };
  };
  expect(await call('GET', '/api/v1/node')).toMatchObject({ status: 200, json: { delegation: 'alice' } });
  const made = await call('PUT', '/api/v1/unikernels/web?mem=16&arg=wait', await readFile(canaryImage));
  expect(made).toMatchObject({ status: 201, json: { reply: 'created unikernel' } });
  expect([...petreld.daemon.engine.running]).toEqual(['alice:web']);
  // The child's log arrives through its stdout, a moment after the response.
  await until(() =>
    logs.some((l) => l.event === 'web.audit' && l.unikernel === 'alice:web' && l.status === 201),
  );
  // Revoked in petreld's state directory: the separate process refuses the token from then on.
  await petrelCa('revoke', token, '--state-dir', petreld.stateDir);
  const refused = await call('DELETE', '/api/v1/unikernels/web');
  expect(refused).toMatchObject({ status: 401, json: { error: { code: 'E_TOKEN_REVOKED' } } });
  expect([...petreld.daemon.engine.running]).toEqual(['alice:web']);
  proc.kill('SIGTERM');
  expect(await exited).toBe(0);
});

it('refuses --web-port without its certificate, as a usage error', async () => {
  const proc = launchEndpoint(['--ca', 'a', '--cert', 'b', '--key', 'c', '--web-port', '8443']).process;
  let stderr = '';
  proc.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const code = await new Promise<number | null>((resolve) => proc.once('exit', (c) => resolve(c)));
  expect(code).toBe(2);
  expect(stderr).toContain('--web-port needs --web-cert and --web-key');
});

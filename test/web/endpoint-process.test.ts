// The web API beside `petreld tls-endpoint` in its own process (the compiled dist/src/cli/
// petreld.js), in front of the sockets of a real petreld started without TLS or web: the same
// tokens and requests reach it through the run directory's sockets, petreld's deny-list is
// honoured from its state directory, and SIGTERM stops it cleanly.

import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { request } from 'node:https';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, expect, it } from 'vitest';
import { caCommand } from '../../src/cli/commands/ca.js';
import { canaryImage, repo } from '../engine/guest.js';
import { until } from '../engine/harness.js';
import { type Petreld, petrelCa, startPetreld } from '../tls/petreld.js';

const petreldJs = path.join(repo, 'dist', 'src', 'cli', 'petreld.js');

let petreld: Petreld | undefined;
let child: ChildProcess | undefined;
afterEach(async () => {
  if (child !== undefined && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  child = undefined;
  await petreld?.stop();
  petreld = undefined;
});

async function ca(...args: string[]): Promise<string> {
  let out = '';
  const status = await caCommand.run(args, {
    stdout: (t) => {
      out += String(t);
    },
    stderr: () => {},
    readFile: async () => new Uint8Array(),
    writeFile: async () => {},
  });
  if (status !== 0) throw new Error(`petrel ca ${args.join(' ')}: ${status}`);
  return out.trim();
}

it('serves the web API from a separate endpoint process, through petreld’s sockets', async () => {
  if (!existsSync(petreldJs)) throw new Error(`${petreldJs} is missing: run npm run build:ts`);
  petreld = await startPetreld({ alice: ['--vms', '1', '--mem', '32'] }, {}, { tls: false });
  const dir = petreld.ca;
  await petrelCa('web-cert', '127.0.0.1', '--dir', dir);
  const token = await ca(
    'token',
    '--cert',
    path.join(dir, 'alice.pem'),
    '--key',
    path.join(dir, 'alice.key'),
    '--name',
    'ci',
  );
  const proc = spawn(
    process.execPath,
    [
      petreldJs,
      'tls-endpoint',
      ...['--run-dir', petreld.runDir, '--ip', '127.0.0.1', '--port', '0'],
      ...[
        '--ca',
        path.join(dir, 'cacert.pem'),
        '--cert',
        path.join(dir, 'server.pem'),
        '--key',
        path.join(dir, 'server.key'),
      ],
      ...['--web-port', '0', '--web-cert', path.join(dir, 'web.pem'), '--web-key', path.join(dir, 'web.key')],
      ...['--state-dir', petreld.stateDir],
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child = proc;
  const logs: Record<string, unknown>[] = [];
  createInterface({ input: proc.stdout as NodeJS.ReadableStream }).on('line', (line) => {
    try {
      logs.push(JSON.parse(line));
    } catch {
      logs.push({ text: line });
    }
  });
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  await until(() => logs.some((l) => l.event === 'web.listening'));
  const port = logs.find((l) => l.event === 'web.listening')?.port as number;
  const cacert = await readFile(path.join(dir, 'cacert.pem'));
  const call = (method: string, url: string, body?: Buffer) =>
    new Promise<{ status: number; json: unknown }>((resolve, reject) => {
      const headers: Record<string, string> = { authorization: `Bearer ${token}` };
      if (body !== undefined) headers['content-length'] = String(body.length);
      const req = request(
        { host: '127.0.0.1', port, method, path: url, headers, ca: cacert, agent: false },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => {
            text += c.toString();
          });
          res.on('end', () => resolve({ status: res.statusCode as number, json: JSON.parse(text) }));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  expect(await call('GET', '/api/v1/node')).toMatchObject({ status: 200, json: { delegation: 'alice' } });
  const made = await call('PUT', '/api/v1/unikernels/web?mem=16&arg=wait', await readFile(canaryImage));
  expect(made).toMatchObject({ status: 201, json: { reply: 'created unikernel' } });
  expect([...petreld.daemon.engine.running]).toEqual(['alice:web']);
  // The child's log arrives through its stdout, a moment after the response.
  await until(() =>
    logs.some((l) => l.event === 'web.audit' && l.unikernel === 'alice:web' && l.status === 201),
  );
  // Revoked in petreld's state directory: the separate process refuses the token from then on.
  await ca('revoke', token, '--state-dir', petreld.stateDir);
  const refused = await call('DELETE', '/api/v1/unikernels/web');
  expect(refused).toMatchObject({ status: 401, json: { error: { code: 'E_TOKEN_REVOKED' } } });
  expect([...petreld.daemon.engine.running]).toEqual(['alice:web']);
  proc.kill('SIGTERM');
  expect(await exited).toBe(0);
});

it('refuses --web-port without its certificate, as a usage error', async () => {
  const proc = spawn(
    process.execPath,
    [petreldJs, 'tls-endpoint', '--ca', 'a', '--cert', 'b', '--key', 'c', '--web-port', '8443'],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  child = proc;
  let stderr = '';
  proc.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const code = await new Promise<number | null>((resolve) => proc.once('exit', (c) => resolve(c)));
  expect(code).toBe(2);
  expect(stderr).toContain('--web-port needs --web-cert and --web-key');
});

// Token usage: counted in memory, written at most once per interval (the first use at once),
// read back at start so counts go on; `petrel ca token --list` prints it with revoked and
// expired tokens marked.

import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, expect, it } from 'vitest';
import { caCommand } from '../../src/cli/commands/ca.js';
import type { Label } from '../../src/resources/name.js';
import type { VerifiedToken } from '../../src/tls/token.js';
import { parseUsage } from '../../src/tls/token-usage.js';
import { TokenUsage } from '../../src/web/usage.js';
import { until } from '../engine/harness.js';

const dir = await mkdtemp(join(tmpdir(), 'petrel-usage-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

const token = (id: string, name: string, expires: Date): VerifiedToken => ({
  id,
  name,
  expires,
  path: ['alice' as Label],
  policies: [],
});

it('writes the first use at once, later ones at most once an interval, and goes on from the file', async () => {
  const file = join(dir, 'web-token-usage.json');
  const log = pino({ level: 'silent' });
  const usage = new TokenUsage(file, log, 300);
  await usage.load();
  const ci = token('a'.repeat(32), 'ci', new Date(Date.now() + 86_400_000));
  usage.used(ci, new Date());
  await until(() => {
    try {
      return readFileSync(file, 'utf8').includes('"uses": 1');
    } catch {
      return false;
    }
  });
  usage.used(ci, new Date());
  usage.used(ci, new Date());
  // Not yet: the interval has not passed since the first write.
  expect(parseUsage(await readFile(file, 'utf8')).get(ci.id)?.uses).toBe(1);
  await new Promise((r) => setTimeout(r, 450));
  expect(parseUsage(await readFile(file, 'utf8')).get(ci.id)).toMatchObject({
    uses: 3,
    name: 'ci',
    delegation: 'alice',
  });
  const again = new TokenUsage(file, log, 300);
  await again.load();
  again.used(ci, new Date());
  await again.flush();
  expect(parseUsage(await readFile(file, 'utf8')).get(ci.id)?.uses).toBe(4);
});

it('petrel ca token --list shows each token with its use and whether it is revoked or expired', async () => {
  const state = join(dir, 'state');
  await import('node:fs/promises').then((fs) => fs.mkdir(state));
  const usage = new TokenUsage(join(state, 'web-token-usage.json'), pino({ level: 'silent' }));
  usage.used(token('b'.repeat(32), 'live', new Date(Date.now() + 86_400_000)), new Date());
  usage.used(token('c'.repeat(32), 'gone', new Date(Date.now() + 86_400_000)), new Date());
  usage.used(token('d'.repeat(32), 'old', new Date(Date.now() - 1000)), new Date());
  await usage.flush();
  await writeFile(join(state, 'web-deny-list'), `${'c'.repeat(32)}\n`);
  let out = '';
  const io = {
    stdout: (t: string | Uint8Array) => {
      out += String(t);
    },
    stderr: () => {},
    readFile: async () => new Uint8Array(),
    writeFile: async () => {},
  };
  expect(await caCommand.run(['token', '--list', '--state-dir', state], io)).toBe(0);
  const rows = out.trim().split('\n');
  expect(rows[0]).toMatch(/^ID\s+NAME\s+DELEGATION\s+USES\s+LAST USED\s+EXPIRES\s+STATE$/);
  const state0 = (name: string) =>
    rows
      .find((r) => r.includes(` ${name} `))
      ?.split(/\s+/)
      .at(-1);
  expect([state0('live'), state0('gone'), state0('old')]).toEqual(['valid', 'revoked', 'expired']);
  out = '';
  expect(await caCommand.run(['token', '--list', '--state-dir', state, '--json'], io)).toBe(0);
  expect(
    JSON.parse(out)
      .map((t: { name: string; uses: number }) => [t.name, t.uses])
      .sort(),
  ).toEqual([
    ['gone', 1],
    ['live', 1],
    ['old', 1],
  ]);
});

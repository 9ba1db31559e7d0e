// petreld's deny-list: missing is empty, a line appended is seen on the next check without a
// restart, a line that is no id is logged and skipped, and a list that cannot be read fails closed.

import { appendFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, expect, it } from 'vitest';
import { DenyList } from '../../src/web/deny-list.js';

const dir = await mkdtemp(join(tmpdir(), 'petrel-deny-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

it('follows the file as it changes and fails closed when it cannot be read', async () => {
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: 'info' }, { write: (l: string) => lines.push(JSON.parse(l)) });
  const file = join(dir, 'web-deny-list');
  const list = new DenyList(file, log);
  const ids = async () => {
    const now = await list.current();
    if (!now.ok) throw new Error(now.error.message);
    return [...now.value];
  };
  expect(await ids()).toEqual([]);
  const a = 'a'.repeat(32);
  const b = 'b'.repeat(32);
  await writeFile(file, `${a} # one\n`);
  expect(await ids()).toEqual([a]);
  await appendFile(file, `typo\n${b}\n`);
  expect(await ids()).toEqual([a, b]);
  expect(lines.some((l) => l.event === 'web.deny-list' && String(l.lines) === '2')).toBe(true);
  // Unchanged: the same set, not read again.
  const before = await list.current();
  expect(await list.current()).toEqual(before);
  await rm(file);
  expect(await ids()).toEqual([]);
  await mkdir(file);
  const broken = await list.current();
  expect(broken).toMatchObject({ ok: false, error: { code: 'E_TOKEN_DENY_LIST' } });
  expect(broken.ok ? '' : broken.error.message).toContain('EISDIR');
});

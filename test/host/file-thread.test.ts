// The file thread ends when unused for its idle time (an idle petreld keeps no second isolate)
// and a later replacement starts a new one; replacements in a burst share one thread.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fileThreadState, type ReplaceRequest, replaceOnThread } from '../../src/host/file-thread.js';

const dir = await mkdtemp(path.join(tmpdir(), 'petrel-file-thread-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

const request = (name: string, text: string): ReplaceRequest => ({
  file: path.join(dir, name),
  temp: path.join(dir, `${name}.tmp`),
  data: new TextEncoder().encode(text),
  mode: 0o600,
  durable: false,
  previous: true,
});

async function stopped(): Promise<boolean> {
  const deadline = Date.now() + 5_000;
  while (fileThreadState().running && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  return !fileThreadState().running;
}

describe('the file thread', () => {
  it('ends after its idle time and starts again for the next replacement', async () => {
    const idleMs = 150;
    const before = fileThreadState().started;
    const burst = await Promise.all(['a', 'b', 'c'].map((t) => replaceOnThread(request('f', t), idleMs)));
    expect(burst.every((o) => o.ok)).toBe(true);
    expect(fileThreadState()).toEqual({ running: true, started: before + 1 });
    expect(await stopped()).toBe(true);
    const again = await replaceOnThread(request('f', 'd'), idleMs);
    expect(fileThreadState().started).toBe(before + 2);
    expect(again.ok && new TextDecoder().decode(again.previous?.data)).toBe('c');
    expect(await readFile(path.join(dir, 'f'), 'utf8')).toBe('d');
    expect(await stopped()).toBe(true);
  });

  it('a request arriving before the idle time keeps the same thread', async () => {
    const idleMs = 400;
    const before = fileThreadState().started;
    await replaceOnThread(request('g', '1'), idleMs);
    await new Promise((r) => setTimeout(r, 100));
    const second = await replaceOnThread(request('g', '2'), idleMs);
    expect(second.ok && new TextDecoder().decode(second.previous?.data)).toBe('1');
    expect(fileThreadState()).toEqual({ running: true, started: before + 1 });
    expect(await stopped()).toBe(true);
  });
});

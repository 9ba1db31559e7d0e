// What petreld says of the leftovers it cleans at start: one info line counting each kind, the
// items themselves at debug, so a start after a crash that left dozens of them stays readable.
// The real petreld (dist/) on a run directory seeded with leftovers a crash leaves.

import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repo } from '../engine/guest.js';

const petreld = path.join(repo, 'dist', 'src', 'cli', 'petreld.js');
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'petrel-cleanup-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** petreld until ready, its JSON lines; SIGTERM after. */
async function startUntilReady(runDir: string, stateDir: string): Promise<Record<string, unknown>[]> {
  const child = spawn(
    process.execPath,
    [
      petreld,
      '--runtimes',
      'none',
      '--no-jail',
      '--log-level',
      'debug',
      '--state-dir',
      stateDir,
      '--run-dir',
      runDir,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const lines: Record<string, unknown>[] = [];
  let pending = '';
  const take = (d: Buffer) => {
    pending += d.toString();
    const parts = pending.split('\n');
    pending = parts.pop() ?? '';
    for (const part of parts) if (part.startsWith('{')) lines.push(JSON.parse(part));
  };
  child.stdout.on('data', take);
  child.stderr.on('data', take);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  try {
    const deadline = Date.now() + 30_000;
    while (!lines.some((l) => l.msg === 'petreld ready')) {
      if (Date.now() > deadline || child.exitCode !== null)
        throw new Error(`petreld not ready: ${JSON.stringify(lines.at(-1))}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
  return lines;
}

describe('start-up cleanup in the log', () => {
  it('one info line with how many of each kind; each leftover at debug, and all of them gone', async () => {
    const runDir = path.join(dir, 'run');
    const stateDir = path.join(dir, 'state');
    await mkdir(path.join(runDir, 'fifo'), { recursive: true, mode: 0o700 });
    await mkdir(stateDir, { mode: 0o700 });
    // What a crash leaves: console FIFOs and image links of unikernels nothing committed.
    const fifos = Array.from({ length: 12 }, (_, i) => path.join(runDir, 'fifo', `:gone${i}`));
    for (const fifo of fifos) expect(spawnSync('mkfifo', ['-m', '0600', fifo]).status).toBe(0);
    for (const vm of [':old1', ':old2']) await writeFile(path.join(runDir, `${vm}.img`), 'image');

    const lines = await startUntilReady(runDir, stateDir);
    const cleanup = lines.filter((l) => l.msg === 'start-up cleanup');
    const info = cleanup.filter((l) => l.level === 30);
    expect(info).toHaveLength(1);
    expect(info[0]?.leftovers).toEqual({ fifo: 12, 'image link': 2 });
    const debug = cleanup.filter((l) => l.level === 20);
    expect(debug.map((l) => [l.kind, l.leftover]).sort()).toEqual(
      [
        ...fifos.map((f) => ['fifo', `removed fifo ${path.basename(f)}`]),
        ['image link', 'removed image link :old1.img'],
        ['image link', 'removed image link :old2.img'],
      ].sort(),
    );
    expect(fifos.filter((f) => existsSync(f))).toEqual([]);
    expect((await readdir(runDir)).filter((e) => e.endsWith('.img'))).toEqual([]);

    // A clean start after it has nothing to say.
    const again = await startUntilReady(runDir, stateDir);
    expect(again.filter((l) => l.msg === 'start-up cleanup')).toEqual([]);
  });
});

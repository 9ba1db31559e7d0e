// The state directory's lock (issue 23): an flock(2) on the directory, so taking it writes
// nothing there; a second taker is refused by the holder's pid (from the run directory, or found
// in /proc when the run directories differ); a holder killed by SIGKILL gives it back.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { lockStateDir } from '../../src/host/statelock.js';
import { repo } from '../repo.js';

const children: ChildProcess[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function scratch(): Promise<{ state: string; run: string }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'petrel-lock-'));
  dirs.push(dir);
  return { state: path.join(dir, 'state'), run: path.join(dir, 'run') };
}

/** Another process holding the lock (the compiled module), until killed; resolves once it does. */
function holder(state: string, run: string): Promise<ChildProcess> {
  const module = path.join(repo, 'dist', 'src', 'host', 'statelock.js');
  const script = `const { lockStateDir } = await import(${JSON.stringify(module)});
const r = await lockStateDir(${JSON.stringify(state)}, ${JSON.stringify(run)});
process.stdout.write(r.ok ? 'LOCKED\\n' : 'REFUSED\\n'); setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    child.stdout?.on('data', (d: Buffer) =>
      d.toString().includes('LOCKED') ? resolve(child) : reject(new Error(d.toString())),
    );
  });
}

describe('the state directory lock', () => {
  it('writes nothing to the state directory, refuses a second taker by pid, and is taken again after release', async () => {
    const { state, run } = await scratch();
    const first = await lockStateDir(state, run);
    if (!first.ok) throw new Error(first.error.message);
    expect(await readdir(state)).toEqual([]);
    expect(await readdir(run)).toEqual(['petreld.pid']);
    const second = await lockStateDir(state, run);
    expect(second).toMatchObject({
      ok: false,
      error: { code: 'E_STATE_LOCKED', details: { pid: process.pid } },
    });
    if (!second.ok)
      expect(second.error.message).toBe(`petreld ${process.pid} is using ${state}; stop it first`);
    await first.value.release();
    expect(await readdir(run)).toEqual([]);
    const again = await lockStateDir(state, run);
    expect(again.ok).toBe(true);
    if (again.ok) await again.value.release();
  });

  it('names a holder with another run directory, and comes back when it is killed with SIGKILL', async () => {
    const { state, run } = await scratch();
    const child = await holder(state, `${run}-other`);
    const refused = await lockStateDir(state, run);
    expect(refused).toMatchObject({
      ok: false,
      error: { code: 'E_STATE_LOCKED', details: { pid: child.pid } },
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    const taken = await lockStateDir(state, run);
    expect(taken.ok).toBe(true);
    if (taken.ok) await taken.value.release();
  });
});

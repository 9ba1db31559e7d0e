// The petrel executable itself (dist/, built by npm test) against an in-process petreld: the
// process I/O — SIGINT ending a followed console cleanly, standard input and output as files,
// and the exit status a shell sees.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestDaemon, testDaemon } from '../daemon/start.js';
import { canaryImage, repo } from '../engine/guest.js';
import { petrel, until } from './io.js';

const executable = path.join(repo, 'dist', 'src', 'cli', 'petrel.js');
let node: TestDaemon;

beforeAll(async () => {
  if (!existsSync(path.join(repo, 'dist', 'src', 'cli', 'commands', 'console.js'))) {
    throw new Error('dist/ is missing the client: run `npm run build` (npm test does) before these tests');
  }
  node = await testDaemon();
});
afterAll(() => node?.stop());

interface Child {
  readonly process: ChildProcess;
  stdout(): Buffer;
  stderr(): string;
  /** Resolves with the exit code (null when killed by a signal). */
  readonly exited: Promise<number | null>;
}

function start(args: readonly string[], input?: Buffer): Child {
  const child = spawn(process.execPath, [executable, ...args, '--run-dir', node.runDir], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const out: Buffer[] = [];
  let err = '';
  child.stdout?.on('data', (d: Buffer) => out.push(d));
  child.stderr?.on('data', (d: Buffer) => {
    err += d.toString();
  });
  child.stdin?.end(input);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { process: child, stdout: () => Buffer.concat(out), stderr: () => err, exited };
}

describe('the petrel executable', () => {
  it('follows a console until SIGINT, then unsubscribes and exits 0', async () => {
    const at = ['--run-dir', node.runDir];
    expect(
      (await petrel(['create', 'proc-vm', canaryImage, '--arg', 'wait', '--arg', 'hi', ...at])).code,
    ).toBe(0);
    const child = start(['console', 'proc-vm', '--count', '5']);
    await until(() => child.stdout().toString().includes('petrel-canary hi'), 'the canary line');
    child.process.kill('SIGINT');
    expect(await child.exited).toBe(0);
    expect(child.stderr()).toBe('petrel console: subscribed\n');
    expect(child.stdout().toString()).toMatch(/^\S+Z petrel-canary hi$/m);
    expect((await petrel(['destroy', 'proc-vm', ...at])).code).toBe(0);
  });

  it('block set from standard input, dump and get to standard output', async () => {
    const at = ['--run-dir', node.runDir];
    expect((await petrel(['block', 'add', 'pdisk', '1', ...at])).code).toBe(0);
    const content = randomBytes(100_000);
    const set = start(['block', 'set', 'pdisk', '-', '--compress'], content);
    expect(await set.exited).toBe(0);
    expect(set.stdout().toString()).toBe('set block device\n');
    const dump = start(['block', 'dump', 'pdisk', '--level', '9']);
    expect(await dump.exited).toBe(0);
    expect(dump.stdout().equals(Buffer.concat([content, Buffer.alloc(1024 * 1024 - content.length)]))).toBe(
      true,
    );
    expect((await petrel(['block', 'remove', 'pdisk', ...at])).code).toBe(0);

    expect((await petrel(['create', 'get-vm', canaryImage, '--arg', 'wait', '--arg', 'g', ...at])).code).toBe(
      0,
    );
    const get = start(['get', 'get-vm']);
    expect(await get.exited).toBe(0);
    expect(get.stdout().equals(await readFile(canaryImage))).toBe(true);
    expect((await petrel(['destroy', 'get-vm', ...at])).code).toBe(0);
  });

  it('exit status: 3 when nothing listens, 1 when refused, 2 on a usage error', async () => {
    const nowhere = spawn(process.execPath, [executable, 'info', '--run-dir', path.join(node.dir, 'none')]);
    expect(await new Promise((resolve) => nowhere.once('exit', resolve))).toBe(122);
    const refused = start(['destroy', 'absent']);
    expect(await refused.exited).toBe(117);
    expect(refused.stderr()).toBe('petrel destroy: destroy: not found\n');
    const usage = start(['create', 'vm']);
    expect(await usage.exited).toBe(124);
  });
});

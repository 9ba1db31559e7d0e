// The petrel executable itself (dist/, built by npm test) against an in-process petreld: the
// process I/O — SIGINT ending a followed console cleanly, standard input and output as files,
// a reader that goes away, and the exit status a shell sees.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SUBCOMMANDS } from '../../src/cli/dispatch.js';
import { unwrap } from '../../src/resources/errors.js';
import { parseName } from '../../src/resources/name.js';
import { encodeWire, frame } from '../../src/wire/index.js';
import { solo5Config } from '../../src/wire/shapes.js';
import { WIRE_VERSION } from '../../src/wire/types.js';
import { type TestDaemon, testDaemon } from '../daemon/start.js';
import { canaryImage, repo } from '../engine/guest.js';
import { createCommand } from '../engine/harness.js';
import { petrel, runNode, until } from './io.js';

const executable = path.join(repo, 'dist', 'src', 'cli', 'petrel.js');
/** package.json's bin: the bundle that `petrel.js` loads too, when `npm run build` made it. */
const bin = path.join(repo, JSON.parse(readFileSync(path.join(repo, 'package.json'), 'utf8')).bin.petrel);
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

const quote = (word: string): string => `'${word.replaceAll("'", `'\\''`)}'`;

/**
 * `petrel ARGS | head -c BYTES` in bash with pipefail: petrel's status (head's is 0), what
 * head let through, and petrel's stderr.
 */
function throughHead(args: readonly string[], bytes: number) {
  const line = [process.execPath, executable, ...args].map(quote).join(' ');
  const shell = spawn('bash', ['-c', `set -o pipefail; ${line} | head -c ${bytes}`], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out: Buffer[] = [];
  let err = '';
  shell.stdout.on('data', (d: Buffer) => out.push(d));
  shell.stderr.on('data', (d: Buffer) => {
    err += d.toString();
  });
  return new Promise<{ status: number | null; out: Buffer; stderr: string }>((resolve) =>
    shell.once('close', (status) => resolve({ status, out: Buffer.concat(out), stderr: err })),
  );
}

/** Waits until petreld has seen a dump's reader go and freed the device. */
async function freed(device: string, at: readonly string[]): Promise<void> {
  for (let tries = 0; ; tries++) {
    const [entry] = JSON.parse((await petrel(['block', 'info', device, '--json', ...at])).stdout);
    if (entry.active === false) return;
    if (tries > 200) throw new Error(`${device} still in use`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** `node FILE ARGS…` without a petreld: its status and both outputs. */
const helpOf = runNode;

describe('petrel --help from dist/, through the bin and through petrel.js', () => {
  it.each(Object.keys(SUBCOMMANDS))('%s', async (name) => {
    const files = existsSync(bin) ? [bin, executable] : [executable];
    for (const file of files) {
      const run = await helpOf(file, [name, '--help']);
      expect(run).toMatchObject({ status: 0, stderr: '' });
      expect(run.stdout).toMatch(new RegExp(`^usage:[\\s\\S]*petrel ${name}`));
    }
  });

  it('the list of commands, with options before it', async () => {
    const run = await helpOf(existsSync(bin) ? bin : executable, ['--json', '--help']);
    expect(run).toMatchObject({ status: 0, stderr: '' });
    for (const name of Object.keys(SUBCOMMANDS)) expect(run.stdout).toContain(`  ${name} `);
  });
});

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

  it('exits quietly with 141 (as SIGPIPE would end it) when the reader of its output goes away', async () => {
    // A frame whose JSON is about 2 MB: far more than a pipe holds, so petrel is still writing.
    const file = path.join(node.dir, 'large.frame');
    const wire = encodeWire({
      header: { version: WIRE_VERSION, sequence: 0n, name: unwrap(parseName('big')) },
      payload: {
        kind: 'command',
        command: createCommand(solo5Config(randomBytes(1024 * 1024), {})),
      },
    });
    await writeFile(file, frame(unwrap(wire)));
    const decoded = await throughHead(['wire', 'decode', file, '--json'], 300);
    expect(decoded.out.toString()).toMatch(/^\[\n {2}\{\n {4}"header": \{/);
    expect(decoded.out.length).toBe(300);
    expect(decoded.stderr).toBe('');
    expect(decoded.status).toBe(141);

    // A stream from petreld (a 4 MiB block dump) to a reader that closes before the first byte.
    const at = ['--run-dir', node.runDir];
    expect((await petrel(['block', 'add', 'pipe-disk', '4', ...at])).code).toBe(0);
    const dump = start(['block', 'dump', 'pipe-disk']);
    dump.process.stdout?.destroy();
    expect(await dump.exited).toBe(141);
    expect(dump.stderr()).toBe('');
    await freed('pipe-disk', at);
    const head = await throughHead(['block', 'dump', 'pipe-disk', ...at], 100);
    expect(head).toMatchObject({ status: 141, stderr: '' });
    expect(head.out.equals(Buffer.alloc(100))).toBe(true);
    // petreld is none the worse: the device is free again for the next command.
    await freed('pipe-disk', at);
    expect((await petrel(['block', 'remove', 'pipe-disk', ...at])).stdout).toBe('removed block\n');
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

// petrel's progress line as a person sees it: the real executable (dist/, built by npm test)
// under a pseudo-terminal made by script(1) (Debian's essential bsdutils), against a real
// petreld with its TLS endpoint (test/tls/petreld.ts). Transfers above 1 MB draw progress on
// the terminal's stderr; nothing is drawn when stderr is a file or a pipe, or with --json.

import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canaryImage, repo } from '../engine/guest.js';
import { type Petreld, remoteFlags, startPetreld } from '../tls/petreld.js';
import { progressDraws, runNode } from './io.js';

const executable = path.join(repo, 'dist', 'src', 'cli', 'petrel.js');
const MiB = 1024 * 1024;

let petreld: Petreld;
/** The canary with 30 MiB of padding after it: still a valid image, and a long transfer. */
let bigImage: string;
let bigSize: number;
let at: string[];
let remote: string[];

beforeAll(async () => {
  if (!existsSync(executable)) {
    throw new Error('dist/ is missing the client: run `npm run build` (npm test does) before these tests');
  }
  petreld = await startPetreld({ alice: ['--vms', '2', '--mem', '64'] });
  const image = Buffer.concat([await readFile(canaryImage), Buffer.alloc(30 * MiB)]);
  bigImage = path.join(petreld.dir, 'big.hvt');
  bigSize = image.length;
  await writeFile(bigImage, image);
  at = ['--run-dir', petreld.runDir];
  remote = remoteFlags(petreld, 'alice');
});
afterAll(() => petreld?.stop());

const quote = (word: string): string => `'${word.replaceAll("'", `'\\''`)}'`;

interface Outcome {
  readonly status: number | null;
  /** What the terminal showed, its line ends as the program wrote them. */
  readonly screen: string;
  readonly stdout: string;
}

/**
 * `petrel ARGS` with its stdout in a file, and its stderr on a pseudo-terminal (`stderr:
 * 'terminal'`) or in a file of its own (`'file'`, read back into `screen`).
 */
async function run(args: readonly string[], stderr: 'terminal' | 'file' = 'terminal'): Promise<Outcome> {
  const id = randomBytes(4).toString('hex');
  const out = path.join(petreld.dir, `out-${id}`);
  const err = path.join(petreld.dir, `err-${id}`);
  const line = `${[process.execPath, executable, ...args].map(quote).join(' ')} > ${quote(out)}${
    stderr === 'file' ? ` 2> ${quote(err)}` : ''
  }`;
  const child = spawn('script', ['-qfec', line, '/dev/null'], { stdio: ['ignore', 'pipe', 'inherit'] });
  let screen = '';
  child.stdout.on('data', (d: Buffer) => {
    screen += d.toString();
  });
  const status = await new Promise<number | null>((resolve) => child.once('close', resolve));
  // The terminal turns every newline into CR LF on its way out.
  screen = screen.replaceAll('\r\n', '\n');
  if (stderr === 'file') {
    expect(screen).toBe('');
    screen = await readFile(err, 'utf8');
  }
  return { status, screen, stdout: await readFile(out, 'utf8') };
}

/** `petrel ARGS` with both outputs on pipes, as in a script. */
async function piped(args: readonly string[]): Promise<Outcome> {
  const { status, stdout, stderr } = await runNode(executable, args);
  return { status, screen: stderr, stdout };
}

const mib = (bytes: number): string => (bytes / MiB).toFixed(1).replace('.', '\\.');

/** Every redraw is `petrel LABEL: N MiB[ of TOTAL MiB (P%)], R MiB/s`; returns the last. */
function lastDraw(screen: string, label: string, total: number | null): string {
  const of = total === null ? '' : ` of ${mib(total)} MiB \\(\\d+%\\)`;
  const pattern = new RegExp(`^petrel ${label}: \\d+\\.\\d MiB${of}, \\d+\\.\\d MiB/s$`);
  const draws = progressDraws(screen);
  expect(draws.length).toBeGreaterThan(0);
  for (const draw of draws) expect(draw).toMatch(pattern);
  return draws.at(-1) as string;
}

describe('progress on a terminal', () => {
  it('create of a 30 MB image, locally and over TLS, and get', async () => {
    const local = await run(['create', 'big-local', bigImage, '--arg', 'wait', '--arg', 'l', ...at]);
    expect(local).toMatchObject({ status: 0, stdout: 'created unikernel\n' });
    expect(lastDraw(local.screen, 'create :big-local', bigSize)).toContain(
      `${(bigSize / MiB).toFixed(1)} MiB of ${(bigSize / MiB).toFixed(1)} MiB (100%)`,
    );

    // The options before the command, as people write them.
    const tls = await run([...remote, 'create', 'big-tls', bigImage, '--arg', 'wait', '--arg', 't']);
    expect(tls).toMatchObject({ status: 0, stdout: 'created unikernel\n' });
    expect(lastDraw(tls.screen, 'create :big-tls', bigSize)).toContain('(100%)');
    expect([...petreld.daemon.engine.running].sort()).toEqual([':big-local', 'alice:big-tls']);

    const out = path.join(petreld.dir, 'got.hvt');
    const got = await run(['get', 'big-local', '--out', out, ...at]);
    expect(got).toMatchObject({ status: 0, stdout: '' });
    expect(lastDraw(got.screen, 'get :big-local', null)).toMatch(/: (30\.\d) MiB, /);
    expect((await readFile(out)).equals(await readFile(bigImage))).toBe(true);

    // Never beside JSON, nor on a stderr that is not a terminal.
    const json = await run(['get', 'big-local', '--out', out, '--json', ...at]);
    expect(json.status).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ name: ':big-local', size: bigSize });
    expect(json.screen).toBe('');
    const file = await run([...remote, 'get', 'big-tls', '--out', out], 'file');
    expect(file).toMatchObject({ status: 0, screen: '', stdout: '' });
    const pipes = await piped(['get', 'big-local', '--out', out, ...at]);
    expect(pipes).toMatchObject({ status: 0, screen: '', stdout: '' });
    const createdInPipes = await piped(['create', 'big-local', bigImage, '--force', '--arg', 'wait', ...at]);
    expect(createdInPipes).toMatchObject({ status: 0, screen: '', stdout: 'created unikernel\n' });

    expect((await piped(['destroy', 'big-local', ...at])).status).toBe(0);
    expect((await piped([...remote, 'destroy', 'big-tls'])).status).toBe(0);
  });

  it('block set and dump; small transfers draw nothing', async () => {
    expect((await piped(['block', 'add', 'tty-disk', '4', ...at])).status).toBe(0);
    const content = randomBytes(3 * MiB);
    const file = path.join(petreld.dir, 'content.bin');
    await writeFile(file, content);
    const set = await run(['block', 'set', 'tty-disk', file, ...at]);
    expect(set).toMatchObject({ status: 0, stdout: 'set block device\n' });
    expect(lastDraw(set.screen, 'block set :tty-disk', content.length)).toContain(
      '3.0 MiB of 3.0 MiB (100%)',
    );
    const out = path.join(petreld.dir, 'dump.bin');
    const dump = await run(['block', 'dump', 'tty-disk', '--out', out, ...at]);
    expect(dump).toMatchObject({ status: 0, stdout: '' });
    expect(lastDraw(dump.screen, 'block dump :tty-disk', null)).toMatch(/: 4\.0 MiB, /);
    expect((await readFile(out)).subarray(0, content.length).equals(content)).toBe(true);

    expect((await run(['block', 'set', 'tty-disk', file, '--json', ...at])).screen).toBe('');
    expect((await run(['block', 'dump', 'tty-disk', '--out', out, ...at], 'file')).screen).toBe('');
    expect((await piped(['block', 'set', 'tty-disk', file, ...at])).screen).toBe('');

    await writeFile(file, randomBytes(900_000));
    const small = await run(['block', 'set', 'tty-disk', file, ...at]);
    expect(small).toMatchObject({ status: 0, screen: '', stdout: 'set block device\n' });
    expect((await piped(['block', 'remove', 'tty-disk', ...at])).status).toBe(0);
  });
});

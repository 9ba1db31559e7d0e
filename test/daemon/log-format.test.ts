// petreld's log lines as a person and as a machine read them (issue 25, item 3): the real
// executable (dist/) under a pseudo-terminal made by script(1) (Debian's essential bsdutils)
// writes one human line an event; with a pipe it writes JSON lines; --log-format overrides both.

import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repo } from '../engine/guest.js';

const petreld = path.join(repo, 'dist', 'src', 'cli', 'petreld.js');
const quote = (word: string): string => `'${word.replaceAll("'", `'\\''`)}'`;
/** Colour codes are part of a terminal's line, not of its text. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI escapes start with ESC
const stripColours = (text: string): string => text.replaceAll(/\x1b\[[0-9;]*m/gu, '');
/** A human line: time, level, message, then the event's fields as one object. */
const HUMAN = /^\[\d\d:\d\d:\d\d\.\d{3}\] (INFO|WARN|ERROR|FATAL|DEBUG|TRACE): \S.*$/u;

let dir: string;
let runs = 0;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'petrel-logfmt-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** Flags for a petreld of its own that hosts nothing: it logs its preflight and `petreld ready`. */
function flags(): string[] {
  const own = path.join(dir, `d${runs++}`);
  return ['--runtimes', 'none', '--no-jail', '--state-dir', `${own}/state`, '--run-dir', `${own}/run`];
}

/**
 * petreld with its stdout and stderr on a pseudo-terminal until it logs `petreld ready`, then
 * SIGTERM (the pid the shell had before it exec'd petreld); what the terminal showed, lines split.
 */
async function onTerminal(extra: readonly string[]): Promise<string[]> {
  const pidFile = path.join(dir, `pid${runs}`);
  const line = `echo $$ > ${quote(pidFile)}; exec ${[process.execPath, petreld, ...flags(), ...extra].map(quote).join(' ')}`;
  const child = spawn('script', ['-qfec', line, '/dev/null'], { stdio: ['ignore', 'pipe', 'inherit'] });
  let screen = '';
  const closed = new Promise<number | null>((resolve) => child.once('close', resolve));
  const ready = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`petreld not ready on the terminal: ${screen}`)), 30_000);
    child.stdout.on('data', (d: Buffer) => {
      screen += d.toString();
      if (stripColours(screen).includes('petreld ready')) {
        clearTimeout(timer);
        resolve();
      }
    });
    void closed.then(() => reject(new Error(`petreld exited before it was ready: ${screen}`)));
  });
  try {
    await ready;
  } finally {
    const pid = Number((await readFile(pidFile, 'utf8').catch(() => '')).trim());
    if (pid > 0) process.kill(pid, 'SIGTERM');
    await closed;
  }
  // The terminal turns every newline into CR LF on its way out.
  return screen
    .replaceAll('\r\n', '\n')
    .split('\n')
    .filter((l) => l !== '');
}

describe('petreld log format', () => {
  it('on a terminal: one human line an event, no JSON', async () => {
    const lines = (await onTerminal([])).map(stripColours);
    expect(lines.length).toBeGreaterThan(3);
    for (const l of lines) expect(l).toMatch(HUMAN);
    expect(lines.filter((l) => l.includes('INFO: preflight {"check":"runDir","status":"PASS"'))).toHaveLength(
      1,
    );
    expect(lines.find((l) => l.includes('INFO: petreld ready'))).toMatch(/ \{"readyMs":\d+,/u);
    expect(lines.at(-1)).toMatch(/INFO: stopping: unikernels run on under the holder; .*"signal":"SIGTERM"/u);
  });

  it('on a pipe: JSON lines, each a whole event', async () => {
    const lines = await onPipe([]);
    const events = lines.map((l) => JSON.parse(l) as { msg: string; level: number; pid: number });
    expect(events.map((e) => e.msg)).toContain('petreld ready');
    expect(events.at(-1)?.msg).toBe(
      'stopping: unikernels run on under the holder; the next start adopts them',
    );
    for (const e of events) expect(typeof e.level).toBe('number');
  });

  it('--log-format json on a terminal writes JSON; --log-format pretty on a pipe writes human lines', async () => {
    const onTty = await onTerminal(['--log-format', 'json']);
    expect(onTty.length).toBeGreaterThan(3);
    for (const l of onTty) expect((JSON.parse(l) as { msg: string }).msg).toEqual(expect.any(String));
    const piped = await onPipe(['--log-format', 'pretty']);
    expect(piped.length).toBeGreaterThan(3);
    // No terminal, so no colours to strip.
    for (const l of piped) expect(l).toMatch(HUMAN);
  });
});

/** petreld with its stdout on a pipe (as under journald) until it logs `petreld ready`, then SIGTERM. */
async function onPipe(extra: readonly string[]): Promise<string[]> {
  const child = spawn(process.execPath, [petreld, ...flags(), ...extra], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`petreld not ready: ${out}`)), 30_000);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('petreld ready')) {
        clearTimeout(timer);
        resolve();
      }
    });
    void closed.then(() => reject(new Error(`petreld exited before it was ready: ${out}`)));
  }).finally(() => child.kill('SIGTERM'));
  await closed;
  return out.split('\n').filter((l) => l !== '');
}

// A captured CliIo for running petrel subcommands in-process: stdout as bytes, stderr as text,
// the real file system, and an interrupt the test triggers instead of SIGINT.

import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import type { CliIo } from '../../src/cli/command.js';
import { runPetrel } from '../../src/cli/dispatch.js';
import { processIo } from '../../src/cli/io.js';

export interface Captured {
  readonly io: CliIo;
  stdout(): string;
  bytes(): Buffer;
  stderr(): string;
  /** What SIGINT does for the real process. */
  interrupt(): void;
}

export function capture(extra: Partial<CliIo> = {}): Captured {
  const out: Buffer[] = [];
  let err = '';
  const controller = new AbortController();
  const io: CliIo = {
    stdout: (chunk) => void out.push(Buffer.from(chunk)),
    stderr: (text) => {
      err += text;
    },
    readFile: (path) => readFile(path),
    writeFile: (path, data) => writeFile(path, data),
    interrupted: () => controller.signal,
    ...extra,
  };
  return {
    io,
    stdout: () => Buffer.concat(out).toString('utf8'),
    bytes: () => Buffer.concat(out),
    stderr: () => err,
    interrupt: () => controller.abort(),
  };
}

/** The process I/O's streaming file access (pieces in, pieces out), to add to a capture. */
export function streamingFiles(): Partial<CliIo> {
  const { openRead, writeChunks } = processIo();
  return {
    ...(openRead === undefined ? {} : { openRead }),
    ...(writeChunks === undefined ? {} : { writeChunks }),
  };
}

export interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  readonly bytes: Buffer;
}

/** `petrel ARGS…` through the dispatcher, in-process. */
export async function petrel(args: readonly string[], extra: Partial<CliIo> = {}): Promise<Run> {
  const c = capture(extra);
  const code = await runPetrel(args, c.io);
  return { code, stdout: c.stdout(), stderr: c.stderr(), bytes: c.bytes() };
}

/** Polls until `check` holds (or fails the test after `timeoutMs`). */
export async function until(check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Erases the rest of a terminal line: ends every redraw of a progress line. */
const ERASE_LINE = '\u001b[K';

/**
 * The redraws of one progress line as plain text: each one is `\r` + text + ERASE_LINE and the
 * last is followed by a newline; anything else in `stderr` fails the test.
 */
export function progressDraws(stderr: string): string[] {
  if (stderr === '') return [];
  if (!stderr.startsWith('\r') || !stderr.endsWith(`${ERASE_LINE}\n`)) {
    throw new Error(`not a finished progress line: ${JSON.stringify(stderr)}`);
  }
  return stderr
    .slice(1, -1)
    .split('\r')
    .map((draw) => {
      if (!draw.endsWith(ERASE_LINE)) throw new Error(`a redraw without its erase: ${JSON.stringify(draw)}`);
      return draw.slice(0, -ERASE_LINE.length);
    });
}

/** `node FILE ARGS…` with both outputs on pipes, as in a script: its status and both outputs. */
export function runNode(
  file: string,
  args: readonly string[],
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [file, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  return new Promise((resolve) => child.once('close', (status) => resolve({ status, stdout, stderr })));
}

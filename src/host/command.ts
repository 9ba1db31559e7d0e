// Runs a host command (`ip`, `mkfifo`, a tender's `--version`) through petrel-spawner, without a
// shell, and turns every failure into a PetrelError that carries the command line and stderr.

import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import { type ChildExit, spawnChild } from './spawner.js';

export interface CommandOutput {
  readonly stdout: string;
  readonly stderr: string;
}

export interface CommandOptions {
  /** Kill the command (SIGKILL) after this many milliseconds. Default 10 000. */
  readonly timeoutMs?: number;
  /** Environment of the command. Default: only `PATH` of this process. */
  readonly env?: NodeJS.ProcessEnv;
  /** Its standard input (at most 4096 bytes); default empty. */
  readonly input?: string;
  /** How errors name the command. Default: its command line. */
  readonly label?: string;
}

const DEFAULT_TIMEOUT_MS = 10_000;
/** Generous for `ip -j link show` on hosts with many interfaces; beyond it the command fails. */
const MAX_OUTPUT_BYTES = 16 * 1024 * 1024;

/** The environment host commands and tenders get unless told otherwise: this process' PATH only. */
export function defaultCommandEnv(): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin' };
}

export function commandLine(file: string, args: readonly string[]): string {
  return [file, ...args].join(' ');
}

/**
 * Runs `file args…` and resolves with its output when it exits with status 0; any other end
 * (non-zero status, signal, timeout, cannot start) is `E_HOST_COMMAND` whose message is
 * `<command line> failed: <stderr or reason>`. Never rejects.
 */
export async function runCommand(
  file: string,
  args: readonly string[],
  options: CommandOptions = {},
): Promise<Result<CommandOutput, PetrelError<'E_HOST_COMMAND'>>> {
  const line = options.label ?? commandLine(file, args);
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const fail = (reason: string, exit: ChildExit | null, stderr: string) =>
    err('E_HOST_COMMAND', `${line} failed: ${reason}`, {
      command: line,
      exitCode: exit?.code ?? null,
      signal: exit?.signal ?? null,
      stderr,
    });
  const started = await spawnChild({
    argv: [file, ...args],
    env: options.env ?? defaultCommandEnv(),
    console: { kind: 'capture', input: options.input ?? '', maxOutputBytes: MAX_OUTPUT_BYTES },
  });
  if (!started.ok) {
    const reason = 'stage' in started.error ? started.error.errno : started.error.message;
    return fail(reason, null, '');
  }
  const child = started.value;
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill('SIGKILL');
  }, timeoutMs);
  const exit = await child.exit;
  clearTimeout(timer);
  const output = child.output ?? { stdout: [], stderr: [], overflowed: false };
  const stdout = Buffer.concat(output.stdout).toString('utf8');
  const stderr = Buffer.concat(output.stderr).toString('utf8');
  if (exit.code === 0 && !output.overflowed) return ok({ stdout, stderr });
  const reason =
    stderr.trim() !== ''
      ? stderr.trim()
      : timedOut
        ? `timed out after ${timeoutMs} ms`
        : output.overflowed
          ? `more than ${MAX_OUTPUT_BYTES} bytes of output`
          : exit.code !== null
            ? `exit status ${exit.code}`
            : `killed by ${exit.signal}`;
  return fail(reason, exit, stderr);
}

// Runs a host command (`ip`, `mkfifo`, a tender's `--version`) without a shell and turns every
// failure into a PetrelError that carries the command line and its stderr.

import { execFile } from 'node:child_process';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';

export interface CommandOutput {
  readonly stdout: string;
  readonly stderr: string;
}

export interface CommandOptions {
  /** Kill the command (SIGKILL) after this many milliseconds. Default 10 000. */
  readonly timeoutMs?: number;
  /** Environment of the command. Default: only `PATH` of this process. */
  readonly env?: NodeJS.ProcessEnv;
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
export function runCommand(
  file: string,
  args: readonly string[],
  options: CommandOptions = {},
): Promise<Result<CommandOutput, PetrelError<'E_HOST_COMMAND'>>> {
  const env = options.env ?? defaultCommandEnv();
  return new Promise((resolve) => {
    execFile(
      file,
      [...args],
      {
        env,
        encoding: 'utf8',
        timeout: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
        killSignal: 'SIGKILL',
        maxBuffer: MAX_OUTPUT_BYTES,
        windowsHide: true,
      },
      (error, stdout, stderr) => {
        if (error === null) {
          resolve(ok({ stdout, stderr }));
          return;
        }
        const line = commandLine(file, args);
        const failure = error as NodeJS.ErrnoException & { killed?: boolean; signal?: string | null };
        const reason =
          stderr.trim() !== ''
            ? stderr.trim()
            : failure.killed === true
              ? `timed out after ${options.timeoutMs ?? DEFAULT_TIMEOUT_MS} ms`
              : failure.message;
        resolve(
          err('E_HOST_COMMAND', `${line} failed: ${reason}`, {
            command: line,
            exitCode: typeof failure.code === 'number' ? failure.code : null,
            signal: failure.signal ?? null,
            stderr,
          }),
        );
      },
    );
  });
}

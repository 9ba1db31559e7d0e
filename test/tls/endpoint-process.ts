// `petreld tls-endpoint` as a process of its own for tests (the compiled dist/src/cli/petreld.js):
// its JSON log lines from stdout, its exit; every one launched is killed after each test if it
// still runs.

import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach } from 'vitest';
import { repo } from '../engine/guest.js';
import type { Petreld } from './petreld.js';

export const petreldJs = path.join(repo, 'dist', 'src', 'cli', 'petreld.js');

export interface EndpointProcess {
  readonly process: ChildProcess;
  /** Its stdout, a parsed line each (`{ text }` for a line that is no JSON). */
  readonly logs: Record<string, unknown>[];
  readonly exited: Promise<number | null>;
}

const launched = new Set<ChildProcess>();
afterEach(() => {
  for (const child of launched)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  launched.clear();
});

/** `petreld tls-endpoint ARGS...`. */
export function launchEndpoint(args: readonly string[]): EndpointProcess {
  if (!existsSync(petreldJs)) throw new Error(`${petreldJs} is missing: run npm run build:ts`);
  const proc = spawn(process.execPath, [petreldJs, 'tls-endpoint', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  launched.add(proc);
  const logs: Record<string, unknown>[] = [];
  createInterface({ input: proc.stdout as NodeJS.ReadableStream }).on('line', (line) => {
    try {
      logs.push(JSON.parse(line));
    } catch {
      logs.push({ text: line });
    }
  });
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  return { process: proc, logs, exited };
}

/** The flags that serve `petreld`'s run directory on 127.0.0.1 (a free port) as its PKI's server. */
export function endpointFlags(petreld: Petreld): string[] {
  const ca = petreld.ca;
  return [
    ...['--run-dir', petreld.runDir, '--ip', '127.0.0.1', '--port', '0'],
    ...['--ca', path.join(ca, 'cacert.pem'), '--cert', path.join(ca, 'server.pem')],
    ...['--key', path.join(ca, 'server.key')],
  ];
}

// petreld's side of native/build/petrel-spawner: one small helper process that starts the
// host commands (`ip`, `mkfifo`, a tender's `--version`, the holder), so petreld itself never
// forks (tenders are started by the holder, src/host/holder.ts). A fork of petreld (a Node process of ~100 MB) cost about 5 ms per process on a
// virtualised host, plus copy-on-write faults afterwards; the helper is a few hundred KB and
// uses vfork. The protocol is described in native/spawner/petrel-spawner.c.
//
// The helper is started on first use and shared by the process. It keeps the event loop alive
// only while a request or a child is outstanding. If it dies, its outstanding children are
// killed by pid and reported as killed, and the next spawn starts a new helper.

import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { constants as osConstants } from 'node:os';
import type { Readable, Writable } from 'node:stream';
import { getSystemErrorName } from 'node:util';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import { bundledProgram } from './native.js';

/**
 * Where the child's stdin, stdout and stderr go: a FIFO someone reads (else ENXIO), a file
 * opened for appending, or captured (stdout and stderr come back, stdin holds `input`).
 */
export type SpawnConsole =
  | { readonly kind: 'fifo' | 'file'; readonly path: string }
  | {
      readonly kind: 'capture';
      /** At most 4096 bytes (PIPE_BUF), no NUL. */
      readonly input: string;
      /** Beyond this many bytes of output the child is killed and `output.overflowed` set. */
      readonly maxOutputBytes: number;
    };

/** What a captured child wrote. */
export interface CapturedOutput {
  readonly stdout: Buffer[];
  readonly stderr: Buffer[];
  overflowed: boolean;
}

export interface SpawnRequest {
  readonly argv: readonly string[];
  readonly env: NodeJS.ProcessEnv;
  readonly console: SpawnConsole;
}

export interface ChildExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface SpawnedChild {
  readonly pid: number;
  /** Captured children: their output so far, complete once `exit` resolves. */
  readonly output: CapturedOutput | null;
  /** Resolves once the child exited and was reaped. Never rejects. */
  readonly exit: Promise<ChildExit>;
  /** Signals the child while it is unreaped; afterwards (its pid may be reused) does nothing. */
  kill(signal: NodeJS.Signals): void;
}

/** Why a spawn failed: opening the console, or forking and executing the program. */
export interface SpawnFailure {
  readonly stage: 'console' | 'exec';
  /** `ENOENT`, `ENXIO`, …; `ENOTSUP` for a console that is not a FIFO. */
  readonly errno: string;
}

export type SpawnerError = PetrelError<'E_SPAWNER'>;

const SIGNAL_NAMES = new Map<number, NodeJS.Signals>(
  Object.entries(osConstants.signals).map(([name, number]) => [number, name as NodeJS.Signals]),
);

/** Decodes a wait status as the kernel reports it (WIFEXITED / WTERMSIG). */
export function decodeWaitStatus(status: number): ChildExit {
  const signal = status & 0x7f;
  if (signal === 0) return { code: (status >> 8) & 0xff, signal: null };
  return { code: null, signal: SIGNAL_NAMES.get(signal) ?? 'SIGKILL' };
}

// ---------------------------------------------------------------------------------------------
// Frames

/** A frame of the spawner's and the holder's protocols: u32 little-endian length, then the body. */
export function frame(body: Buffer): Buffer {
  const head = Buffer.alloc(4);
  head.writeUInt32LE(body.length);
  return Buffer.concat([head, body]);
}

function spawnFrame(id: number, request: SpawnRequest): Result<Buffer, SpawnerError> {
  const env = Object.entries(request.env)
    .filter((entry): entry is [string, string] => entry[1] !== undefined)
    .map(([key, value]) => `${key}=${value}`);
  const console = request.console;
  const first = console.kind === 'capture' ? console.input : console.path;
  if (console.kind === 'capture' && Buffer.byteLength(first) > 4096) {
    return err('E_SPAWNER', 'the input of a captured command is limited to 4096 bytes');
  }
  const strings = [first, ...request.argv, ...env];
  if (strings.some((s) => s.includes('\0'))) {
    return err('E_SPAWNER', 'an argument, the console path or the environment contains a NUL byte');
  }
  const head = Buffer.alloc(14);
  head.write('S', 0, 'latin1');
  head.writeUInt32LE(id, 1);
  head.writeUInt32LE(request.argv.length, 5);
  head.writeUInt32LE(env.length, 9);
  head.write({ fifo: 'F', file: 'A', capture: 'C' }[console.kind], 13, 'latin1');
  return ok(frame(Buffer.concat([head, Buffer.from(`${strings.join('\0')}\0`)])));
}

function killFrame(pid: number, signal: number): Buffer {
  const body = Buffer.alloc(9);
  body.write('K', 0, 'latin1');
  body.writeInt32LE(pid, 1);
  body.writeInt32LE(signal, 5);
  return frame(body);
}

// ---------------------------------------------------------------------------------------------
// The helper

type Answer = Result<SpawnedChild, SpawnFailure | SpawnerError>;

interface Outstanding {
  readonly resolve: (exit: ChildExit) => void;
  readonly output: CapturedOutput | null;
  /** Bytes still allowed before an overflow. */
  room: number;
  reaped: boolean;
}

class Helper {
  readonly #process: ChildProcessByStdio<Writable, Readable, null>;
  readonly #requests = new Map<number, { resolve: (answer: Answer) => void; request: SpawnRequest }>();
  readonly #children = new Map<number, Outstanding>();
  #nextId = 1;
  #buffered: Buffer = Buffer.alloc(0);
  #alive = true;
  #referenced = true;
  readonly #onDeath: () => void;

  constructor(program: string, onDeath: () => void) {
    this.#onDeath = onDeath;
    this.#process = spawn(program, [], { stdio: ['pipe', 'pipe', 'inherit'], env: {} });
    this.#process.stdout.on('data', (chunk: Buffer) => this.#read(chunk));
    this.#process.stdin.on('error', () => undefined); // EPIPE: handled by 'exit'
    this.#process.once('error', () => this.#died());
    this.#process.once('exit', () => this.#died());
    this.#updateReference();
  }

  get alive(): boolean {
    return this.#alive;
  }

  spawn(request: SpawnRequest): Promise<Answer> {
    const id = this.#nextId++;
    const bytes = spawnFrame(id, request);
    if (!bytes.ok) return Promise.resolve(bytes);
    return new Promise((resolve) => {
      this.#requests.set(id, { resolve, request });
      this.#updateReference();
      this.#process.stdin.write(bytes.value);
    });
  }

  #read(chunk: Buffer): void {
    this.#buffered = this.#buffered.length === 0 ? chunk : Buffer.concat([this.#buffered, chunk]);
    let at = 0;
    while (this.#buffered.length - at >= 4) {
      const length = this.#buffered.readUInt32LE(at);
      if (this.#buffered.length - at - 4 < length) break;
      this.#event(this.#buffered.subarray(at + 4, at + 4 + length));
      at += 4 + length;
    }
    this.#buffered = this.#buffered.subarray(at);
    this.#updateReference();
  }

  #event(body: Buffer): void {
    const op = String.fromCharCode(body[0] ?? 0);
    if (op === 'P' && body.length === 9) {
      this.#started(body.readUInt32LE(1), body.readInt32LE(5));
    } else if (op === 'E' && body.length === 10) {
      const stage = body[5] === 'C'.charCodeAt(0) ? 'console' : 'exec';
      const errno = getSystemErrorName(-body.readInt32LE(6));
      this.#answer(body.readUInt32LE(1), { ok: false, error: { stage, errno } });
    } else if (op === 'O' && body.length > 6) {
      this.#output(body.readInt32LE(1), body[5] === 1 ? 'stdout' : 'stderr', body.subarray(6));
    } else if (op === 'X' && body.length === 9) {
      this.#exited(body.readInt32LE(1), decodeWaitStatus(body.readInt32LE(5)));
    } else {
      // Nothing we could still trust: end the helper, which fails everything outstanding.
      this.#process.kill('SIGKILL');
    }
  }

  #answer(id: number, answer: Answer): void {
    const pending = this.#requests.get(id);
    this.#requests.delete(id);
    pending?.resolve(answer);
  }

  #started(id: number, pid: number): void {
    let resolveExit: (exit: ChildExit) => void = () => undefined;
    const exit = new Promise<ChildExit>((resolve) => {
      resolveExit = resolve;
    });
    const console = this.#requests.get(id)?.request.console;
    const captured = console?.kind === 'capture';
    const output: CapturedOutput | null = captured ? { stdout: [], stderr: [], overflowed: false } : null;
    const room = console?.kind === 'capture' ? console.maxOutputBytes : 0;
    const child: Outstanding = { resolve: resolveExit, output, room, reaped: false };
    this.#children.set(pid, child);
    this.#answer(id, {
      ok: true,
      value: {
        pid,
        output,
        exit,
        kill: (signal) => {
          if (child.reaped || !this.#alive) return;
          this.#process.stdin.write(killFrame(pid, osConstants.signals[signal]));
        },
      },
    });
  }

  #output(pid: number, stream: 'stdout' | 'stderr', bytes: Buffer): void {
    const child = this.#children.get(pid);
    if (child?.output == null || child.output.overflowed) return;
    if (bytes.length > child.room) {
      child.output.overflowed = true;
      this.#process.stdin.write(killFrame(pid, osConstants.signals.SIGKILL));
      return;
    }
    child.room -= bytes.length;
    // A copy: `bytes` is a view of the read buffer, which the next read replaces.
    child.output[stream].push(Buffer.from(bytes));
  }

  #exited(pid: number, exit: ChildExit): void {
    const child = this.#children.get(pid);
    if (child === undefined) return; // a child whose exec failed: already answered
    this.#children.delete(pid);
    child.reaped = true;
    child.resolve(exit);
  }

  #died(): void {
    if (!this.#alive) return;
    this.#alive = false;
    for (const id of [...this.#requests.keys()]) {
      this.#answer(id, err('E_SPAWNER', 'petrel-spawner ended before it answered'));
    }
    // Our children were reparented. Petrel's tenders die with the helper; others are ended
    // here, before their pids can be reused (nobody has reaped them yet, so none is).
    for (const [pid, child] of this.#children) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
      child.reaped = true;
      child.resolve({ code: null, signal: 'SIGKILL' });
    }
    this.#children.clear();
    this.#onDeath();
  }

  /** Keeps the event loop alive exactly while something is outstanding. */
  #updateReference(): void {
    const busy = this.#requests.size > 0 || this.#children.size > 0;
    if (busy === this.#referenced) return;
    this.#referenced = busy;
    const handles = [this.#process, this.#process.stdout, this.#process.stdin] as {
      ref(): void;
      unref(): void;
    }[];
    for (const handle of handles) {
      if (busy) handle.ref();
      else handle.unref();
    }
  }
}

let shared: Helper | null = null;

/** The bundled petrel-spawner, if it is built and executable. */
export function spawnerProgram(): Result<string, SpawnerError> {
  return bundledProgram('petrel-spawner', 'E_SPAWNER');
}

/**
 * Starts `request.argv` through the shared petrel-spawner. Resolves with the running child, the
 * stage and errno of a failure, or E_SPAWNER when the helper itself is missing or died.
 */
export async function spawnChild(request: SpawnRequest): Promise<Answer> {
  if (shared === null || !shared.alive) {
    const program = spawnerProgram();
    if (!program.ok) return program;
    const helper = new Helper(program.value, () => {
      if (shared === helper) shared = null;
    });
    shared = helper;
  }
  return shared.spawn(request);
}

// petreld's side of native/build/petrel-holder, the parent of every tender, which outlives
// petreld (Petrel (k); the protocol is described in native/spawner/petrel-holder.c). One holder
// per run directory; `Holder.connect` starts it when none runs, and one connection at a time is
// its owner. Tenders, their console bytes (with running offsets) and their exit statuses are
// the holder's; this side lists, watches, signals and acknowledges them.

import { mkdir } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { constants as osConstants } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { getSystemErrorName } from 'node:util';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import { runCommand } from './command.js';
import { bundledProgram } from './native.js';
import { type ChildExit, decodeWaitStatus, frame, type SpawnFailure } from './spawner.js';

const VERSION = 1;

export type HolderError = PetrelError<'E_HOLDER'>;

/** The bundled petrel-holder, if it is built and executable. */
export function holderProgram(): Result<string, HolderError> {
  return bundledProgram('petrel-holder', 'E_HOLDER');
}

/** How a held child ended; `holderLost` when the holder itself went away (its tenders die too). */
export interface HeldExit extends ChildExit {
  readonly at: Date | null;
  readonly holderLost: boolean;
}

/** Console bytes at a running offset (bytes since the tender started), read at `time` (ms). */
export interface ConsoleChunk {
  readonly offset: number;
  readonly time: number;
  readonly bytes: Buffer;
}

/** Where a console stands: the oldest byte the holder still has, the end, and what was handled. */
export interface ConsolePosition {
  readonly first: number;
  readonly end: number;
  readonly acked: number;
}

export interface HeldChild {
  readonly pid: number;
  /** Resolves after every console byte was delivered. Never rejects. */
  readonly exit: Promise<HeldExit>;
  readonly exited: boolean;
  /** Signals the child while the holder has not reaped it. */
  kill(signal: NodeJS.Signals): void;
  /** Receives the console chunks that arrived so far, then each new one, in offset order. */
  onConsole(listener: (chunk: ConsoleChunk) => void): void;
  /** Flow control: the holder stops reading the console (the tender blocks once it is full). */
  pause(): void;
  resume(): void;
  /** The console was handled up to `offset`; the holder counts bytes it drops after that. */
  ack(offset: number): void;
  /** Drops an exited child from the holder once its exit has been dealt with. */
  forget(): void;
}

/** One child as the holder lists it. */
export interface HeldChildInfo {
  readonly pid: number;
  /** Exited and its console drained; otherwise it runs (or is draining). */
  readonly exit: ChildExit | null;
  readonly startedAt: Date;
  readonly exitedAt: Date | null;
  readonly console: ConsolePosition;
  readonly tag: string;
  readonly meta: string;
}

export interface HeldSpawnRequest {
  readonly argv: readonly string[];
  readonly env: NodeJS.ProcessEnv;
  /**
   * A FIFO whose both ends the holder opens (the tender writes, the holder reads and keeps the
   * last `bufferBytes`, default 64 KiB), or a file opened for appending (tests give /dev/null).
   */
  readonly console:
    | { readonly kind: 'fifo'; readonly path: string; readonly bufferBytes?: number }
    | { readonly kind: 'file'; readonly path: string };
  /** Kept by the holder and listed back: which unikernel this is, and what petreld needs. */
  readonly tag: string;
  readonly meta?: string;
}

export interface ConnectOptions {
  /** The holder program. Default: the bundled native/build/petrel-holder. */
  readonly program?: string;
  /** How long to keep trying to reach or start a holder (ms). Default 10 000. */
  readonly timeoutMs?: number;
  /** A holder started here exits this long after nobody is attached and nothing is held (ms). */
  readonly idleExitMs?: number;
}

const u32 = (v: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v);
  return b;
};
const i32 = (v: number) => {
  const b = Buffer.alloc(4);
  b.writeInt32LE(v);
  return b;
};
const op = (c: string) => Buffer.from(c, 'latin1');
const cString = (s: string) => Buffer.from(`${s}\0`);

/**
 * Cuts the holder's byte stream into frame bodies. A frame that lies within one chunk is handed
 * out as a view of it (a socket's chunks are fresh buffers, never reused); only a frame split
 * across chunks is copied, once. Consoles are most of what flows here.
 */
class Frames {
  #parts: Buffer[] = [];
  #length = 0;

  push(chunk: Buffer): void {
    this.#parts.push(chunk);
    this.#length += chunk.length;
  }

  /** The body of the next complete frame, or null until it has arrived. */
  next(): Buffer | null {
    if (this.#length < 4) return null;
    const length = this.#take(4, false).readUInt32LE(0);
    if (this.#length < 4 + length) return null;
    return this.#take(4 + length, true).subarray(4);
  }

  /** The first `n` bytes, consumed or not. */
  #take(n: number, consume: boolean): Buffer {
    const first = this.#parts[0] as Buffer;
    let bytes: Buffer;
    if (first.length >= n) {
      bytes = first.subarray(0, n);
    } else {
      bytes = Buffer.allocUnsafe(n);
      let at = 0;
      for (const part of this.#parts) {
        const copied = part.copy(bytes, at, 0, Math.min(part.length, n - at));
        at += copied;
        if (at === n) break;
      }
    }
    if (!consume) return bytes;
    this.#length -= n;
    let left = n;
    while (left > 0) {
      const part = this.#parts[0] as Buffer;
      if (part.length > left) {
        this.#parts[0] = part.subarray(left);
        break;
      }
      left -= part.length;
      this.#parts.shift();
    }
    return bytes;
  }
}

class Held implements HeldChild {
  readonly exit: Promise<HeldExit>;
  exited = false;
  #resolve: (exit: HeldExit) => void = () => undefined;
  #chunks: ConsoleChunk[] = [];
  #listener: ((chunk: ConsoleChunk) => void) | null = null;

  constructor(
    readonly pid: number,
    readonly holder: Holder,
  ) {
    this.exit = new Promise((resolve) => {
      this.#resolve = resolve;
    });
  }

  kill(signal: NodeJS.Signals): void {
    if (this.exited) return;
    const number = osConstants.signals[signal];
    this.holder.send(Buffer.concat([op('K'), i32(this.pid), i32(number)]));
  }

  onConsole(listener: (chunk: ConsoleChunk) => void): void {
    this.#listener = listener;
    for (const chunk of this.#chunks.splice(0)) listener(chunk);
  }

  pause(): void {
    if (!this.exited) this.holder.send(Buffer.concat([op('P'), i32(this.pid)]));
  }

  resume(): void {
    if (!this.exited) this.holder.send(Buffer.concat([op('R'), i32(this.pid)]));
  }

  ack(offset: number): void {
    this.holder.ack(this.pid, offset);
  }

  forget(): void {
    this.holder.forget(this.pid);
  }

  output(chunk: ConsoleChunk): void {
    if (this.#listener === null) this.#chunks.push(chunk);
    else this.#listener(chunk);
  }

  ended(exit: HeldExit): void {
    if (this.exited) return;
    this.exited = true;
    this.#resolve(exit);
  }
}

type SpawnAnswer = Result<HeldChild, SpawnFailure | HolderError>;

export class Holder {
  readonly #socket: Socket;
  readonly #children = new Map<number, Held>();
  readonly #spawns = new Map<number, (answer: SpawnAnswer) => void>();
  readonly #watches = new Map<
    number,
    ((answer: { child: Held; console: ConsolePosition } | null) => void)[]
  >();
  readonly #lists: ((children: Result<HeldChildInfo[], HolderError>) => void)[] = [];
  #listing: HeldChildInfo[] = [];
  readonly #acks = new Map<number, number>();
  #acksScheduled = false;
  /** Inside `#read`: acknowledgements made meanwhile go out at its end. */
  #reading = false;
  #nextId = 1;
  readonly #frames = new Frames();
  #connected = true;
  #detached = false;
  #referenced = true;
  readonly lost: Promise<void>;

  private constructor(
    socket: Socket,
    readonly pid: number,
    rest: Buffer,
  ) {
    this.#socket = socket;
    this.lost = new Promise((resolve) => {
      socket.once('close', () => {
        this.#gone();
        resolve();
      });
    });
    socket.on('error', () => socket.destroy());
    socket.on('data', (chunk: Buffer) => this.#read(chunk));
    this.#updateReference();
    if (rest.length > 0) this.#read(rest);
    socket.resume();
  }

  /**
   * Connects to the holder of `dir` (`<run-dir>/holder`), starting one when none runs. Fails if
   * another petreld is attached to it, naming that process.
   */
  static async connect(dir: string, options: ConnectOptions = {}): Promise<Result<Holder, HolderError>> {
    const bundled = options.program === undefined ? holderProgram() : ok(options.program);
    if (!bundled.ok) return bundled;
    const program = bundled.value;
    const absolute = path.resolve(dir);
    try {
      await mkdir(absolute, { recursive: true, mode: 0o700 });
    } catch (cause) {
      return err('E_HOLDER', `creating ${absolute}: ${(cause as Error).message}`);
    }
    const deadline = Date.now() + (options.timeoutMs ?? 10_000);
    let last = 'not tried';
    for (let attempt = 0; Date.now() < deadline; attempt++) {
      const reached = await hello(path.join(absolute, 'sock'));
      if (reached.kind === 'attached') return ok(new Holder(reached.socket, reached.pid, reached.rest));
      if (reached.kind === 'busy') {
        return err(
          'E_HOLDER',
          `another petreld (pid ${reached.owner}) is attached to the holder of ${absolute}`,
          { owner: reached.owner },
        );
      }
      last = reached.reason;
      if (reached.kind === 'absent') {
        // Exits 0 at once when a holder of this directory runs (it holds the lock).
        const idle = options.idleExitMs === undefined ? [] : ['--idle-exit-ms', String(options.idleExitMs)];
        const started = await runCommand(program, [...idle, absolute], { label: 'petrel-holder' });
        if (!started.ok) return err('E_HOLDER', `starting the holder: ${started.error.message}`);
      }
      await sleep(Math.min(200, 10 * 2 ** attempt));
    }
    return err('E_HOLDER', `could not reach the holder of ${absolute}: ${last}`);
  }

  get connected(): boolean {
    return this.#connected;
  }

  /** Starts a tender under the holder; it is watched at once (output, then exit). */
  spawn(request: HeldSpawnRequest): Promise<SpawnAnswer> {
    if (!this.#connected) return Promise.resolve(err('E_HOLDER', 'the holder connection is gone'));
    const env = Object.entries(request.env)
      .filter((entry): entry is [string, string] => entry[1] !== undefined)
      .map(([key, value]) => `${key}=${value}`);
    const strings = [request.console.path, request.tag, request.meta ?? '', ...request.argv, ...env];
    if (strings.some((s) => s.includes('\0'))) {
      return Promise.resolve(
        err('E_HOLDER', 'an argument, the console path, the tag or the environment contains a NUL byte'),
      );
    }
    const id = this.#nextId++;
    const ring = request.console.kind === 'fifo' ? (request.console.bufferBytes ?? 0) : 0;
    const head = Buffer.concat([
      op('S'),
      u32(id),
      u32(request.argv.length),
      u32(env.length),
      u32(ring),
      op(request.console.kind === 'fifo' ? 'H' : 'A'),
    ]);
    return new Promise((resolve) => {
      this.#spawns.set(id, resolve);
      this.#updateReference();
      this.send(Buffer.concat([head, ...strings.map(cString)]));
    });
  }

  /** Every child the holder has: running ones and exited ones not yet forgotten. */
  list(): Promise<Result<HeldChildInfo[], HolderError>> {
    if (!this.#connected) return Promise.resolve(err('E_HOLDER', 'the holder connection is gone'));
    return new Promise((resolve) => {
      this.#lists.push(resolve);
      this.#updateReference();
      this.send(op('L'));
    });
  }

  /**
   * Takes over a child left by an earlier petreld: its console from the oldest byte the holder
   * kept, then live, then its exit. Null when the holder has no such child.
   */
  watch(pid: number): Promise<{ child: HeldChild; console: ConsolePosition } | null> {
    if (!this.#connected) return Promise.resolve(null);
    return new Promise((resolve) => {
      const waiting = this.#watches.get(pid) ?? [];
      waiting.push(resolve);
      this.#watches.set(pid, waiting);
      this.#updateReference();
      this.send(Buffer.concat([op('W'), i32(pid)]));
    });
  }

  /**
   * Detaches (petreld is stopping): the holder keeps every tender running, and nothing more is
   * reported here — exits of our children never resolve.
   */
  close(): void {
    this.#flushAcks();
    this.#detached = true;
    this.#socket.end();
  }

  send(body: Buffer): void {
    if (this.#connected) this.#socket.write(frame(body));
  }

  ack(pid: number, offset: number): void {
    if ((this.#acks.get(pid) ?? -1) >= offset) return;
    this.#acks.set(pid, offset);
    if (this.#acksScheduled || this.#reading) return;
    this.#acksScheduled = true;
    setImmediate(() => this.#flushAcks());
  }

  forget(pid: number): void {
    this.#acks.delete(pid);
    this.send(Buffer.concat([op('F'), i32(pid)]));
  }

  /**
   * Acknowledgements go out in one write: those made while the holder's bytes are handled at
   * the end of that (no turn of the event loop for them: an Immediate and a second poll per
   * read were a quarter of petreld's time on a console printing a line at a time), others once
   * per turn. They stay prompt: they are what the holder counts as handled if petreld dies.
   */
  #flushAcks(): void {
    this.#acksScheduled = false;
    if (this.#acks.size === 0 || !this.#connected) return;
    const frames = [...this.#acks].map(([pid, offset]) => {
      const body = Buffer.alloc(13);
      body.write('A', 0, 'latin1');
      body.writeInt32LE(pid, 1);
      body.writeBigUInt64LE(BigInt(offset), 5);
      return frame(body);
    });
    this.#acks.clear();
    this.#socket.write(Buffer.concat(frames));
  }

  #read(chunk: Buffer): void {
    this.#frames.push(chunk);
    this.#reading = true;
    try {
      for (let body = this.#frames.next(); body !== null; body = this.#frames.next()) {
        if (!this.#event(body)) {
          this.#socket.destroy(); // nothing we could still trust
          return;
        }
      }
    } finally {
      this.#reading = false;
    }
    if (!this.#acksScheduled) this.#flushAcks();
    this.#updateReference();
  }

  /** Handles one event; false for one that makes no sense. */
  #event(body: Buffer): boolean {
    const code = String.fromCharCode(body[0] ?? 0);
    const n = body.length;
    const offset = (at: number) => Number(body.readBigUInt64LE(at));
    if (code === 'O' && n >= 21) {
      const child = this.#children.get(body.readInt32LE(1));
      // A view: lines cut from it are copies, so the chunk is not kept.
      child?.output({ offset: offset(5), time: offset(13), bytes: body.subarray(21) });
    } else if (code === 'P' && n === 9) {
      this.#started(body.readUInt32LE(1), body.readInt32LE(5));
    } else if (code === 'E' && n === 10) {
      const stage = body[5] === 'C'.charCodeAt(0) ? 'console' : 'exec';
      this.#answerSpawn(body.readUInt32LE(1), {
        ok: false,
        error: { stage, errno: getSystemErrorName(-body.readInt32LE(6)) },
      });
    } else if (code === 'X' && n === 17) {
      const pid = body.readInt32LE(1);
      const child = this.#children.get(pid);
      this.#children.delete(pid);
      this.#acks.delete(pid);
      child?.ended({ ...decodeWaitStatus(body.readInt32LE(5)), at: new Date(offset(9)), holderLost: false });
    } else if (code === 'W' && n === 29) {
      const pid = body.readInt32LE(1);
      const child = this.#children.get(pid) ?? new Held(pid, this);
      this.#children.set(pid, child);
      const position = { first: offset(5), end: offset(13), acked: offset(21) };
      this.#answerWatch(pid, { child, console: position });
    } else if (code === 'U' && n === 5) {
      this.#answerWatch(body.readInt32LE(1), null);
    } else if (code === 'C' && n >= 51) {
      const end = body.indexOf(0, 50);
      const metaEnd = body.indexOf(0, end + 1);
      if (end < 0 || metaEnd !== n - 1) return false;
      const exited = body[5] === 'X'.charCodeAt(0);
      this.#listing.push({
        pid: body.readInt32LE(1),
        exit: exited ? decodeWaitStatus(body.readInt32LE(6)) : null,
        startedAt: new Date(offset(10)),
        exitedAt: exited ? new Date(offset(18)) : null,
        console: { first: offset(26), end: offset(34), acked: offset(42) },
        tag: body.subarray(50, end).toString(),
        meta: body.subarray(end + 1, metaEnd).toString(),
      });
    } else if (code === 'L' && n === 5) {
      const listing = this.#listing;
      this.#listing = [];
      this.#lists.shift()?.(ok(listing));
    } else {
      return false;
    }
    return true;
  }

  #started(id: number, pid: number): void {
    const child = new Held(pid, this);
    this.#children.set(pid, child);
    this.#answerSpawn(id, ok(child));
  }

  #answerSpawn(id: number, answer: SpawnAnswer): void {
    const resolve = this.#spawns.get(id);
    this.#spawns.delete(id);
    resolve?.(answer);
  }

  #answerWatch(pid: number, answer: { child: Held; console: ConsolePosition } | null): void {
    const waiting = this.#watches.get(pid);
    const resolve = waiting?.shift();
    if (waiting?.length === 0) this.#watches.delete(pid);
    resolve?.(answer);
  }

  #gone(): void {
    if (!this.#connected) return;
    this.#connected = false;
    for (const id of [...this.#spawns.keys()])
      this.#answerSpawn(id, err('E_HOLDER', 'the holder went away before it answered'));
    for (const pid of [...this.#watches.keys()]) while (this.#watches.has(pid)) this.#answerWatch(pid, null);
    for (const resolve of this.#lists.splice(0)) resolve(err('E_HOLDER', 'the holder went away'));
    if (!this.#detached)
      for (const child of this.#children.values())
        child.ended({ code: null, signal: 'SIGKILL', at: null, holderLost: true });
    this.#children.clear();
  }

  /** Keeps the event loop alive while a request is unanswered or a child of ours runs. */
  #updateReference(): void {
    const busy =
      this.#connected &&
      (this.#spawns.size > 0 || this.#lists.length > 0 || this.#watches.size > 0 || this.#children.size > 0);
    if (busy === this.#referenced) return;
    this.#referenced = busy;
    if (busy) this.#socket.ref();
    else this.#socket.unref();
  }
}

type Hello =
  | { kind: 'attached'; socket: Socket; pid: number; rest: Buffer }
  | { kind: 'busy'; owner: number }
  | { kind: 'absent'; reason: string }
  | { kind: 'retry'; reason: string };

/** Connects and says hello: attached, busy, no holder listening, or one that went away. */
function hello(socketPath: string): Promise<Hello> {
  return new Promise((resolve) => {
    const socket = connect(socketPath);
    let got: Buffer = Buffer.alloc(0);
    const done = (answer: Hello) => {
      socket.pause(); // the Holder resumes it once its own listener is in place
      socket.removeAllListeners('data');
      socket.removeAllListeners('error');
      socket.removeAllListeners('close');
      if (answer.kind !== 'attached') socket.destroy();
      resolve(answer);
    };
    socket.once('connect', () => socket.write(frame(Buffer.concat([op('H'), u32(VERSION)]))));
    socket.on('error', (error: NodeJS.ErrnoException) => {
      const absent = error.code === 'ENOENT' || error.code === 'ECONNREFUSED';
      done({ kind: absent ? 'absent' : 'retry', reason: error.message });
    });
    socket.on('close', () => done({ kind: 'retry', reason: 'the holder closed the connection' }));
    socket.on('data', (chunk: Buffer) => {
      got = Buffer.concat([got, chunk]);
      if (got.length < 4 || got.length < 4 + got.readUInt32LE(0)) return;
      const length = got.readUInt32LE(0);
      const code = String.fromCharCode(got[4] ?? 0);
      if (code === 'H' && length === 9 && got.readUInt32LE(5) === VERSION) {
        done({ kind: 'attached', socket, pid: got.readInt32LE(9), rest: got.subarray(13) });
      } else if (code === 'B' && length === 5) {
        done({ kind: 'busy', owner: got.readInt32LE(5) });
      } else {
        done({ kind: 'retry', reason: 'the holder answered with something else than its hello' });
      }
    });
  });
}

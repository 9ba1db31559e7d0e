// Atomic file replacement, and durable appends, on one worker thread. Replacing a file takes about ten system calls
// (lstat and read of what it held, open, write, chmod, fsync, close, rename, and the directory's
// open, fsync, close); through node:fs/promises each is a round trip through libuv's thread
// pool, which costs 0.5-1 ms on a virtualised host, so the state file written after every
// commit cost 3 ms. Here the whole sequence is one message to a thread that makes the calls
// synchronously: one round trip, and the event loop never waits on a disk.
//
// The bytes are copied into an ArrayBuffer of their own, moved (transferred, not cloned) to the
// thread, and moved back with the answer, so they die here, where collections are frequent. A
// copy cloned into the thread waited for the thread's rare collections, and tens of megabytes
// of them stayed resident; a staging buffer kept for reuse would stay at the largest state.

import { Worker } from 'node:worker_threads';
import { writeFault } from './faults.js';

/** A fault a test injected (src/host/faults.ts): the step fails with this errno, as the call would. */
export interface InjectedFault {
  readonly step: string;
  readonly code: string;
  readonly message: string;
}

/** Replace `file` by `data` through a temporary file in its directory and a rename. */
export interface ReplaceRequest {
  readonly file: string;
  /** The temporary name, in the same directory. */
  readonly temp: string;
  readonly data: Uint8Array;
  readonly mode: number;
  /** fsync the file before the rename and the directory after it. */
  readonly durable: boolean;
  /** Read and return what `file` held (for an undo). */
  readonly previous: boolean;
  readonly fault?: InjectedFault;
}

export interface PreviousContent {
  readonly data: Buffer;
  readonly mode: number;
}

/** A failed step: the system call, the path it was about, and the error (or `symlink` / `not-file`). */
export interface ReplaceFailure {
  readonly step: string;
  readonly path: string;
  readonly code: string;
  readonly message: string;
}

export type ReplaceOutcome =
  | { readonly ok: true; readonly previous: PreviousContent | null }
  | { readonly ok: false; readonly failure: ReplaceFailure };

/**
 * Append `data` to `file` and fdatasync it (created, with its directory synced, when missing).
 * A failure cuts the file back to its length before, so a later append never follows a torn
 * one; when even that fails the outcome's code is `ETORN`.
 */
export interface AppendRequest {
  readonly file: string;
  readonly data: Uint8Array;
  readonly fault?: InjectedFault;
}

/** A request as it crosses to the thread; `data` owns its ArrayBuffer, which is moved. */
type Message =
  | { readonly id: number; readonly op: 'replace'; readonly request: ReplaceRequest }
  | { readonly id: number; readonly op: 'append'; readonly request: AppendRequest };

/** The answer, with the request's bytes moved back. */
interface Envelope {
  readonly id: number;
  readonly outcome: ReplaceOutcome;
  readonly data: Uint8Array;
}

/**
 * The thread's code. It runs as its own script (eval), so it may only use what it requires;
 * the same source then serves the compiled daemon and the tests that run the TypeScript.
 */
function threadMain(): void {
  const fs = require('node:fs') as typeof import('node:fs');
  const path = require('node:path') as typeof import('node:path');
  const { parentPort } = require('node:worker_threads') as typeof import('node:worker_threads');
  const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_RDONLY, O_DIRECTORY, O_APPEND } = fs.constants;

  // Failures are thrown as plain ReplaceFailure objects (no classes: this code must survive
  // any compiler's rewriting as it is, helpers and all, because it runs from its own text).
  const failure = (step: string, file: string, cause: unknown): ReplaceFailure => {
    const e = cause as NodeJS.ErrnoException;
    return { step, path: file, code: e?.code ?? 'EIO', message: e?.message ?? String(cause) };
  };
  const attempt = <T>(step: string, file: string, call: () => T): T => {
    try {
      return call();
    } catch (cause) {
      throw failure(step, file, cause);
    }
  };

  // A test's fault is thrown as the system call's error would be, at the step it names.
  const injected = (fault: InjectedFault | undefined, step: string): void => {
    if (fault?.step !== step) return;
    throw Object.assign(new Error(fault.message), { code: fault.code });
  };

  const readPrevious = (file: string): PreviousContent | null => {
    let st: import('node:fs').Stats;
    try {
      st = fs.lstatSync(file);
    } catch (cause) {
      if ((cause as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw failure('lstat', file, cause);
    }
    if (st.isSymbolicLink()) throw failure('replace', file, { code: 'symlink', message: '' });
    if (!st.isFile()) throw failure('replace', file, { code: 'not-file', message: '' });
    const fd = attempt('open', file, () => fs.openSync(file, O_RDONLY | O_NOFOLLOW));
    try {
      return { data: attempt('read', file, () => fs.readFileSync(fd)), mode: st.mode & 0o7777 };
    } finally {
      fs.closeSync(fd);
    }
  };

  const syncDirectory = (dir: string): void => {
    const fd = attempt('fsync directory of', dir, () => fs.openSync(dir, O_RDONLY | O_DIRECTORY));
    try {
      attempt('fsync directory of', dir, () => fs.fsyncSync(fd));
    } finally {
      fs.closeSync(fd);
    }
  };

  const replace = (request: ReplaceRequest): PreviousContent | null => {
    const previous = request.previous ? readPrevious(request.file) : null;
    const fd = attempt('open', request.temp, () =>
      fs.openSync(request.temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, request.mode),
    );
    let step = 'write';
    try {
      try {
        let done = 0;
        injected(request.fault, 'write');
        while (done < request.data.length) done += fs.writeSync(fd, request.data, done);
        fs.fchmodSync(fd, request.mode);
        step = 'fsync';
        injected(request.fault, 'fsync');
        if (request.durable) fs.fsyncSync(fd);
      } finally {
        fs.closeSync(fd);
      }
      step = 'rename';
      injected(request.fault, 'rename');
      fs.renameSync(request.temp, request.file);
    } catch (cause) {
      try {
        fs.unlinkSync(request.temp);
      } catch {
        // the temporary name is recognised and removed at the next start
      }
      throw failure(step, step === 'rename' ? request.file : request.temp, cause);
    }
    if (request.durable) syncDirectory(path.dirname(request.file));
    return previous;
  };

  const append = (request: AppendRequest): null => {
    const { file } = request;
    let fd: number;
    let created = false;
    try {
      fd = fs.openSync(file, O_WRONLY | O_APPEND | O_NOFOLLOW);
    } catch (cause) {
      if ((cause as NodeJS.ErrnoException).code !== 'ENOENT') throw failure('open', file, cause);
      fd = attempt('create', file, () =>
        fs.openSync(file, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600),
      );
      created = true;
    }
    try {
      const before = attempt('fstat', file, () => fs.fstatSync(fd).size);
      let step = 'write';
      try {
        let done = 0;
        // An injected write fault lands after half the bytes: a torn entry, as a full disk makes.
        if (request.fault?.step === 'write')
          done += fs.writeSync(fd, request.data, 0, request.data.length >> 1);
        injected(request.fault, 'write');
        while (done < request.data.length) done += fs.writeSync(fd, request.data, done);
        step = 'fdatasync';
        injected(request.fault, 'fdatasync');
        fs.fdatasyncSync(fd);
      } catch (cause) {
        try {
          fs.ftruncateSync(fd, before);
          fs.fsyncSync(fd);
        } catch (again) {
          throw failure('cut back', file, { code: 'ETORN', message: String(again) });
        }
        throw failure(step, file, cause);
      }
    } finally {
      fs.closeSync(fd);
    }
    if (created) syncDirectory(path.dirname(file));
    return null;
  };

  parentPort?.on('message', ({ id, op, request }: Message) => {
    let outcome: ReplaceOutcome;
    try {
      outcome = { ok: true, previous: op === 'replace' ? replace(request) : append(request) };
    } catch (cause) {
      const known = typeof cause === 'object' && cause !== null && 'step' in cause;
      outcome = {
        ok: false,
        failure: known ? (cause as ReplaceFailure) : failure('replace', request.file, cause),
      };
    }
    const data = request.data;
    parentPort?.postMessage({ id, outcome, data } satisfies Envelope, [data.buffer as ArrayBuffer]);
  });
}

/** The running thread, the requests it has not answered, and its idle timer. */
interface FileThread {
  readonly worker: Worker;
  readonly waiting: Map<number, (outcome: ReplaceOutcome) => void>;
  idle: NodeJS.Timeout | null;
}

/**
 * A thread unused for this long ends; the next replacement starts another (tens of ms). A
 * thread is a second V8 isolate, about 10 MiB resident: an idle petreld should not keep one for
 * the state file it wrote at start-up, while a burst of commands keeps using the same one.
 */
export const FILE_THREAD_IDLE_MS = 30_000;

let current: FileThread | null = null;
let nextId = 0;
let started = 0;

function retire(thread: FileThread): void {
  if (current !== thread || thread.waiting.size > 0) return;
  current = null;
  void thread.worker.terminate();
}

/** Whether a file thread runs now, and how many were started (tests). */
export function fileThreadState(): { readonly running: boolean; readonly started: number } {
  return { running: current !== null, started };
}

function start(idleMs: number): FileThread {
  started++;
  const worker = new Worker(`(${threadMain.toString()})()`, { eval: true });
  const thread: FileThread = { worker, waiting: new Map(), idle: null };
  worker.on('message', ({ id, outcome }: Envelope) => {
    const resolve = thread.waiting.get(id);
    thread.waiting.delete(id);
    resolve?.(outcome);
    if (thread.waiting.size === 0) {
      worker.unref();
      thread.idle = setTimeout(() => retire(thread), idleMs);
      thread.idle.unref();
    }
  });
  const fail = (message: string): void => {
    if (current === thread) current = null;
    for (const [id, resolve] of thread.waiting) {
      thread.waiting.delete(id);
      resolve({ ok: false, failure: { step: 'replace', path: '', code: 'EIO', message } });
    }
  };
  worker.on('error', (cause) => fail(`the file thread failed: ${cause.message}`));
  worker.on('exit', (code) => fail(`the file thread exited with code ${code}`));
  worker.unref();
  return thread;
}

/**
 * Runs one request on the file thread (started on first use; idle, it holds nothing open, and
 * it ends after `idleMs` without a request).
 */
function onThread(
  op: Message['op'],
  request: ReplaceRequest | AppendRequest,
  idleMs = FILE_THREAD_IDLE_MS,
): Promise<ReplaceOutcome> {
  current ??= start(idleMs);
  const thread = current;
  if (thread.idle !== null) clearTimeout(thread.idle);
  thread.idle = null;
  const id = nextId++;
  const data = new Uint8Array(request.data); // a copy that owns its buffer, to be moved
  const fault = injectedFault(op, request.file);
  thread.worker.ref();
  return new Promise((resolve) => {
    thread.waiting.set(id, resolve);
    const message = {
      id,
      op,
      request: { ...request, data, ...(fault === null ? {} : { fault }) },
    } as Message;
    thread.worker.postMessage(message, [data.buffer]);
  });
}

/** The first step of this request a test made fail (src/host/faults.ts), if any. */
function injectedFault(op: Message['op'], file: string): InjectedFault | null {
  const steps =
    op === 'replace' ? (['write', 'fsync', 'rename'] as const) : (['write', 'fdatasync'] as const);
  for (const step of steps) {
    const fault = writeFault(`${op}:${step}` as Parameters<typeof writeFault>[0], file);
    if (fault !== null) return { step, code: fault.code as string, message: fault.message };
  }
  return null;
}

export const replaceOnThread = (request: ReplaceRequest, idleMs?: number): Promise<ReplaceOutcome> =>
  onThread('replace', request, idleMs);
export const appendOnThread = (request: AppendRequest, idleMs?: number): Promise<ReplaceOutcome> =>
  onThread('append', request, idleMs);

// Tender PID records `<run-dir>/tenders/<name>` (petrel-differences (e)): pid plus the kernel's
// process start time, so a restarted daemon stops its own leftovers and never a recycled pid.
//
// Every file operation here is synchronous. A record is a line of a few bytes in the run
// directory (tmpfs on a normal host, and never fsynced: it describes processes that a crash of
// the machine ends anyway), so each call returns in microseconds, while the asynchronous calls
// cost a libuv thread-pool round trip each (0.5-1 ms on a virtualised host, several on every
// create and destroy). /proc is generated in memory and never waits on a disk either.

import {
  closeSync,
  constants,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  writeSync,
} from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import { type Name, parseName } from '../resources/name.js';
import { writeFault } from './faults.js';
import { type FileError, ioError, temporaryName, unlinkIfPresentSync } from './files.js';
import { containedPath, pidRecordPath, tendersDir } from './paths.js';
import type { Undoable } from './undo.js';

export interface PidRecord {
  readonly name: Name;
  readonly path: string;
  readonly pid: number;
  /** Field 22 of /proc/<pid>/stat: clock ticks after boot, as a decimal string (it is a u64). */
  readonly startTime: string;
}

export type PidRecordError = FileError | PetrelError<'E_PID_RECORD' | 'E_PROC'>;

/** What a record's pid is now: the same process, no process, or another process. */
export type Liveness = 'alive' | 'gone' | 'recycled';

interface ProcStat {
  readonly state: string;
  readonly startTime: string;
}

/** /proc/<pid>/stat, or null when there is no such process. */
function procStat(pid: number): Result<ProcStat | null, PidRecordError> {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch (cause) {
    const code = (cause as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ESRCH') return ok(null);
    return { ok: false, error: ioError('read', `/proc/${pid}/stat`, cause) };
  }
  // The command name (field 2) is in parentheses and may itself contain spaces and `)`.
  const close = text.lastIndexOf(')');
  const rest = text.slice(close + 2).split(' ');
  const state = rest[0];
  const startTime = rest[19]; // field 22; rest[0] is field 3
  if (close < 0 || state === undefined || startTime === undefined || !/^\d+$/u.test(startTime)) {
    return err('E_PROC', `unexpected format of /proc/${pid}/stat`, { pid });
  }
  return ok({ state, startTime });
}

/** The start time of process `pid` (field 22 of /proc/<pid>/stat). */
export function processStartTime(pid: number): Result<string, PidRecordError> {
  const stat = procStat(pid);
  if (!stat.ok) return stat;
  if (stat.value === null) return err('E_PROC', `process ${pid} does not exist`, { pid });
  return ok(stat.value.startTime);
}

/** Whether no process `pid` exists, not even as a zombie: it exited and its parent reaped it. */
export function processGone(pid: number): boolean {
  const stat = procStat(pid);
  return stat.ok && stat.value === null;
}

function checkPid(pid: number): boolean {
  return Number.isSafeInteger(pid) && pid > 1;
}

/**
 * Records `pid` (with its start time, read now unless given) as the tender of `name`: a
 * temporary file renamed over the record, so a crash of petreld leaves the old record or the
 * new one, never half of one. Undo deletes the record.
 */
export function writePidRecord(
  runDir: string,
  name: Name,
  pid: number,
  startTime?: string,
): Result<Undoable<PidRecord>, PidRecordError> {
  if (!checkPid(pid)) return err('E_PID_RECORD', `invalid pid ${pid}`, { pid });
  const file = pidRecordPath(runDir, name);
  if (!file.ok) return file;
  let start = startTime;
  if (start === undefined) {
    const read = processStartTime(pid);
    if (!read.ok) return read;
    start = read.value;
  }
  const dir = tendersDir(runDir);
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (cause) {
    return { ok: false, error: ioError('mkdir', dir, cause) };
  }
  const temp = temporaryName(file.value);
  let step = 'open';
  try {
    const fd = openSync(
      temp,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      0o600,
    );
    try {
      step = 'write';
      const fault = writeFault('run-file', file.value);
      if (fault !== null) throw fault;
      writeSync(fd, `${pid} ${start}\n`);
    } finally {
      closeSync(fd);
    }
    step = 'rename';
    renameSync(temp, file.value);
  } catch (cause) {
    if (step !== 'open') unlinkIfPresentSync(temp);
    return { ok: false, error: ioError(step, step === 'rename' ? file.value : temp, cause) };
  }
  const record = { name, path: file.value, pid, startTime: start };
  return ok({
    value: record,
    undo: async () => {
      const removed = removePidRecord(record.path);
      if (!removed.ok) throw new Error(removed.error.message);
    },
  });
}

/** Reads one record file (the file name is the unikernel's name string). */
export function readPidRecordFile(file: string): Result<PidRecord, PidRecordError> {
  const base = file.slice(file.lastIndexOf('/') + 1);
  const name = parseName(base);
  if (!name.ok || name.value.label === null) {
    return err('E_PID_RECORD', `PID record ${file}: file name is not a unikernel name`, { path: file });
  }
  let text: string;
  try {
    const fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      text = readFileSync(fd, 'utf8');
    } finally {
      closeSync(fd);
    }
  } catch (cause) {
    return { ok: false, error: ioError('read', file, cause) };
  }
  const match = /^(\d{1,10}) (\d{1,20})\n?$/u.exec(text);
  const pid = Number(match?.[1]);
  if (match === null || match[2] === undefined || !checkPid(pid)) {
    return err('E_PID_RECORD', `PID record ${file}: malformed content ${JSON.stringify(text.slice(0, 60))}`, {
      path: file,
    });
  }
  return ok({ name: name.value, path: file, pid, startTime: match[2] });
}

export interface PidRecordListing {
  readonly records: readonly PidRecord[];
  /** Files in the directory that are not valid records (start-up deletes them with a warning). */
  readonly invalid: readonly { readonly path: string; readonly error: PetrelError }[];
}

/** Every record in `<run-dir>/tenders` (a missing directory holds none). */
export function readPidRecords(runDir: string): Result<PidRecordListing, PidRecordError> {
  const dir = tendersDir(runDir);
  let names: string[];
  try {
    names = readdirSync(dir).sort();
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'ENOENT') return ok({ records: [], invalid: [] });
    return { ok: false, error: ioError('readdir', dir, cause) };
  }
  const records: PidRecord[] = [];
  const invalid: { path: string; error: PetrelError }[] = [];
  for (const entry of names) {
    const file = containedPath(dir, entry);
    if (!file.ok) continue;
    const record = readPidRecordFile(file.value);
    if (record.ok) records.push(record.value);
    else invalid.push({ path: file.value, error: record.error });
  }
  return ok({ records, invalid });
}

/** Deletes a record file (absent is fine). */
export function removePidRecord(file: string): Result<void, PidRecordError> {
  try {
    unlinkIfPresentSync(file);
    return ok(undefined);
  } catch (cause) {
    return { ok: false, error: ioError('unlink', file, cause) };
  }
}

/**
 * Whether the recorded process still runs: `alive` only if the pid exists, is not a zombie,
 * and has the recorded start time; `recycled` when the pid now belongs to another process.
 */
export function checkPidRecord(
  record: Pick<PidRecord, 'pid' | 'startTime'>,
): Result<Liveness, PidRecordError> {
  const stat = procStat(record.pid);
  if (!stat.ok) return stat;
  if (stat.value === null) return ok('gone');
  if (stat.value.startTime !== record.startTime) return ok('recycled');
  // A zombie (or a dead task) has exited; only its parent's wait is missing.
  if (stat.value.state === 'Z' || stat.value.state === 'X') return ok('gone');
  return ok('alive');
}

export interface StopOptions {
  /** Time between SIGTERM and SIGKILL, in milliseconds. Default 10 000. */
  readonly graceMs?: number;
  /** Whether to send SIGTERM first; without, the grace is only waited (a process already dying). */
  readonly term?: boolean;
  /** How long to wait for the process to vanish after SIGKILL. Default 5 000. */
  readonly killWaitMs?: number;
  /** Poll interval. Default 20 ms. */
  readonly pollMs?: number;
}

async function waitUntilNotAlive(
  record: Pick<PidRecord, 'pid' | 'startTime'>,
  ms: number,
  pollMs: number,
): Promise<Result<Liveness, PidRecordError>> {
  const deadline = Date.now() + ms;
  for (;;) {
    const now = checkPidRecord(record);
    if (!now.ok || now.value !== 'alive' || Date.now() >= deadline) return now;
    await sleep(pollMs);
  }
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code !== 'ESRCH') throw cause;
  }
}

/**
 * Stops the process of a record left by an earlier daemon: SIGTERM, then SIGKILL after the
 * grace period. Before each signal the start time is compared again, so a pid that now belongs
 * to another process is never signalled. Resolves with `stopped`, or with what the record was
 * found to be (`gone`, `recycled`) when nothing had to be stopped.
 */
export async function stopRecordedProcess(
  record: Pick<PidRecord, 'pid' | 'startTime'>,
  options: StopOptions = {},
): Promise<Result<'stopped' | 'gone' | 'recycled', PidRecordError>> {
  const pollMs = options.pollMs ?? 20;
  const first = checkPidRecord(record);
  if (!first.ok) return first;
  if (first.value !== 'alive') return ok(first.value);
  if (options.term !== false) signal(record.pid, 'SIGTERM');
  const afterTerm = await waitUntilNotAlive(record, options.graceMs ?? 10_000, pollMs);
  if (!afterTerm.ok) return afterTerm;
  if (afterTerm.value === 'alive') {
    signal(record.pid, 'SIGKILL');
    const afterKill = await waitUntilNotAlive(record, options.killWaitMs ?? 5_000, pollMs);
    if (!afterKill.ok) return afterKill;
    if (afterKill.value === 'alive') {
      return err('E_PROC', `process ${record.pid} survived SIGKILL`, { pid: record.pid });
    }
  }
  return ok('stopped');
}

// One petreld per state directory: an exclusive flock(2) on the directory itself, held for as
// long as petreld lives, so taking it writes nothing there (a full disk cannot stop a start) and
// a petreld killed by SIGKILL gives it back with its last descriptor. Who holds it is said by
// `<run-dir>/petreld.pid` (pid and start time, as tender PID records do).

import { spawnSync } from 'node:child_process';
import {
  closeSync,
  constants,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  renameSync,
  writeSync,
} from 'node:fs';
import path from 'node:path';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import { type FileError, ioError, makePrivateDirs, temporaryName, unlinkIfPresentSync } from './files.js';
import { checkPidRecord, type PidRecordError, processStartTime } from './pidrecord.js';

/** The lock file earlier Petrel versions wrote in the state directory (still honoured if live). */
export const LEGACY_LOCK_FILE = 'petreld.lock';
/** `<run-dir>/petreld.pid`: the petreld holding the lock of the state directory it serves. */
export const PID_FILE = 'petreld.pid';
/** flock(1)'s exit status when the lock is held elsewhere (`--conflict-exit-code`). */
const HELD = 75;

export interface StateLock {
  /** Gives the lock back and removes the pid file if it is still this process's. */
  release(): Promise<void>;
}

export type LockError = FileError | PidRecordError | PetrelError<'E_STATE_LOCKED'>;

/** A pid file's (or the legacy lock file's) live process, or null. */
function liveHolder(file: string): Result<number | null, LockError> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'ENOENT') return ok(null);
    return { ok: false, error: ioError('read', file, cause) };
  }
  const match = /^(\d{1,10}) (\d{1,20})\n$/u.exec(text);
  if (match === null) return ok(null);
  const pid = Number(match[1]);
  const alive = checkPidRecord({ pid, startTime: match[2] as string });
  if (!alive.ok) return alive;
  return ok(alive.value === 'alive' ? pid : null);
}

/**
 * The process that holds the flock of `dir`, found in /proc: a descriptor of it on the directory
 * whose fdinfo shows an FLOCK (the lock's own pid is flock(1)'s, gone). Only for a refusal's
 * message (a process of another user may not be readable): null when not found.
 */
function flockHolder(dir: string): number | null {
  let real: string;
  try {
    real = realpathSync(dir);
  } catch {
    return null;
  }
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/u.test(entry) || Number(entry) === process.pid) continue;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${entry}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        if (readlinkSync(`/proc/${entry}/fd/${fd}`) !== real) continue;
        if (/^lock:.*\bFLOCK\b.*\bWRITE\b/mu.test(readFileSync(`/proc/${entry}/fdinfo/${fd}`, 'utf8')))
          return Number(entry);
      } catch {
        // gone meanwhile
      }
    }
  }
  return null;
}

/**
 * flock(LOCK_EX | LOCK_NB) on the open directory `fd`, made by util-linux's flock(1) on the
 * descriptor it inherits: a lock belongs to the open file description, which this process keeps,
 * so it holds after flock(1) exits. Node has no flock of its own. True when taken.
 */
function flockDirectory(fd: number, dir: string): Result<boolean, FileError> {
  const run = spawnSync('flock', ['--nonblock', '--conflict-exit-code', String(HELD), '3'], {
    stdio: ['ignore', 'ignore', 'pipe', fd],
    encoding: 'utf8',
  });
  if (run.status === 0) return ok(true);
  if (run.status === HELD) return ok(false);
  const why = run.error?.message ?? (run.stderr.trim() || `flock exited ${run.status ?? run.signal}`);
  return { ok: false, error: ioError('flock', dir, new Error(why)) };
}

/**
 * Takes the lock of `stateDir` (created 0700 if missing) for this process and records the pid
 * in `runDir` (created 0700 if missing), or says who holds it. Writes nothing to `stateDir`.
 */
export async function lockStateDir(stateDir: string, runDir: string): Promise<Result<StateLock, LockError>> {
  const dirs = await makePrivateDirs(stateDir, runDir);
  if (!dirs.ok) return dirs;
  const pidFile = path.join(runDir, PID_FILE);
  const refuse = (pid: number | null): Result<never, LockError> =>
    err(
      'E_STATE_LOCKED',
      `${pid === null ? 'another petreld' : `petreld ${pid}`} is using ${stateDir}; stop it first`,
      { pid },
    );
  // A petreld of an earlier version, which wrote its lock into the state directory.
  const legacy = liveHolder(path.join(stateDir, LEGACY_LOCK_FILE));
  if (!legacy.ok) return legacy;
  if (legacy.value !== null && legacy.value !== process.pid) return refuse(legacy.value);

  let fd: number;
  try {
    // libuv opens with O_CLOEXEC: no tender or holder petreld spawns inherits the lock.
    fd = openSync(stateDir, constants.O_RDONLY | constants.O_DIRECTORY);
  } catch (cause) {
    return { ok: false, error: ioError('open', stateDir, cause) };
  }
  const taken = flockDirectory(fd, stateDir);
  if (!taken.ok || !taken.value) {
    closeSync(fd);
    if (!taken.ok) return taken;
    const holder = liveHolder(pidFile);
    return refuse((holder.ok ? holder.value : null) ?? flockHolder(stateDir));
  }
  const start = processStartTime(process.pid);
  if (!start.ok) {
    closeSync(fd);
    return start;
  }
  const mine = `${process.pid} ${start.value}\n`;
  // Only informative (a refusal finds the holder in /proc too): a full run directory that
  // cannot take it does not stop a start.
  writePidFile(pidFile, mine);
  let held = true;
  return ok({
    async release() {
      if (!held) return;
      held = false;
      try {
        if (readFileSync(pidFile, 'utf8') === mine) unlinkIfPresentSync(pidFile);
      } catch {
        // gone already, or the run directory with it
      }
      closeSync(fd);
    },
  });
}

/** The pid file, replaced whole (a few bytes in the run directory: no fsync, see pidrecord.ts). */
function writePidFile(file: string, text: string): Result<void, FileError> {
  const temp = temporaryName(file);
  try {
    mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    const fd = openSync(
      temp,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      0o644,
    );
    try {
      writeSync(fd, text);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, file);
    return ok(undefined);
  } catch (cause) {
    try {
      unlinkIfPresentSync(temp);
    } catch {
      // removed with the run directory's temporaries at the next start
    }
    return { ok: false, error: ioError('write', file, cause) };
  }
}

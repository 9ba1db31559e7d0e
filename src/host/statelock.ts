// One petreld per state directory: `<state-dir>/petreld.lock` names the petreld using it (pid
// and start time, as tender PID records do), so a second daemon — or an import, or an export —
// never writes beside a running one. A lock whose process is gone is stale and taken over.

import { constants, mkdir, open, readFile, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import { type FileError, ioError, temporaryName } from './files.js';
import { checkPidRecord, type PidRecordError, processStartTime } from './pidrecord.js';

export const LOCK_FILE = 'petreld.lock';

export interface StateLock {
  /** Removes the lock if it is still this process's. */
  release(): Promise<void>;
}

export type LockError = FileError | PidRecordError | PetrelError<'E_STATE_LOCKED'>;

/** The petreld holding the lock of `stateDir`, or null when none runs. */
export async function lockHolder(stateDir: string): Promise<Result<number | null, LockError>> {
  const file = path.join(stateDir, LOCK_FILE);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
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

/** Takes the lock of `stateDir` (created 0700 if missing) for this process, or says who holds it. */
export async function lockStateDir(stateDir: string): Promise<Result<StateLock, LockError>> {
  const file = path.join(stateDir, LOCK_FILE);
  try {
    await mkdir(stateDir, { recursive: true, mode: 0o700 });
  } catch (cause) {
    return { ok: false, error: ioError('mkdir', stateDir, cause) };
  }
  const start = processStartTime(process.pid);
  if (!start.ok) return start;
  const mine = `${process.pid} ${start.value}\n`;
  const holder = await lockHolder(stateDir);
  if (!holder.ok) return holder;
  if (holder.value !== null) {
    return err('E_STATE_LOCKED', `petreld ${holder.value} is using ${stateDir} (${file}); stop it first`, {
      pid: holder.value,
    });
  }
  // A stale lock (or none) is replaced whole; two starting at once both rename, and the one
  // whose content is not there afterwards gives way.
  const temp = temporaryName(file);
  try {
    const handle = await open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
    try {
      await handle.write(mine);
    } finally {
      await handle.close();
    }
    await rename(temp, file);
    if ((await readFile(file, 'utf8')) !== mine) {
      const other = await lockHolder(stateDir);
      const pid = other.ok ? other.value : null;
      return err('E_STATE_LOCKED', `petreld ${pid ?? '(starting)'} is using ${stateDir}; stop it first`, {
        pid,
      });
    }
  } catch (cause) {
    await unlink(temp).catch(() => undefined);
    return { ok: false, error: ioError('lock', file, cause) };
  }
  return ok({
    async release() {
      const now = await readFile(file, 'utf8').catch(() => null);
      if (now === mine) await unlink(file).catch(() => undefined);
    },
  });
}

// Preflight checks of petreld's own directories: the state and run directories (owned, real,
// writable), their free space, and socket paths that fit a unix socket address.

import { lstat, mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileSystemFree, isNoSpace, RUN_DIR_NEEDED } from '../host/space.js';
import { type PetrelConfig, socketPaths } from './config.js';
import { failed, type Outcome, passed } from './preflight-result.js';

/** sun_path holds 108 bytes including the terminating NUL. */
export const SUN_PATH_MAX = 107;

/** Owned by us, a real directory (not a symlink), writable; created 0700 when missing. */
export async function checkDirectory(key: 'stateDir' | 'runDir', dir: string, uid: number): Promise<Outcome> {
  const flag = `--${key === 'stateDir' ? 'state-dir' : 'run-dir'}`;
  let created = false;
  let st = await lstat(dir).catch((error: NodeJS.ErrnoException) => error);
  if (st instanceof Error && st.code === 'ENOENT') {
    try {
      await mkdir(dir, { recursive: true, mode: 0o700 });
      created = true;
    } catch (error) {
      return failed(
        `${dir} cannot be created: ${(error as Error).message}`,
        `create it or choose another ${flag}`,
      );
    }
    st = await lstat(dir).catch((error: NodeJS.ErrnoException) => error);
  }
  if (st instanceof Error) return failed(`${dir}: ${st.message}`, `choose another ${flag}`);
  if (st.isSymbolicLink()) return failed(`${dir} is a symbolic link`, `give the real directory as ${flag}`);
  if (!st.isDirectory()) return failed(`${dir} is not a directory`, `choose another ${flag}`);
  if (st.uid !== uid) {
    return failed(`${dir} is owned by uid ${st.uid}, petreld runs as uid ${uid}`, `chown ${uid} ${dir}`);
  }
  // Really write a file: root passes every permission check, but not a read-only mount or a full
  // file system (no inodes left).
  const probe = path.join(dir, `.petrel-preflight-${process.pid}`);
  let full = false;
  try {
    await writeFile(probe, '', { mode: 0o600 });
  } catch (error) {
    // Writable but full: petreld starts all the same, to free space as it is asked; the free-space check says it.
    if (isNoSpace(error)) full = true;
    else
      return failed(
        `${dir} is not writable: ${(error as Error).message}`,
        `make it writable or choose another ${flag}`,
      );
  } finally {
    await rm(probe, { force: true });
  }
  return passed(
    `${dir}${created ? ' created (mode 0700),' : ''} owned by uid ${uid}, writable${full ? ' (but full)' : ''}`,
  );
}

/** The state directory's free space against `stateMinFree`: a WARN below it, never fatal. */
export async function checkStateFree(config: PetrelConfig): Promise<Outcome> {
  const free = await fileSystemFree(config.stateDir).catch(() => null);
  if (free === null) return passed('free space not known');
  if (free >= config.stateMinFree) return passed(`${free} bytes free in ${config.stateDir}`);
  return failed(
    `${free} bytes free in ${config.stateDir}, below stateMinFree (${config.stateMinFree}): creates and block devices are refused`,
    'free space in the state directory (destroy unikernels, remove block devices) or give it a larger file system',
  );
}

/**
 * The run directory's free space: a WARN, never fatal, when a create could not have
 * its FIFO and PID record there, so petreld still starts and serves the guests it adopts.
 */
export async function checkRunFree(config: PetrelConfig): Promise<Outcome> {
  const free = await fileSystemFree(config.runDir).catch(() => null);
  if (free === null) return passed('free space not known');
  if (free >= RUN_DIR_NEEDED) return passed(`${free} bytes free in ${config.runDir}`);
  return failed(
    `${free} bytes free in the run directory ${config.runDir}, ${RUN_DIR_NEEDED} needed for a create: ` +
      'creates are refused, the boot canary is not run, node.json and PID records may not be written',
    'free space in the run directory (or give it a larger file system)',
  );
}

export function checkSockets(runDir: string): Outcome {
  const longest = socketPaths(runDir).reduce((a, b) => (Buffer.byteLength(b) > Buffer.byteLength(a) ? b : a));
  const bytes = Buffer.byteLength(longest);
  if (bytes > SUN_PATH_MAX) {
    return failed(
      `${longest} is ${bytes} bytes, a unix socket path may have at most ${SUN_PATH_MAX}`,
      'choose a shorter --run-dir',
    );
  }
  return passed(`longest socket path ${longest} is ${bytes} bytes (at most ${SUN_PATH_MAX})`);
}

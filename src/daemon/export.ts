// `petreld export-state FILE`: Petrel's state as an Albatross State [6] file with every image
// embedded (petrel-differences.md (j)), offline: it takes the state directory's lock, so it
// never reads beside a running petreld (whose next write could race it).

import type { Logger } from 'pino';
import { exportAlbatrossState } from '../engine/albatross.js';
import { createHost } from '../engine/host.js';
import { StateBook } from '../engine/state-book.js';
import { lockStateDir } from '../host/statelock.js';
import { err, type PetrelError, type Result } from '../resources/errors.js';
import type { PetrelConfig } from './config.js';

export async function exportState(
  config: PetrelConfig,
  out: string,
  log: Logger,
): Promise<Result<{ readonly unikernels: number; readonly bytes: number }, PetrelError>> {
  const lock = await lockStateDir(config.stateDir, config.runDir);
  if (!lock.ok) return lock;
  try {
    const host = createHost({
      runDir: config.runDir,
      stateDir: config.stateDir,
      tapPrefix: config.tapPrefix,
      stopTimeoutMs: config.stopTimeout,
    });
    const book = new StateBook(host, log);
    const loaded = await book.load();
    if (!loaded.ok) return loaded;
    if (!loaded.value.found)
      return err('E_STATE_EXPORT', `no Petrel state in ${config.stateDir} (petreld has not run there)`);
    return await exportAlbatrossState(host, loaded.value.state, out);
  } finally {
    await lock.value.release();
  }
}

// Where petreld puts what its clients look for: the default run directory and the names of the
// three local sockets under `<run-dir>/util/`. Constants only, so the client loads no daemon code.

/** petreld's default run directory (its `runDir`). */
export const DEFAULT_RUN_DIR = '/run/petrel';

/** The socket files under `<run-dir>/util` (petrel-differences.md (f), (h)). */
export const SOCKET_NAMES = Object.freeze({
  engine: 'vmmd.sock',
  console: 'console.sock',
  stats: 'stat.sock',
} as const);

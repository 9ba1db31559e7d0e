// The paths of petreld's three local sockets under a run directory, which the preflight checks
// fit a unix socket address.

import path from 'node:path';
import { SOCKET_NAMES as SOCKETS } from './layout.js';

/** The socket files under `<run-dir>/util` (petrel-differences (f), (h)). */
export const SOCKET_NAMES = Object.freeze([SOCKETS.engine, SOCKETS.console, SOCKETS.stats] as const);

export function socketPaths(runDir: string): readonly string[] {
  return SOCKET_NAMES.map((name) => path.join(runDir, 'util', name));
}

// Where the endpoint finds petreld's sockets and its default limits: what `petreld tls-endpoint`'s
// flags need, in a module light enough to load before anyone knows whether TLS will run.

import { join } from 'node:path';
import { DEFAULT_MAX_FRAME } from '../wire/framing.js';

export interface SocketPaths {
  readonly vmmd: string;
  readonly console: string;
  readonly stats: string;
}

/** `<run-dir>/util/vmmd.sock`, `console.sock`, `stat.sock`, as Albatross names them. */
export function socketPaths(runDir: string): SocketPaths {
  const util = join(runDir, 'util');
  return {
    vmmd: join(util, 'vmmd.sock'),
    console: join(util, 'console.sock'),
    stats: join(util, 'stat.sock'),
  };
}

export const TLS_DEFAULTS = {
  host: '::',
  port: 1025,
  maxFrameBytes: DEFAULT_MAX_FRAME,
  maxPendingHandshakes: 64,
  handshakeTimeoutMs: 10_000,
} as const;

// Where a `petrel` command goes: the connection flags every subcommand shares, turned into a
// Transport — local sockets (--run-dir, --socket) or a remote petreld (--remote, via src/tls).

import path from 'node:path';
import { DEFAULT_RUN_DIR, SOCKET_NAMES } from '../../daemon/layout.js';
import type { Result } from '../../resources/errors.js';
import { CONNECTION_OPTIONS } from '../options.js';
import {
  createLocalTransport,
  type TransferMeter,
  type Transport,
  type TransportError,
} from './transport.js';

/** Albatross' TLS port (semantics §17). */
export const DEFAULT_REMOTE_PORT = 1025;

export { CONNECTION_OPTIONS };

export const CONNECTION_HELP = `connection, before or after the command
(default: petreld's sockets under ${DEFAULT_RUN_DIR}/util/):
  --run-dir DIR       petreld's run directory; commands go to DIR/util/vmmd.sock,
                      console.sock or stat.sock as Albatross clients do
  --socket PATH       send the command to this one socket instead
  --remote HOST:PORT  a remote petreld over mutual TLS (port default ${DEFAULT_REMOTE_PORT}), with
    --ca FILE         the CA certificate that signed petreld's server certificate
    --cert FILE       your delegated CA certificate chain (from 'petrel ca delegate')
    --key FILE        its private key; every command travels in a short-lived leaf
                      certificate signed with it
`;

/**
 * What the remote transport needs. It is built by `createRemoteTransport` in src/tls/client.ts
 * (the TLS client), loaded only when --remote is given.
 */
export interface RemoteOptions {
  readonly host: string;
  readonly port: number;
  /** Trust anchor for the server's certificate (PEM file). */
  readonly ca: string;
  /** The delegated CA certificate chain that signs the command leaf (PEM file). */
  readonly cert: string;
  /** Its private key (PEM file). */
  readonly key: string;
}

export interface ConnectionFlags {
  readonly 'run-dir'?: string | undefined;
  readonly socket?: string | undefined;
  readonly remote?: string | undefined;
  readonly ca?: string | undefined;
  readonly cert?: string | undefined;
  readonly key?: string | undefined;
}

export type Target =
  | { readonly kind: 'local'; readonly runDir: string; readonly socket: string | null }
  | { readonly kind: 'remote'; readonly options: RemoteOptions };

/** Checks the connection flags (before anything is read or sent); the error is a usage text. */
export function parseTarget(flags: ConnectionFlags): Result<Target, string> {
  const tls = (['ca', 'cert', 'key'] as const).filter((f) => flags[f] !== undefined);
  if (flags.remote === undefined) {
    if (tls.length > 0) return { ok: false, error: `--${tls[0]} is for --remote` };
    if (flags.socket === '') return { ok: false, error: '--socket needs a PATH' };
    return {
      ok: true,
      value: { kind: 'local', runDir: flags['run-dir'] ?? DEFAULT_RUN_DIR, socket: flags.socket ?? null },
    };
  }
  if (flags.socket !== undefined || flags['run-dir'] !== undefined) {
    return { ok: false, error: '--remote cannot be combined with --socket or --run-dir' };
  }
  const address = parseAddress(flags.remote);
  if (address === null) return { ok: false, error: `--remote ${flags.remote}: expected HOST:PORT` };
  const { ca, cert, key } = flags;
  if (ca === undefined || cert === undefined || key === undefined) {
    return { ok: false, error: '--remote needs --ca FILE, --cert FILE and --key FILE' };
  }
  return { ok: true, value: { kind: 'remote', options: { ...address, ca, cert, key } } };
}

/** `host`, `host:port`, `[v6]` or `[v6]:port`. */
function parseAddress(text: string): { host: string; port: number } | null {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]\s]+))(?::(\d{1,5}))?$/u.exec(text);
  if (match === null) return null;
  const port = match[3] === undefined ? DEFAULT_REMOTE_PORT : Number(match[3]);
  if (port < 1 || port > 65_535) return null;
  return { host: (match[1] ?? match[2]) as string, port };
}

/** The transport to `target`; `meter` hears of the bytes every exchange moves. */
export async function openTarget(
  target: Target,
  meter?: TransferMeter,
): Promise<Result<Transport, TransportError>> {
  if (target.kind === 'local') {
    const at = (file: string) => target.socket ?? path.join(target.runDir, 'util', file);
    const sockets = {
      engine: at(SOCKET_NAMES.engine),
      console: at(SOCKET_NAMES.console),
      stats: at(SOCKET_NAMES.stats),
    };
    return { ok: true, value: createLocalTransport(sockets, meter === undefined ? {} : { meter }) };
  }
  // Loaded for --remote only: the TLS client brings the certificate and signing code along.
  const { createRemoteTransport } = await import('../../tls/client.js');
  const options = meter === undefined ? target.options : { ...target.options, meter };
  return { ok: true, value: createRemoteTransport(options) };
}

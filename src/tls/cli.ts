// What `petreld tls-endpoint --run-dir DIR ...` needs: its flags (Albatross' `CA CERT KEY`
// positionals accepted too), loading the files, and running the endpoint until a signal.

import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import type { Logger } from 'pino';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import type { TlsEndpointOptions } from './endpoint.js';
import { describeError } from './errors.js';
import {
  ADMISSION_DEFAULTS as A,
  type AdmissionSettings,
  SESSION_DEFAULTS,
  socketPaths,
  TLS_DEFAULTS,
} from './settings.js';

export const TLS_ENDPOINT_USAGE = `usage: petreld tls-endpoint [--run-dir DIR] --ca FILE --cert FILE --key FILE
                            [--ip ADDR] [--port N] [--max-frame-bytes N]
                            [admission options]
       petreld tls-endpoint [options] CA CERT KEY

Serves remote clients over mutual TLS 1.3 and carries each request, as frames, to petreld's
sockets under DIR/util/ (vmmd.sock, console.sock, stat.sock). Needs nothing but those sockets
and its key material, so it can run as its own unprivileged user.

  --run-dir DIR                 petreld's run directory (default /run/petrel)
  --ca FILE                     the one CA certificate client chains must lead to
  --cert FILE, --key FILE       the server certificate (PEM chain) and its key
  --ip ADDR                     address to listen on (default :: , dual stack)
  --port N                      TCP port (default 1025)
  --max-frame-bytes N           largest frame or streamed image (default 67108864)

The web API (docs/web.md) in the same process, beside the endpoint, when --web-port is given:
  --web-port N                  its HTTPS port (on --ip)
  --web-cert FILE, --web-key FILE  the certificate browsers are shown (petrel ca web-cert)
  --state-dir DIR               where web-deny-list is read and web-token-usage.json written
                                (default /var/lib/petrel, petreld's, which only root may enter:
                                an unprivileged endpoint needs a directory of its own, given to
                                petrel ca revoke --state-dir as well)

Admission of unauthenticated peers (docs/operations.md, the keys of the same names):
  --max-pending-connections N          (default 1024)
  --max-pending-per-address N          (default 64)
  --max-pending-bytes BYTES            (default 67108864)
  --max-pending-bytes-per-address BYTES (default 33554432)
  --first-byte-timeout SECONDS         (default 5)
  --client-hello-timeout SECONDS       (default 10)
  --min-handshake-rate BYTES           per second (default 4096)
  --handshake-stall-timeout SECONDS    (default 10)
  --max-connections-per-identity N     (default 64)
  --frame-stall-timeout SECONDS        (default 30)

Every minute it logs its admission counters (event admission.counters) when they changed.
`;

export interface TlsEndpointArgs {
  readonly runDir: string;
  readonly ca: string;
  readonly cert: string;
  readonly key: string;
  readonly host: string;
  readonly port: number;
  readonly maxFrameBytes: number;
  readonly admission: AdmissionSettings;
  readonly maxConnectionsPerIdentity: number;
  readonly frameStallTimeoutMs: number;
  /** The web API beside the endpoint (`--web-port`), or null. */
  readonly web: {
    readonly port: number;
    readonly cert: string;
    readonly key: string;
    readonly stateDir: string;
  } | null;
}

type UsageError = PetrelError<'E_TLS_USAGE'>;

const OPTIONS = {
  'run-dir': { type: 'string', default: '/run/petrel' },
  ca: { type: 'string' },
  cert: { type: 'string' },
  key: { type: 'string' },
  ip: { type: 'string', default: TLS_DEFAULTS.host },
  port: { type: 'string' },
  'max-frame-bytes': { type: 'string' },
  'max-pending-connections': { type: 'string' },
  'max-pending-per-address': { type: 'string' },
  'max-pending-bytes': { type: 'string' },
  'max-pending-bytes-per-address': { type: 'string' },
  'first-byte-timeout': { type: 'string' },
  'client-hello-timeout': { type: 'string' },
  'min-handshake-rate': { type: 'string' },
  'handshake-stall-timeout': { type: 'string' },
  'max-connections-per-identity': { type: 'string' },
  'frame-stall-timeout': { type: 'string' },
  'web-port': { type: 'string' },
  'web-cert': { type: 'string' },
  'web-key': { type: 'string' },
  'state-dir': { type: 'string', default: '/var/lib/petrel' },
} as const;

export function parseTlsEndpointArgs(args: readonly string[]): Result<TlsEndpointArgs, UsageError> {
  let parsed: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>;
  try {
    parsed = parseArgs({ args: [...args], options: OPTIONS, allowPositionals: true });
  } catch (e) {
    return err('E_TLS_USAGE', describeError(e));
  }
  const { values, positionals } = parsed;
  if (positionals.length !== 0 && positionals.length !== 3) {
    return err('E_TLS_USAGE', 'give CA CERT KEY as three arguments or as --ca, --cert and --key');
  }
  const [ca, cert, key] = positionals.length === 3 ? positionals : [values.ca, values.cert, values.key];
  if (ca === undefined || cert === undefined || key === undefined) {
    return err('E_TLS_USAGE', '--ca, --cert and --key are required');
  }
  const numbers: Record<string, number> = {};
  const limits = {
    port: [values.port, TLS_DEFAULTS.port, 0, 65535],
    'max-frame-bytes': [values['max-frame-bytes'], TLS_DEFAULTS.maxFrameBytes, 1, 2 ** 31 - 1],
    'max-pending-connections': [values['max-pending-connections'], A.maxPendingConnections, 1, 1e6],
    'max-pending-per-address': [values['max-pending-per-address'], A.maxPendingPerAddress, 1, 1e6],
    'max-pending-bytes': [values['max-pending-bytes'], A.maxPendingBytes, 1, 2 ** 31 - 1],
    'max-pending-bytes-per-address': [
      values['max-pending-bytes-per-address'],
      A.maxPendingBytesPerAddress,
      1,
      2 ** 31 - 1,
    ],
    'first-byte-timeout': [values['first-byte-timeout'], A.firstByteTimeoutMs / 1000, 1, 3600],
    'client-hello-timeout': [values['client-hello-timeout'], A.clientHelloTimeoutMs / 1000, 1, 3600],
    'min-handshake-rate': [values['min-handshake-rate'], A.minHandshakeRate, 1, 2 ** 31 - 1],
    'handshake-stall-timeout': [values['handshake-stall-timeout'], A.handshakeStallMs / 1000, 1, 3600],
    'max-connections-per-identity': [
      values['max-connections-per-identity'],
      SESSION_DEFAULTS.maxConnectionsPerIdentity,
      1,
      1e6,
    ],
    'frame-stall-timeout': [
      values['frame-stall-timeout'],
      SESSION_DEFAULTS.frameStallTimeoutMs / 1000,
      1,
      86400,
    ],
  } as const;
  for (const [flag, [text, fallback, min, max]] of Object.entries(limits)) {
    const n = text === undefined ? fallback : Number(text);
    if (!Number.isInteger(n) || n < min || n > max) {
      return err('E_TLS_USAGE', `--${flag} must be an integer from ${min} to ${max}, not '${text}'`);
    }
    numbers[flag] = n;
  }
  const n = (flag: string): number => numbers[flag] as number;
  let web: TlsEndpointArgs['web'] = null;
  const webPort = values['web-port'];
  if (webPort !== undefined || values['web-cert'] !== undefined || values['web-key'] !== undefined) {
    const port = Number(webPort);
    if (webPort === undefined || !Number.isInteger(port) || port < 0 || port > 65535) {
      return err('E_TLS_USAGE', `--web-port must be an integer from 0 to 65535, not '${webPort}'`);
    }
    if (values['web-cert'] === undefined || values['web-key'] === undefined) {
      return err('E_TLS_USAGE', '--web-port needs --web-cert and --web-key');
    }
    web = { port, cert: values['web-cert'], key: values['web-key'], stateDir: values['state-dir'] };
  }
  return ok({
    runDir: values['run-dir'],
    ca,
    cert,
    key,
    host: values.ip,
    port: numbers.port as number,
    maxFrameBytes: numbers['max-frame-bytes'] as number,
    admission: {
      maxPendingConnections: n('max-pending-connections'),
      maxPendingPerAddress: n('max-pending-per-address'),
      maxPendingBytes: n('max-pending-bytes'),
      maxPendingBytesPerAddress: n('max-pending-bytes-per-address'),
      firstByteTimeoutMs: n('first-byte-timeout') * 1000,
      clientHelloTimeoutMs: n('client-hello-timeout') * 1000,
      minHandshakeRate: n('min-handshake-rate'),
      handshakeStallMs: n('handshake-stall-timeout') * 1000,
    },
    maxConnectionsPerIdentity: n('max-connections-per-identity'),
    frameStallTimeoutMs: n('frame-stall-timeout') * 1000,
    web,
  });
}

/** What runs beside the endpoint in its process (the web API): started after it, closed before. */
export type Beside = (
  args: TlsEndpointArgs,
  logger: Logger | undefined,
) => Promise<Result<{ close(): Promise<void> } | null, PetrelError>>;

/** Reads the CA, certificate and key files into endpoint options. */
export async function loadTlsEndpointOptions(
  args: TlsEndpointArgs,
  logger?: Logger,
): Promise<Result<TlsEndpointOptions, PetrelError>> {
  const files: string[] = [];
  for (const file of [args.ca, args.cert, args.key]) {
    try {
      files.push(await readFile(file, 'utf8'));
    } catch (e) {
      return err('E_TLS_USAGE', `cannot read ${file}: ${describeError(e)}`);
    }
  }
  const [ca, cert, key] = files as [string, string, string];
  return ok({
    ca,
    cert,
    key,
    sockets: socketPaths(args.runDir),
    host: args.host,
    port: args.port,
    maxFrameBytes: args.maxFrameBytes,
    admission: args.admission,
    maxConnectionsPerIdentity: args.maxConnectionsPerIdentity,
    frameStallTimeoutMs: args.frameStallTimeoutMs,
    // Its own process has no /metrics: the admission counters go to the log instead.
    logCountersEveryMs: 60_000,
    ...(logger === undefined ? {} : { logger }),
  });
}

/**
 * Runs the endpoint until `signal` aborts (the caller wires SIGTERM/SIGINT to it); resolves
 * with an exit code: 0 after a clean stop, 1 when it could not start, 2 on a usage error.
 */
export async function runTlsEndpoint(
  args: readonly string[],
  options: {
    readonly logger?: Logger;
    readonly signal: AbortSignal;
    readonly stderr: (text: string) => void;
    /** Started once the endpoint listens (daemon/tls-endpoint.ts passes the web API here). */
    readonly beside?: Beside;
  },
): Promise<number> {
  const parsed = parseTlsEndpointArgs(args);
  if (!parsed.ok) {
    options.stderr(`petreld tls-endpoint: ${parsed.error.message}\n\n${TLS_ENDPOINT_USAGE}`);
    return 2;
  }
  const loaded = await loadTlsEndpointOptions(parsed.value, options.logger);
  if (!loaded.ok) {
    options.stderr(`petreld tls-endpoint: ${loaded.error.message}\n`);
    return 1;
  }
  // Loaded only now: `petreld` imports this module for every start, TLS or not.
  const { createTlsEndpoint } = await import('./endpoint.js');
  const endpoint = createTlsEndpoint(loaded.value);
  if (!endpoint.ok) {
    options.stderr(`petreld tls-endpoint: ${endpoint.error.message}\n`);
    return 1;
  }
  try {
    await endpoint.value.listen();
  } catch (e) {
    options.stderr(`petreld tls-endpoint: cannot listen: ${describeError(e)}\n`);
    return 1;
  }
  const beside = (await options.beside?.(parsed.value, options.logger)) ?? ok(null);
  if (!beside.ok) {
    options.stderr(`petreld tls-endpoint: ${beside.error.message}\n`);
    await endpoint.value.close();
    return 1;
  }
  if (!options.signal.aborted) {
    await new Promise((resolve) => options.signal.addEventListener('abort', resolve, { once: true }));
  }
  await beside.value?.close();
  await endpoint.value.close();
  return 0;
}

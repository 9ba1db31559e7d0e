// `petreld tls-endpoint`, composed: the mutual-TLS endpoint as its own process (tls/cli.ts) and,
// with --web-port, the web API beside it, both reaching petreld through the run directory's sockets.

import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { err, ok } from '../resources/errors.js';
import { type Beside, runTlsEndpoint } from '../tls/cli.js';
import { socketPaths } from '../tls/settings.js';

/**
 * Runs the endpoint, and the web API when its flags ask for it, until `options.signal` aborts;
 * resolves with runTlsEndpoint's exit code.
 */
export function runSeparateTlsEndpoint(
  args: readonly string[],
  options: Omit<Parameters<typeof runTlsEndpoint>[1], 'beside'>,
): Promise<number> {
  return runTlsEndpoint(args, { ...options, beside: webBeside });
}

/**
 * The web API beside the separate endpoint (`--web-port`): the same listener petreld hosts
 * with webListen, reaching petreld through the run directory's sockets; loaded only when asked.
 */
const webBeside: Beside = async (args, logger) => {
  if (args.web === null) return ok(null);
  const files: Buffer[] = [];
  for (const file of [args.ca, args.web.cert, args.web.key]) {
    try {
      files.push(await readFile(file));
    } catch (e) {
      return err('E_TLS_USAGE', `cannot read ${file}: ${(e as Error).message}`);
    }
  }
  const [ca, cert, key] = files as [Buffer, Buffer, Buffer];
  const { createWebServer } = await import('../web/server.js');
  const { DENY_LIST_FILE } = await import('../tls/token.js');
  const { USAGE_FILE } = await import('../tls/token-usage.js');
  const web = createWebServer({
    ca,
    cert,
    key,
    sockets: socketPaths(args.runDir),
    denyList: path.join(args.web.stateDir, DENY_LIST_FILE),
    usage: path.join(args.web.stateDir, USAGE_FILE),
    host: args.host,
    port: args.web.port,
    maxFrameBytes: args.maxFrameBytes,
    maxConnectionsPerIdentity: args.maxConnectionsPerIdentity,
    frameStallTimeoutMs: args.frameStallTimeoutMs,
    admission: args.admission,
    ...(logger === undefined ? {} : { logger }),
  });
  if (!web.ok) return web;
  try {
    await web.value.listen();
  } catch (e) {
    return err('E_TLS_USAGE', `the web API cannot listen: ${(e as Error).message}`);
  }
  return ok(web.value);
};

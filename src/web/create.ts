// The web API's create: the configuration from query parameters named as `petrel create`'s
// flags (src/wire/config-flags.ts, the same defaults and texts), the image as the raw request
// body, streamed to petreld in chunks (never held whole). Pure.

import { ok, type Result } from '../resources/errors.js';
import { type ConfigFlags, readConfigFlags } from '../wire/config-flags.js';
import { solo5Config } from '../wire/shapes.js';
import type { Command } from '../wire/types.js';
import { type ApiResponse, apiError, EXIT } from './api.js';

/** Query parameters that may repeat, as the flags do. */
const LISTS = new Set(['cpu', 'net', 'block', 'arg', 'exit-code']);
const SINGLE = new Set(['mem', 'cpus', 'startup']);
const SWITCHES = new Set(['restart-on-fail', 'no-add-name', 'force']);

const queryError = (message: string): ApiResponse => apiError(400, 'E_WEB_QUERY', message, EXIT.usage);

/** `true`, `false`, or present without a value (`?force`) for true. */
function readSwitch(name: string, values: readonly string[]): Result<boolean, ApiResponse> {
  const [value, ...more] = values;
  if (more.length > 0) return { ok: false, error: queryError(`${name} is given more than once`) };
  if (value === '' || value === 'true') return ok(true);
  if (value === 'false') return ok(false);
  return { ok: false, error: queryError(`${name} must be true or false, not ${JSON.stringify(value)}`) };
}

/**
 * The create command a query describes (`?mem=64&net=service:br0&arg=--ipv4=10.0.0.2/24&force`),
 * its image to follow in raw chunks; any parameter that is not one of create's is refused, so a
 * typo does not pass for a default.
 */
export function createCommand(query: URLSearchParams): Result<Command, ApiResponse> {
  const flags: Record<string, unknown> = {};
  let force = false;
  for (const key of new Set(query.keys())) {
    const values = query.getAll(key);
    if (LISTS.has(key)) flags[key] = values;
    else if (SINGLE.has(key)) {
      if (values.length > 1) return { ok: false, error: queryError(`${key} is given more than once`) };
      flags[key] = values[0];
    } else if (SWITCHES.has(key)) {
      const value = readSwitch(key, values);
      if (!value.ok) return value;
      if (key === 'force') force = value.value;
      else flags[key] = value.value ? true : undefined;
    } else {
      const known = [...SINGLE, ...LISTS, ...SWITCHES].join(', ');
      return {
        ok: false,
        error: queryError(`unknown parameter ${JSON.stringify(key)} (create takes ${known})`),
      };
    }
  }
  const args = readConfigFlags(flags as ConfigFlags);
  if (!args.ok) return { ok: false, error: apiError(400, 'E_WEB_CONFIG', args.error.message, EXIT.usage) };
  return ok({
    type: 'unikernel-create',
    force,
    release: '2.7',
    // An empty image: the proxy streams the body after the command, as a TLS client's chunks.
    config: solo5Config(new Uint8Array(0), args.value),
  });
}

// The web API's replace (Petrel (m)): POST /api/v1/unikernels/{name}/replace, the image as the
// raw body, the check in query parameters named as `petrel replace`'s flags (`http-check`,
// `tcp-check`, `console-line`, `within`), the new configuration as create's. Pure.

import { ok, type Result } from '../resources/errors.js';
import { livenessCheck, parseWithin } from '../resources/liveness.js';
import type { Command } from '../wire/types.js';
import { type ApiResponse, apiError, EXIT } from './api.js';
import { createCommand } from './create.js';

const CHECKS = ['http-check', 'tcp-check', 'console-line', 'within'] as const;

const refused = (message: string): { ok: false; error: ApiResponse } => ({
  ok: false,
  error: apiError(400, 'E_REPLACE_CHECK', message, EXIT.usage),
});

/**
 * The replace command a query describes: without create's configuration parameters, the new
 * image runs with the old unikernel's configuration. `force` is not taken: a replace is one.
 */
export function replaceCommand(query: URLSearchParams): Result<Command, ApiResponse> {
  const given: Partial<Record<(typeof CHECKS)[number], string>> = {};
  const rest = new URLSearchParams();
  for (const [key, value] of query) {
    if ((CHECKS as readonly string[]).includes(key)) {
      const check = key as (typeof CHECKS)[number];
      if (given[check] !== undefined) return refused(`replace: ${key} is given more than once`);
      given[check] = value;
    } else if (key === 'force') {
      return {
        ok: false,
        error: apiError(
          400,
          'E_WEB_QUERY',
          'replace takes no force parameter: it is a force-create',
          EXIT.usage,
        ),
      };
    } else rest.append(key, value);
  }
  const within = given.within === undefined ? undefined : parseWithin(given.within);
  if (within !== undefined && !within.ok) return refused(within.error.message);
  const check = livenessCheck({
    http: given['http-check'],
    tcp: given['tcp-check'],
    console: given['console-line'],
    withinMs: within?.value,
  });
  if (!check.ok)
    return refused(check.error.message.replace(/--(http-check|tcp-check|console-line|within)/gu, '$1'));
  const create = createCommand(rest);
  if (!create.ok) return create;
  if (create.value.type !== 'unikernel-create' || create.value.release !== '2.7') return create;
  return ok({
    ...create.value,
    force: true,
    check: { ...check.value, keepConfig: [...rest.keys()].length === 0 },
  });
}

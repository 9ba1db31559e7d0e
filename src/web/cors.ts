// CORS for the dashboards of the fleet's other nodes, which call this node's API with the bearer
// token (docs/web.md, every node on one page); every other origin gets no CORS header at all.

import type { IncomingMessage, ServerResponse } from 'node:http';
import { SESSION_PATH } from './front.js';
import type { RefusalLog } from './refusals.js';
import { SECURITY_HEADERS } from './respond.js';

/**
 * An `Origin` that is a fleet node's web origin is echoed, with no credentials allowed (the
 * cookie stays this node's own); any other origin gets no CORS header, so a browser keeps its
 * page from reading the answer. A preflight (OPTIONS) is answered here: true when it was.
 */
export async function answerCors(
  request: IncomingMessage,
  response: ServerResponse,
  url: URL,
  origins: () => Promise<ReadonlySet<string>>,
  refusals: RefusalLog,
): Promise<boolean> {
  const origin = request.headers.origin;
  if (origin === undefined || !url.pathname.startsWith('/api/v1/') || url.pathname === SESSION_PATH)
    return false;
  // This node's own page (browsers send Origin on its changes too): no CORS involved.
  if (origin === `https://${request.headers.host ?? ''}`) return false;
  response.setHeader('vary', 'Origin');
  const known = (await origins()).has(origin);
  if (known) response.setHeader('access-control-allow-origin', origin);
  if (request.method !== 'OPTIONS') return false;
  const allow = known
    ? {
        'access-control-allow-methods': 'GET, HEAD, PUT, POST, DELETE',
        'access-control-allow-headers': 'Authorization, Content-Type, X-CSRF-Token',
        'access-control-max-age': '600',
      }
    : {};
  if (!known) refusals.note({ code: 'E_WEB_CORS', reason: `preflight from ${origin}, not a fleet node's` });
  response.writeHead(204, { ...SECURITY_HEADERS, ...allow });
  response.end();
  request.resume();
  return true;
}

// How the web API answers: JSON with the headers every response carries, and the refusals that
// are the same wherever they are met.

import type { IncomingMessage, ServerResponse } from 'node:http';
import { type ApiResponse, apiError, EXIT } from './api.js';

/** Every response says: no scripts, no frames, no sniffing, no caching, no referrer. */
export const SECURITY_HEADERS = {
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'cache-control': 'no-store',
  'referrer-policy': 'no-referrer',
} as const;

/** `reply` as JSON; `extra` headers besides. */
export function sendJson(
  response: ServerResponse,
  reply: ApiResponse,
  extra: Record<string, string> = {},
): void {
  const body = JSON.stringify(reply.body);
  response.writeHead(reply.status, {
    ...SECURITY_HEADERS,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    ...extra,
  });
  response.end(body);
}

/** A body above maxFrameBytes: by its declared length, or once that much has arrived (null). */
export function tooLarge(
  length: number | null,
  limit: number,
  body: 'image' | 'data' = 'image',
): ApiResponse {
  const what = length === null ? `the ${body}` : `the ${body} of ${length} bytes`;
  return apiError(
    413,
    'E_WEB_TOO_LARGE',
    `${what} exceeds the limit of ${limit} bytes (maxFrameBytes)`,
    EXIT.usage,
  );
}

export function hasBody(request: IncomingMessage): boolean {
  const length = request.headers['content-length'];
  return (length !== undefined && length !== '0') || request.headers['transfer-encoding'] !== undefined;
}

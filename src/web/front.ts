// What the web listener serves a browser besides the JSON API: the dashboard's files, and
// /api/v1/session (sign in with a token into a session cookie, who am I with the CSRF token,
// sign out). Cookie requests to the API are authenticated here too (sessionToken).

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import { printPath } from '../resources/name.js';
import { MAX_TOKEN_CHARS, type VerifiedToken } from '../tls/token.js';
import type { Json } from '../wire/json.js';
import { type ApiResponse, apiError, EXIT } from './api.js';
import type { DashboardFiles } from './dashboard-files.js';
import { hasBody, sendJson } from './respond.js';
import {
  CSRF_HEADER,
  clearedCookie,
  cookieOf,
  csrfMatches,
  SAFE_METHODS,
  SESSION_COOKIE,
  type Session,
  type SessionTable,
  sessionCookie,
} from './sessions.js';

export const SESSION_PATH = '/api/v1/session';

/** What the listener lends: token checks, the failure limiter, audit and refusal lines. */
export interface FrontContext {
  /** The token verified now as a bearer token is (chain, expiry, deny-list). */
  verify(text: string): Promise<Result<VerifiedToken, PetrelError>>;
  /** Milliseconds `remote` is refused for after too many failures (0: not refused). */
  refusedFor(remote: string, now: number): number;
  failed(remote: string, now: number): void;
  refusal(fields: Record<string, unknown>): void;
  /** The dashboard's CSP now (its connect-src lists the fleet's web origins). */
  dashboardCsp(): Promise<string>;
  readonly log: Logger;
}

/** A sign-in body: the token and some JSON or form framing around it, no more. */
const MAX_SIGN_IN_BYTES = MAX_TOKEN_CHARS + 1024;

export class Front {
  readonly #context: FrontContext;
  readonly #sessions: SessionTable;
  readonly #files: DashboardFiles;

  constructor(context: FrontContext, sessions: SessionTable, files: DashboardFiles) {
    this.#context = context;
    this.#sessions = sessions;
    this.#files = files;
  }

  /** Whether the front answers `pathname` (the API's other paths are the routes'). */
  owns(pathname: string): boolean {
    return pathname === SESSION_PATH || this.#files.has(pathname);
  }

  async handle(request: IncomingMessage, response: ServerResponse, url: URL, remote: string): Promise<void> {
    const method = request.method ?? 'GET';
    if (url.pathname !== SESSION_PATH) {
      if (method !== 'GET' && method !== 'HEAD')
        return close(
          response,
          apiError(
            405,
            'E_WEB_METHOD',
            `${method} is not allowed on ${url.pathname} (allowed: GET)`,
            EXIT.usage,
          ),
        );
      const csp = await this.#context.dashboardCsp();
      if (!this.#files.send(url.pathname, response, method === 'HEAD', csp)) {
        sendJson(
          response,
          apiError(404, 'E_WEB_NOT_FOUND', 'the dashboard is not built (npm run build)', EXIT.usage),
        );
      }
      return;
    }
    switch (method) {
      case 'POST':
        return this.#signIn(request, response, remote);
      case 'GET':
        return this.#whoAmI(request, response);
      case 'DELETE':
        return this.#signOut(request, response);
      default:
        return close(
          response,
          apiError(
            405,
            'E_WEB_METHOD',
            `${method} is not allowed on ${SESSION_PATH} (allowed: POST, GET, DELETE)`,
            EXIT.usage,
          ),
        );
    }
  }

  /**
   * The token of a request's session cookie, verified again; for a change (any method but GET
   * and HEAD) only with the session's CSRF token in X-CSRF-Token. null: no session cookie.
   */
  async sessionToken(request: IncomingMessage): Promise<Result<VerifiedToken, PetrelError> | null> {
    const id = cookieOf(request.headers.cookie, SESSION_COOKIE);
    if (id === null) return null;
    const session = this.#sessions.use(id, Date.now());
    if (session === null)
      return err('E_WEB_SESSION', 'the session has ended (expired, idle or signed out): sign in again');
    const token = await this.#context.verify(session.token);
    // A token expired or revoked since sign-in ends the session with it.
    if (!token.ok) {
      if (token.error.code !== 'E_TOKEN_DENY_LIST') this.#sessions.close(session.id);
      return token;
    }
    if (!SAFE_METHODS.has(request.method ?? 'GET') && !csrfMatches(session, request.headers[CSRF_HEADER]))
      return err('E_WEB_CSRF', `a change made with a session cookie needs its CSRF token in ${CSRF_HEADER}`);
    return token;
  }

  async #signIn(request: IncomingMessage, response: ServerResponse, remote: string): Promise<void> {
    const now = Date.now();
    const wait = this.#context.refusedFor(remote, now);
    if (wait > 0) {
      const message = `too many failed authentications from ${remote}: try again in ${Math.ceil(wait / 1000)} s`;
      this.#context.refusal({ remote, code: 'E_WEB_TOO_MANY_FAILURES', reason: message });
      return close(response, apiError(429, 'E_WEB_TOO_MANY_FAILURES', message, EXIT.auth), {
        'retry-after': String(Math.ceil(wait / 1000)),
      });
    }
    const text = await readSignIn(request);
    if (!text.ok) return close(response, apiError(400, text.error.code, text.error.message, EXIT.usage));
    const token = await this.#context.verify(text.value);
    if (!token.ok) {
      if (token.error.code !== 'E_TOKEN_DENY_LIST') this.#context.failed(remote, now);
      this.#context.refusal({
        remote,
        code: token.error.code,
        reason: token.error.message,
        action: 'sign-in',
      });
      return sendJson(response, apiError(401, token.error.code, token.error.message, EXIT.auth));
    }
    const session = this.#sessions.open(text.value, token.value.expires, now);
    this.#audit(token.value, 'sign-in', 201);
    const maxAge = Math.min(token.value.expires.getTime() - now, this.#sessions.idleMs) / 1000;
    sendJson(
      response,
      { status: 201, body: describe(token.value, session, this.#sessions.idleMs) },
      {
        'set-cookie': sessionCookie(session.id, maxAge),
      },
    );
  }

  async #whoAmI(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const id = cookieOf(request.headers.cookie, SESSION_COOKIE);
    const session = id === null ? null : this.#sessions.use(id, Date.now());
    if (session === null)
      return sendJson(response, apiError(401, 'E_WEB_SESSION', 'not signed in', EXIT.auth));
    const token = await this.#context.verify(session.token);
    if (!token.ok) {
      if (token.error.code !== 'E_TOKEN_DENY_LIST') this.#sessions.close(session.id);
      return sendJson(response, apiError(401, token.error.code, token.error.message, EXIT.auth), {
        'set-cookie': clearedCookie(),
      });
    }
    sendJson(response, { status: 200, body: describe(token.value, session, this.#sessions.idleMs) });
  }

  async #signOut(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const token = await this.sessionToken(request);
    if (token === null || !token.ok) {
      const code = token === null ? 'E_WEB_SESSION' : token.error.code;
      const message = token === null ? 'not signed in' : token.error.message;
      return sendJson(response, apiError(code === 'E_WEB_CSRF' ? 403 : 401, code, message, EXIT.auth));
    }
    this.#sessions.close(cookieOf(request.headers.cookie, SESSION_COOKIE) as string);
    this.#audit(token.value, 'sign-out', 200);
    sendJson(response, { status: 200, body: { signedOut: true } }, { 'set-cookie': clearedCookie() });
  }

  #audit(token: VerifiedToken, action: string, status: number): void {
    this.#context.log.info(
      {
        event: 'web.audit',
        token: token.name,
        tokenId: token.id,
        delegation: printPath(token.path),
        action,
        status,
      },
      'web change',
    );
  }
}

function describe(token: VerifiedToken, session: Session, idleMs: number): Json {
  return {
    csrf: session.csrf,
    delegation: printPath(token.path),
    token: { name: token.name, id: token.id, expires: token.expires.toISOString() },
    idleTimeout: Math.round(idleMs / 1000),
  };
}

/** A refusal that leaves a body unread: the connection goes after it. */
function close(response: ServerResponse, reply: ApiResponse, extra: Record<string, string> = {}): void {
  sendJson(response, reply, { ...extra, connection: 'close' });
}

/** The token of a sign-in: `{"token": "ptk1.…"}` or the form field `token`, at most a few KiB. */
async function readSignIn(request: IncomingMessage): Promise<Result<string, PetrelError>> {
  if (!hasBody(request)) return err('E_WEB_BODY', 'sign in with {"token": "ptk1.…"} as the body');
  const declared = Number(request.headers['content-length'] ?? 0);
  if (declared > MAX_SIGN_IN_BYTES)
    return err('E_WEB_BODY', `a sign-in body is at most ${MAX_SIGN_IN_BYTES} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_SIGN_IN_BYTES)
      return err('E_WEB_BODY', `a sign-in body is at most ${MAX_SIGN_IN_BYTES} bytes`);
    chunks.push(chunk);
  }
  const body = Buffer.concat(chunks).toString('utf8');
  const type = String(request.headers['content-type'] ?? '').toLowerCase();
  let token: unknown;
  if (type.startsWith('application/json')) {
    try {
      token = (JSON.parse(body) as { token?: unknown } | null)?.token;
    } catch {
      return err('E_WEB_BODY', 'the sign-in body is not JSON');
    }
  } else if (type.startsWith('application/x-www-form-urlencoded')) {
    token = new URLSearchParams(body).get('token');
  } else return err('E_WEB_BODY', 'sign in with Content-Type application/json or a form');
  if (typeof token !== 'string' || token.trim() === '')
    return err('E_WEB_BODY', 'the sign-in body has no "token"');
  return ok(token.trim());
}

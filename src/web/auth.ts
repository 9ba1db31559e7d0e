// Who a web request comes from: its bearer token, or the token its session cookie stands for
// (front.ts), verified against the CA, the clock and the deny-lists; with the limits on callers.
//
// An address that failed 30 times in a minute is refused (429) without a check until the minute
// ends; one identity's requests open at once are bounded as its TLS sessions are.

import type { IncomingMessage, ServerResponse } from 'node:http';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import { FAILURE_DEFAULTS, FailureTable } from '../resources/failures.js';
import { type Path, printPath } from '../resources/name.js';
import type { TrustAnchor } from '../tls/chain.js';
import { type VerifiedToken, verifyToken } from '../tls/token.js';
import { type ApiResponse, apiError, EXIT } from './api.js';
import type { DenyList } from './deny-list.js';
import type { RefusalLog } from './refusals.js';

/** The fleet registry's deny-list (src/fleet/revocations.ts), honoured beside the file. */
export interface Revocations {
  current(): Result<ReadonlySet<string>, PetrelError>;
  stop(): Promise<void>;
}

export interface AuthOptions {
  readonly anchor: TrustAnchor;
  readonly deny: DenyList;
  readonly revocations?: Revocations | undefined;
  /** Tokens are checked against this clock. Default: the system clock. */
  readonly clock?: (() => Date) | undefined;
  readonly refusals: RefusalLog;
  /** The token of a request's session cookie, verified (front.ts); null: it has none. */
  readonly sessionToken: (request: IncomingMessage) => Promise<Result<VerifiedToken, PetrelError> | null>;
}

/** What a request is refused with, and the headers that go with it. */
export interface Refusal {
  readonly reply: ApiResponse;
  readonly headers?: Record<string, string>;
}

export class Authenticator {
  /** Failed authentications per address: past the limit, refused before any signature check. */
  readonly failures = new FailureTable();
  readonly #options: AuthOptions;

  constructor(options: AuthOptions) {
    this.#options = options;
  }

  /** A token's text against the CA, the clock and the deny-list as it is now. */
  async verify(text: string): Promise<Result<VerifiedToken, PetrelError>> {
    const denied = await this.#options.deny.current();
    if (!denied.ok) return denied;
    // The fleet registry's list too, when there is one: a token revoked there is revoked here.
    const registry = this.#options.revocations?.current() ?? ok(new Set<string>());
    if (!registry.ok) return registry;
    const clock = this.#options.clock ?? (() => new Date());
    return verifyToken(
      text,
      this.#options.anchor,
      clock(),
      (id) => denied.value.has(id) || registry.value.has(id),
    );
  }

  /** The request's token, or its refusal: 429 past the failures, 403 without CSRF, else 401. */
  async caller(
    request: IncomingMessage,
    remote: string | undefined,
    now: number,
  ): Promise<Result<VerifiedToken, Refusal>> {
    const refusals = this.#options.refusals;
    const wait = this.failures.refusedFor(remote ?? 'unknown', now);
    if (wait > 0) {
      const limits = FAILURE_DEFAULTS;
      const message = `${limits.max} failed authentications from ${remote} within ${limits.windowMs / 1000} s: try again in ${Math.ceil(wait / 1000)} s`;
      refusals.note({ remote, code: 'E_WEB_TOO_MANY_FAILURES', reason: message });
      return refused(apiError(429, 'E_WEB_TOO_MANY_FAILURES', message, EXIT.auth), {
        'retry-after': String(Math.ceil(wait / 1000)),
      });
    }
    const token = await this.#authenticate(request);
    if (!token.ok && token.error.code === 'E_WEB_CSRF') {
      refusals.note({ remote, code: token.error.code, reason: token.error.message });
      return refused(apiError(403, token.error.code, token.error.message, EXIT.auth));
    }
    if (!token.ok) {
      // petreld's own trouble (an unreadable deny-list) is no failure of the peer's, nor is a
      // session cookie that outlived its session (petreld restarted, idle, signed out).
      if (token.error.code !== 'E_TOKEN_DENY_LIST' && token.error.code !== 'E_WEB_SESSION')
        this.failures.failed(remote ?? 'unknown', now);
      refusals.note({ remote, code: token.error.code, reason: token.error.message });
      return refused(apiError(401, token.error.code, token.error.message, EXIT.auth), {
        'www-authenticate': 'Bearer realm="petreld", error="invalid_token"',
      });
    }
    return token;
  }

  async #authenticate(request: IncomingMessage): Promise<Result<VerifiedToken, PetrelError>> {
    const header = request.headers.authorization;
    // A browser's session cookie stands for its token (front.ts); a bearer token needs no CSRF.
    if (header === undefined) {
      const session = await this.#options.sessionToken(request);
      if (session !== null) return session;
      return err(
        'E_TOKEN_MISSING',
        'no token: send Authorization: Bearer <token> (petrel ca token makes one)',
      );
    }
    const bearer = /^Bearer +(\S+) *$/i.exec(header);
    if (bearer === null) return err('E_TOKEN_MALFORMED', 'the Authorization header is not "Bearer <token>"');
    return this.verify(bearer[1] as string);
  }
}

const refused = (reply: ApiResponse, headers?: Record<string, string>): { ok: false; error: Refusal } => ({
  ok: false,
  error: headers === undefined ? { reply } : { reply, headers },
});

/** Requests open per identity path (`alice:`): as the TLS endpoint bounds one identity's sessions. */
export class OpenRequests {
  readonly #most: number;
  readonly #open = new Map<string, number>();

  constructor(most: number) {
    this.#most = most;
  }

  /** Counts a request of `path` until its response closes; the refusal's text when it may not. */
  enter(path: Path, response: ServerResponse): string | null {
    const who = `${printPath(path)}:`;
    const open = this.#open.get(who) ?? 0;
    if (open >= this.#most)
      return `${who} has ${open} requests open, the limit is ${this.#most} (maxConnectionsPerIdentity)`;
    this.#open.set(who, open + 1);
    response.once('close', () => {
      const left = (this.#open.get(who) ?? 1) - 1;
      if (left > 0) this.#open.set(who, left);
      else this.#open.delete(who);
    });
    return null;
  }
}

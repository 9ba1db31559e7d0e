// Browser sessions of the web API: a token signed in once becomes an HttpOnly cookie
// naming a random id in this in-memory table, with a CSRF token every change must carry.
//
// A session holds the token's text, not a verdict: each use verifies it again (signature chain,
// expiry, deny-list), so a revocation or an expiry ends the session at its next request. It ends
// too after `idleMs` without a request, at sign-out, and when petreld stops (memory only).

import { randomBytes, timingSafeEqual } from 'node:crypto';

/** The cookie's name: `__Host-` makes browsers insist on Secure, Path=/ and no Domain. */
export const SESSION_COOKIE = '__Host-petrel-session';
/** The header a cookie request's change carries its CSRF token in. */
export const CSRF_HEADER = 'x-csrf-token';
/** Sessions held at most; past it the least recently used is dropped. */
export const MAX_SESSIONS = 10_000;

export interface Session {
  readonly id: string;
  readonly csrf: string;
  /** The token's text, verified again on every use. */
  readonly token: string;
  readonly expires: Date;
  lastUsed: number;
}

export class SessionTable {
  readonly #idleMs: number;
  readonly #max: number;
  /** In the order of last use: the first is the least recently used. */
  readonly #sessions = new Map<string, Session>();

  constructor(idleMs: number, max = MAX_SESSIONS) {
    this.#idleMs = idleMs;
    this.#max = max;
  }

  get idleMs(): number {
    return this.#idleMs;
  }

  get size(): number {
    return this.#sessions.size;
  }

  open(token: string, expires: Date, now: number): Session {
    const session: Session = {
      id: randomBytes(32).toString('base64url'),
      csrf: randomBytes(32).toString('base64url'),
      token,
      expires,
      lastUsed: now,
    };
    this.#sessions.set(session.id, session);
    if (this.#sessions.size > this.#max) this.#sessions.delete(this.#sessions.keys().next().value as string);
    return session;
  }

  /** The live session of `id`, its last use now; null (and forgotten) when idle or past its token's expiry. */
  use(id: string, now: number): Session | null {
    const session = this.#sessions.get(id);
    if (session === undefined) return null;
    this.#sessions.delete(id);
    if (now - session.lastUsed > this.#idleMs || now >= session.expires.getTime()) return null;
    session.lastUsed = now;
    this.#sessions.set(id, session);
    return session;
  }

  close(id: string): boolean {
    return this.#sessions.delete(id);
  }
}

/** The value of cookie `name` in a Cookie header; null when absent. */
export function cookieOf(header: string | undefined, name: string): string | null {
  if (header === undefined) return null;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}

/** The Set-Cookie value of a session: gone with the browser, and never beyond `maxAgeS`. */
export const sessionCookie = (id: string, maxAgeS: number): string =>
  `${SESSION_COOKIE}=${id}; Path=/; Secure; HttpOnly; SameSite=Strict; Max-Age=${Math.max(0, Math.floor(maxAgeS))}`;

export const clearedCookie = (): string =>
  `${SESSION_COOKIE}=; Path=/; Secure; HttpOnly; SameSite=Strict; Max-Age=0`;

/** Whether `given` is the session's CSRF token, compared in constant time. */
export function csrfMatches(session: Session, given: string | string[] | undefined): boolean {
  if (typeof given !== 'string') return false;
  const a = Buffer.from(given);
  const b = Buffer.from(session.csrf);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Methods that change nothing: the only ones a cookie request may make without its CSRF token. */
export const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD']);

// The dashboard's calls to the API: to its own origin with the session cookie (the CSRF token
// given at sign-in as X-CSRF-Token on every change), and to the fleet's other nodes directly,
// by CORS, with the token signed in with as a bearer token (held in this module's memory only,
// never in storage: docs/web.md, every node on one page).

export interface Reply<T = unknown> {
  readonly status: number;
  readonly body: T;
}

export interface ApiError {
  readonly error: { readonly code: string; readonly message: string };
}

/** A node of the fleet a call goes to: `origin` null is the node serving the page. */
export interface Target {
  readonly id: string;
  readonly origin: string | null;
}

const SAFE = new Set(['GET', 'HEAD']);

export const HERE: Target = { id: '', origin: null };

let csrf: string | null = null;
/** The token of the sign-in, for the other nodes; gone with the page (a reload forgets it). */
let bearer: string | null = null;

export function setBearer(token: string | null): void {
  bearer = token;
}

export function hasBearer(): boolean {
  return bearer !== null;
}

/** The URL of `path` on `target`. */
export function urlOf(target: Target, path: string): string {
  return target.origin === null ? path : `${target.origin}${path}`;
}

/** What authenticates a call to `target`: the CSRF token here (a change), the bearer token there. */
export function authHeaders(target: Target, method = 'GET'): Record<string, string> {
  if (target.origin !== null) return bearer === null ? {} : { authorization: `Bearer ${bearer}` };
  return !SAFE.has(method) && csrf !== null ? { 'x-csrf-token': csrf } : {};
}

export function setCsrf(token: string | null): void {
  csrf = token;
}

export function csrfToken(): string | null {
  return csrf;
}

export async function call<T = unknown>(
  method: string,
  path: string,
  body?: unknown,
  target: Target = HERE,
): Promise<Reply<T>> {
  const headers = authHeaders(target, method);
  if (body !== undefined) headers['content-type'] = 'application/json';
  let response: Response;
  try {
    response = await fetch(urlOf(target, path), {
      method,
      headers,
      // Another node gets the token, never this node's cookie.
      credentials: target.origin === null ? 'same-origin' : 'omit',
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  } catch (e) {
    const where = target.origin ?? 'this node';
    const message = `${where} cannot be reached (${(e as Error).message}): down, or not answering this page's CORS`;
    return { status: 0, body: { error: { code: 'E_WEB_UNREACHABLE', message } } as T };
  }
  const text = await response.text();
  let parsed: unknown = null;
  try {
    parsed = text === '' ? null : JSON.parse(text);
  } catch {
    parsed = { error: { code: 'E_WEB_DASHBOARD', message: `not JSON: ${text.slice(0, 80)}` } };
  }
  return { status: response.status, body: parsed as T };
}

/** The message of an error reply, as the API gives it. */
export function messageOf(reply: Reply): string {
  const error = (reply.body as Partial<ApiError> | null)?.error;
  return error === undefined ? `HTTP ${reply.status}` : `${error.message} (${error.code})`;
}

export const enc = (name: string): string => encodeURIComponent(name);

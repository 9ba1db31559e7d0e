// The dashboard's calls to its own origin's API: the session cookie goes by itself, the CSRF
// token given at sign-in goes as X-CSRF-Token on every change.

export interface Reply<T = unknown> {
  readonly status: number;
  readonly body: T;
}

export interface ApiError {
  readonly error: { readonly code: string; readonly message: string };
}

let csrf: string | null = null;

export function setCsrf(token: string | null): void {
  csrf = token;
}

export function csrfToken(): string | null {
  return csrf;
}

const SAFE = new Set(['GET', 'HEAD']);

export async function call<T = unknown>(method: string, path: string, body?: unknown): Promise<Reply<T>> {
  const headers: Record<string, string> = {};
  if (!SAFE.has(method) && csrf !== null) headers['x-csrf-token'] = csrf;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(path, {
    method,
    headers,
    credentials: 'same-origin',
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
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

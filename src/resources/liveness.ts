// Liveness checks of `petrel replace`, as values: what to probe and for how
// long, each validated here (pure) by the CLI, the web API and petreld alike.

import { err, ok, type PetrelError, type Result } from './errors.js';

export type LivenessProbe =
  /** GET from the host; a 2xx or 3xx status passes. */
  | { readonly kind: 'http'; readonly url: string }
  /** A TCP connection that is accepted passes. */
  | { readonly kind: 'tcp'; readonly host: string; readonly port: number }
  /** A line of the new unikernel's console, printed after it started, that matches. */
  | { readonly kind: 'console'; readonly regex: string };

export interface LivenessCheck {
  readonly probe: LivenessProbe;
  /** How long the new unikernel has to pass (ms). */
  readonly withinMs: number;
}

export const DEFAULT_WITHIN_MS = 30_000;
/** `--within` may be 1 s to 10 min: long enough for a slow boot, short of holding a client forever. */
export const MIN_WITHIN_MS = 1_000;
export const MAX_WITHIN_MS = 600_000;
export const MAX_URL_LENGTH = 2048;
export const MAX_REGEX_LENGTH = 256;
const MAX_HOST_LENGTH = 253;

const bad = (message: string): Result<never> => err('E_REPLACE_CHECK', message);

export function checkWithin(ms: number): Result<number> {
  if (!Number.isInteger(ms) || ms < MIN_WITHIN_MS || ms > MAX_WITHIN_MS)
    return bad(`replace: --within must be between 1s and 10m, not ${ms} ms`);
  return ok(ms);
}

/** An http:// or https:// URL with a host, at most MAX_URL_LENGTH characters. */
export function httpProbe(url: string): Result<LivenessProbe> {
  if (url.length > MAX_URL_LENGTH)
    return bad(`replace: --http-check URL longer than ${MAX_URL_LENGTH} characters`);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return bad(`replace: --http-check ${JSON.stringify(url)} is not a URL`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    return bad(`replace: --http-check ${JSON.stringify(url)}: only http:// and https:// URLs are checked`);
  if (parsed.hostname === '') return bad(`replace: --http-check ${JSON.stringify(url)} names no host`);
  if (parsed.username !== '' || parsed.password !== '')
    return bad('replace: --http-check URL must not carry a user name or password');
  return ok({ kind: 'http', url });
}

/** HOST:PORT, [IPV6]:PORT; port 1–65535. */
export function tcpProbe(text: string): Result<LivenessProbe> {
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([^\s:[\]]+)):(\d{1,5})$/u.exec(text);
  const host = match?.[1] ?? match?.[2];
  const port = Number(match?.[3]);
  if (match === null || host === undefined || host.length > MAX_HOST_LENGTH)
    return bad(`replace: --tcp-check ${JSON.stringify(text)} is not HOST:PORT`);
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    return bad(`replace: --tcp-check ${JSON.stringify(text)}: port must be 1 to 65535`);
  return ok({ kind: 'tcp', host, port });
}

/**
 * A JavaScript regular expression (u flag) of at most MAX_REGEX_LENGTH characters, without
 * back-references or a quantified group that itself holds a quantifier: petreld matches it
 * against a guest's lines, and a tenant's pattern must not make that take exponential time.
 */
export function consoleProbe(regex: string): Result<LivenessProbe> {
  if (regex.length === 0) return bad('replace: --console-line needs a pattern');
  if (regex.length > MAX_REGEX_LENGTH)
    return bad(`replace: --console-line pattern longer than ${MAX_REGEX_LENGTH} characters`);
  try {
    new RegExp(regex, 'u');
  } catch (e) {
    return bad(`replace: --console-line ${JSON.stringify(regex)}: ${e instanceof Error ? e.message : e}`);
  }
  if (/\\[1-9k]/u.test(regex))
    return bad(`replace: --console-line ${JSON.stringify(regex)}: back-references are not allowed`);
  if (nestedQuantifier(regex))
    return bad(
      `replace: --console-line ${JSON.stringify(regex)}: a repeated group holding a repetition is not allowed (it can take exponential time)`,
    );
  return ok({ kind: 'console', regex });
}

/** Whether a group that holds a quantifier is itself quantified (`(a+)+`, `(?:x*y)*`, `(a|a?){3,}`). */
function nestedQuantifier(regex: string): boolean {
  const open: boolean[] = [];
  let inClass = false;
  let closedWithQuantifier = false;
  for (let i = 0; i < regex.length; i++) {
    const c = regex[i];
    const quantifier = c === '*' || c === '+' || c === '?' || c === '{';
    if (quantifier && closedWithQuantifier && !(c === '?' && regex[i - 1] === '(')) return true;
    closedWithQuantifier = false;
    if (c === '\\') {
      i++;
      continue;
    }
    if (inClass) {
      if (c === ']') inClass = false;
      continue;
    }
    if (c === '[') inClass = true;
    else if (c === '(') open.push(false);
    else if (c === ')') {
      closedWithQuantifier = open.pop() ?? false;
      if (closedWithQuantifier && open.length > 0) open[open.length - 1] = true;
    } else if (
      (c === '*' || c === '+' || c === '{' || (c === '?' && regex[i - 1] !== '(')) &&
      open.length > 0
    )
      open[open.length - 1] = true;
  }
  return false;
}

/** Exactly one probe of the three flags, and the deadline. */
export function livenessCheck(flags: {
  readonly http?: string | undefined;
  readonly tcp?: string | undefined;
  readonly console?: string | undefined;
  readonly withinMs?: number | undefined;
}): Result<LivenessCheck> {
  const given = [flags.http, flags.tcp, flags.console].filter((f) => f !== undefined).length;
  if (given !== 1)
    return bad(`replace: give exactly one of --http-check, --tcp-check and --console-line (${given} given)`);
  const probe =
    flags.http !== undefined
      ? httpProbe(flags.http)
      : flags.tcp !== undefined
        ? tcpProbe(flags.tcp)
        : consoleProbe(flags.console as string);
  if (!probe.ok) return probe;
  const within = checkWithin(flags.withinMs ?? DEFAULT_WITHIN_MS);
  if (!within.ok) return within;
  return ok({ probe: probe.value, withinMs: within.value });
}

/** A check that arrived over the wire, validated again as the CLI validates it. */
export function validCheck(check: LivenessCheck): Result<LivenessCheck, PetrelError> {
  const { probe } = check;
  const again =
    probe.kind === 'http'
      ? httpProbe(probe.url)
      : probe.kind === 'tcp'
        ? tcpProbe(probe.host.includes(':') ? `[${probe.host}]:${probe.port}` : `${probe.host}:${probe.port}`)
        : consoleProbe(probe.regex);
  if (!again.ok) return again;
  const within = checkWithin(check.withinMs);
  return within.ok ? ok(check) : within;
}

/** How the check reads in messages: `HTTP GET http://…`, `TCP 10.0.0.2:80`, `console /ready/`. */
export function describeProbe(probe: LivenessProbe): string {
  switch (probe.kind) {
    case 'http':
      return `HTTP GET ${probe.url}`;
    case 'tcp':
      return `TCP ${probe.host.includes(':') ? `[${probe.host}]` : probe.host}:${probe.port}`;
    case 'console':
      return `console line /${probe.regex}/`;
  }
}

/** `--within`: `30s`, `1500ms`, `2m`, or seconds; 1 s to 10 min. */
export function parseWithin(text: string): Result<number> {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m)?$/u.exec(text.trim());
  if (match === null)
    return bad(`replace: --within ${JSON.stringify(text)} is not a duration such as 30s, 1500ms or 2m`);
  const unit = match[2] === 'ms' ? 1 : match[2] === 'm' ? 60_000 : 1000;
  return checkWithin(Math.round(Number(match[1]) * unit));
}

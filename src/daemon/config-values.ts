// Parsers of configuration values (paths, integers, durations, lists, endpoints, …), each for a
// TOML value or a flag's string; the table of keys (config-table.ts) gives each key one.

import os from 'node:os';
import path from 'node:path';
import { checkInterfaceName } from '../host/ip.js';
import { checkTapPrefix } from '../host/tap.js';
import { ok, type Result } from '../resources/errors.js';
import { type IdRange, parseIdRange } from '../resources/jail.js';
import type { Endpoint, Parse, Runtime, RuntimeChoice } from './config-types.js';

// Each returns the reason alone; the caller prefixes the key path or flag.

const fail = (reason: string): Result<never, string> => ({ ok: false, error: reason });

export function text(raw: unknown, what: string): Result<string, string> {
  if (typeof raw !== 'string' || raw === '' || raw.includes('\0')) return fail(`expected ${what}`);
  return ok(raw);
}

export const pathValue: Parse<string> = (raw, source) => {
  const value = text(raw, 'a non-empty path');
  return value.ok ? ok(path.resolve(source.baseDir, value.value)) : value;
};

/** A flag given as `''` unsets what the file set. */
export function optional<T>(parse: Parse<T>): Parse<T | null> {
  return (raw, source) => (source.flag && raw === '' ? ok(null) : parse(raw, source));
}

export const INT32_MAX = 2 ** 31 - 1;

/** A TOML boolean, or `true`/`false` as a flag. */
export const boolean: Parse<boolean> = (raw, source) => {
  if (typeof raw === 'boolean') return ok(raw);
  if (source.flag && (raw === 'true' || raw === 'false')) return ok(raw === 'true');
  return fail('expected true or false');
};

export function integer(min: number, max: number): Parse<number> {
  const expected = min === 1 && max === INT32_MAX ? 'a positive integer' : `an integer from ${min} to ${max}`;
  return (raw, source) => {
    const value = source.flag && typeof raw === 'string' && /^\d+$/u.test(raw) ? Number(raw) : raw;
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
      return fail(`expected ${expected}`);
    }
    return ok(value);
  };
}

const DURATION_UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** `10s`, `500ms`, `2m`, `1h`, or a number of seconds (TOML number or bare decimal string). */
export function parseDuration(raw: unknown): Result<number, string> {
  const expected = 'expected a positive duration such as 10s, 500ms, 2m or a number of seconds';
  let ms: number;
  if (typeof raw === 'number') {
    ms = raw * 1000;
  } else if (typeof raw === 'string') {
    const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/u.exec(raw.trim());
    if (match === null) return fail(expected);
    ms = Number(match[1]) * (DURATION_UNITS[match[2] ?? 's'] ?? 1000);
  } else {
    return fail(expected);
  }
  if (!Number.isFinite(ms)) return fail(expected);
  ms = Math.round(ms);
  if (ms <= 0) return fail(expected);
  // Node's timers hold at most 2^31 − 1 ms; a longer one would fire at once.
  if (ms > INT32_MAX) return fail('expected a duration of at most 24 days');
  return ok(ms);
}

export const duration: Parse<number> = (raw) => parseDuration(raw);

/** A TOML array of strings, a TOML string with commas, or a comma-separated flag. */
export function stringList(raw: unknown): Result<readonly string[], string> {
  if (typeof raw === 'string')
    return ok(
      raw
        .split(',')
        .map((item) => item.trim())
        .filter((item) => item !== ''),
    );
  if (Array.isArray(raw) && raw.every((item): item is string => typeof item === 'string')) return ok(raw);
  return fail('expected a list of strings');
}

export const runtimes: Parse<RuntimeChoice> = (raw) => {
  const list = stringList(raw);
  if (!list.ok) return list;
  const expected = 'expected "auto", "none" or a list of runtimes from hvt, spt';
  if (list.value.length === 1 && list.value[0] === 'none') return ok([]);
  if (list.value.length === 1 && list.value[0] === 'auto') return ok('auto');
  if (list.value.length === 0) return fail(expected);
  const chosen = new Set<Runtime>();
  for (const item of list.value) {
    if (item !== 'hvt' && item !== 'spt') return fail(`${expected}, got ${JSON.stringify(item)}`);
    chosen.add(item);
  }
  return ok([...chosen].sort());
};

export const idRange: Parse<IdRange> = (raw) =>
  typeof raw === 'string' ? parseIdRange(raw) : fail('expected FIRST-LAST');

export const absolutePaths: Parse<readonly string[]> = (raw, source) => {
  const list = stringList(raw);
  if (!list.ok) return list;
  if (list.value.some((item) => item.includes('\0'))) return fail('expected a list of paths');
  return ok(list.value.map((item) => path.resolve(source.baseDir, item)));
};

export const bridges: Parse<readonly string[]> = (raw) => {
  const list = stringList(raw);
  if (!list.ok) return list;
  for (const name of list.value) {
    if (!checkInterfaceName(name).ok) return fail(`invalid bridge name ${JSON.stringify(name)}`);
  }
  return ok([...new Set(list.value)].sort());
};

export const tapPrefix: Parse<string> = (raw) => {
  const value = text(raw, 'a non-empty string');
  if (!value.ok) return value;
  const checked = checkTapPrefix(value.value);
  return checked.ok ? checked : fail(checked.error.message);
};

/** `HOST:PORT`, `[IPv6]:PORT`, or a bare port on `defaultHost`. */
export function endpoint(defaultHost: string): Parse<Endpoint> {
  return (raw) => {
    const expected = 'expected HOST:PORT, [IPv6]:PORT or a port number';
    const value = typeof raw === 'number' ? String(raw) : raw;
    if (typeof value !== 'string') return fail(expected);
    const match = /^(?:(?:\[([0-9A-Fa-f:.]+)\]|([^\s:[\]]+)):)?(\d{1,5})$/u.exec(value);
    const port = Number(match?.[3]);
    if (match === null || port > 65535) return fail(expected);
    return ok({ host: match[1] ?? match[2] ?? defaultHost, port });
  };
}

export function oneOf<T extends string>(values: readonly T[]): Parse<T> {
  return (raw) =>
    typeof raw === 'string' && (values as readonly string[]).includes(raw)
      ? ok(raw as T)
      : fail(`expected one of ${values.join(', ')}`);
}

export const nodeId: Parse<string> = (raw) => {
  const value = text(raw, 'a node name');
  if (!value.ok) return value;
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$/u.test(value.value)) {
    return fail('expected a node name of letters, digits, ".", "_" and "-" (at most 253)');
  }
  return value;
};

/** The host's name as the default nodeId, or `petrel-node` where it is not a valid one. */
export function safeHostname(): string {
  const name = os.hostname();
  return nodeId(name, { flag: false, baseDir: '/' }).ok ? name : 'petrel-node';
}

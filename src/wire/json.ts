// JSON form of wire values for `petrel wire decode --json` / `encode`. The mapping is by field
// name (the types are designed so each name means one thing): bigints as decimal strings, bytes
// as hex, times as ISO strings, names as name strings, console lines as text when valid UTF-8.

import { parseName, printName } from '../resources/name.js';
import type { Name } from './types.js';

export type Json = null | boolean | number | string | readonly Json[] | { readonly [key: string]: Json };

const BYTE_FIELDS = new Set(['image', 'digest', 'data']);
const TIME_FIELDS = new Set(['started', 'since', 'timestamp', 'at', 'restartAt']);
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

const toHex = (bytes: Uint8Array): string =>
  Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');

function lineJson(bytes: Uint8Array): Json {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    return { hex: toHex(bytes) };
  }
}

const isName = (value: unknown): value is Name =>
  typeof value === 'object' && value !== null && 'path' in value && 'label' in value;

/** The JSON form of a decoded value. */
export function toJson(value: unknown, key = ''): Json {
  if (
    value === null ||
    typeof value === 'boolean' ||
    typeof value === 'number' ||
    typeof value === 'string'
  ) {
    return value;
  }
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Uint8Array) return key === 'line' ? lineJson(value) : toHex(value);
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? 'invalid date' : value.toISOString();
  if (Array.isArray(value)) {
    return value.map((item) => (key === 'names' && isName(item) ? printName(item) : toJson(item)));
  }
  if (key === 'name' && isName(value)) return printName(value);
  if (typeof value === 'object') {
    const out: Record<string, Json> = {};
    for (const [k, v] of Object.entries(value)) if (v !== undefined) out[k] = toJson(v, k);
    return out;
  }
  return String(value);
}

class JsonShapeError extends Error {}

function bytesFromHex(text: string, key: string): Uint8Array {
  if (!/^(?:[0-9a-fA-F]{2})*$/.test(text)) throw new JsonShapeError(`"${key}" must be a hex string`);
  return Uint8Array.from(Buffer.from(text, 'hex'));
}

function reviveName(text: unknown, key: string): Name | unknown {
  if (typeof text !== 'string') return text;
  const name = parseName(text);
  if (!name.ok) throw new JsonShapeError(`"${key}": ${name.error.message}`);
  return name.value;
}

/**
 * Parses the JSON form back into wire values. Only the representation is converted here; whether
 * the result is a valid message is decided by encoding it and decoding the bytes again.
 */
export function fromJson(text: string): { ok: true; value: unknown } | { ok: false; message: string } {
  try {
    const value: unknown = JSON.parse(text, (key, raw: unknown) => {
      if (key === 'name') return reviveName(raw, key);
      if (key === 'names' && Array.isArray(raw)) return raw.map((item) => reviveName(item, key));
      if (key === 'line') {
        if (typeof raw === 'string') return new TextEncoder().encode(raw);
        const hex = (raw as { hex?: unknown } | null)?.hex;
        if (typeof hex === 'string') return bytesFromHex(hex, key);
        return raw;
      }
      if (BYTE_FIELDS.has(key) && typeof raw === 'string') return bytesFromHex(raw, key);
      if (TIME_FIELDS.has(key) && typeof raw === 'string') {
        const time = new Date(raw);
        if (Number.isNaN(time.getTime())) throw new JsonShapeError(`"${key}" is not a time: ${raw}`);
        return time;
      }
      return raw;
    });
    return { ok: true, value };
  } catch (e) {
    return { ok: false, message: e instanceof Error ? e.message : String(e) };
  }
}

/** The first place where two JSON values differ, as a dotted path, or null when they are equal. */
export function firstDifference(a: Json, b: Json, path = ''): string | null {
  if (a === b) return null;
  const here = path === '' ? '(top level)' : path;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return here;
  if (Array.isArray(a) !== Array.isArray(b)) return here;
  const ra = a as Record<string, Json>;
  const rb = b as Record<string, Json>;
  const keys = new Set([...Object.keys(ra), ...Object.keys(rb)]);
  for (const key of keys) {
    if (!(key in ra) || !(key in rb)) return path === '' ? key : `${path}.${key}`;
    const diff = firstDifference(ra[key] as Json, rb[key] as Json, path === '' ? key : `${path}.${key}`);
    if (diff !== null) return diff;
  }
  return null;
}

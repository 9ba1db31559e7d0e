// Shared test helpers: hex with the spec's abbreviations, names, policies, message builders, and
// the location of the captured vectors (read in place from ../shared, never copied).

import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { unwrap } from '../../src/resources/errors.js';
import { type Name, parseName } from '../../src/resources/name.js';
import { makePolicy, type Policy, type PolicyInput } from '../../src/resources/policy.js';
import type { WireResult } from '../../src/wire/errors.js';
import { solo5Config } from '../../src/wire/shapes.js';
import type { Command, Data, Payload, Reply, UnikernelConfig, Wire } from '../../src/wire/types.js';

/** `<repo>/../shared/vectors/albatross-2.1`. */
export const VECTORS = join(import.meta.dirname, '..', '..', '..', 'shared', 'vectors', 'albatross-2.1');

/** Every step folder of the capture. */
export const steps = (): string[] => readdirSync(VECTORS).filter((d) => /^\d\d-/.test(d));

/** Space-separated hex bytes; `00×8` repeats a byte (the spec's abbreviation). */
export function hex(...parts: string[]): Uint8Array {
  const out: number[] = [];
  for (const token of parts.join(' ').split(/\s+/).filter(Boolean)) {
    const m = /^([0-9a-f]{2})(?:×(\d+))?$/i.exec(token);
    if (m === null) throw new Error(`bad hex token ${token}`);
    const byte = Number.parseInt(m[1] as string, 16);
    for (let i = 0; i < Number(m[2] ?? 1); i++) out.push(byte);
  }
  return Uint8Array.from(out);
}

export const toHex = (bytes: Uint8Array): string =>
  Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join(' ');

export const ascii = (text: string): Uint8Array => Uint8Array.from(text, (c) => c.charCodeAt(0));

/** Header TLVs of §6.1. */
export const H = {
  root: '30 10 02 01 05 04 08 00 00 00 00 00 00 00 00 0c 01 3a',
  foo: '30 13 02 01 05 04 08 00 00 00 00 00 00 00 00 0c 04 3a 66 6f 6f',
  disk: '30 14 02 01 05 04 08 00 00 00 00 00 00 00 00 0c 05 3a 64 69 73 6b',
  hello: '30 15 02 01 05 04 08 00 00 00 00 00 00 00 00 0c 06 3a 68 65 6c 6c 6f',
  user: '30 14 02 01 05 04 08 00 00 00 00 00 00 00 00 0c 05 75 73 65 72 3a',
} as const;

export const name = (text: string): Name => unwrap(parseName(text));
export const policy = (input: PolicyInput): Policy => unwrap(makePolicy(input));

export const wire = (nameText: string, payload: Payload, sequence = 0n): Wire => ({
  header: { version: 5, sequence, name: name(nameText) },
  payload,
});
export const cmd = (command: Command): Payload => ({ kind: 'command', command });

/** A 2.7 create of `name` whose configuration is MINIMAL_CONFIG changed by `change`. */
export const createWire = (nameText: string, change: object): Wire =>
  wire(
    nameText,
    cmd({ type: 'unikernel-create', force: false, release: '2.7', config: { ...MINIMAL_CONFIG, ...change } }),
  );
export const reply = (value: Reply): Payload => ({ kind: 'reply', reply: value });
export const data = (value: Data): Payload => ({ kind: 'data', data: value });

export function ok<T>(result: WireResult<T>): T {
  if (!result.ok) throw new Error(`${result.error.code}: ${result.error.message}`);
  return result.value;
}

/** Asserts an error result and returns the error for further checks. */
export function failed<T>(result: WireResult<T>, code?: string) {
  expect(result.ok).toBe(false);
  if (result.ok) throw new Error('unreachable');
  if (code !== undefined) expect(result.error.code).toBe(code);
  expect(result.error.code).toMatch(/^E_WIRE_/);
  return result.error;
}

/**
 * The minimal UnikernelConfig of §6.3: Albatross' client defaults (solo5Config) for the image
 * `IMG`. The spec vectors pin its encoding, so those defaults cannot drift unnoticed.
 */
export const MINIMAL_CONFIG: UnikernelConfig = solo5Config(ascii('IMG'));

/** A TLV with a computed (short or long form) length around hex contents. */
export function tlv(tag: string, ...contents: string[]): string {
  const body = hex(...contents);
  const n = body.length;
  const length = n < 0x80 ? [n] : n < 0x100 ? [0x81, n] : [0x82, n >> 8, n & 0xff];
  return `${tag} ${toHex(Uint8Array.from(length))} ${toHex(body)}`.trim();
}

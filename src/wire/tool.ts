// The logic behind `petrel wire decode` and `petrel wire encode`: bytes ⇄ JSON for framed messages,
// bare DER messages, certificates (the command in their extension) and state files.

import { certificateCommand, decodeCertExtension, encodeCertExtension } from './cert.js';
import { shiftError, type WireError, type WireResult, wireError } from './errors.js';
import { DEFAULT_MAX_FRAME, frame, frameHeader, splitFrames } from './framing.js';
import { firstDifference, fromJson, type Json, toJson } from './json.js';
import { decodeWire, encodeWire } from './message.js';
import { upgradeState } from './shapes.js';
import { decodeState, encodeState } from './state.js';
import type { Command, State, Wire } from './types.js';

export type WireMode = 'framed' | 'der' | 'cert' | 'state';
export const WIRE_MODES: readonly WireMode[] = ['framed', 'der', 'cert', 'state'];

export interface ToolOptions {
  /** Frame size limit for `framed` input (default 64 MiB). */
  readonly maxFrame?: number;
}

const fail = (error: WireError): { ok: false; error: WireError } => ({ ok: false, error });

/**
 * Decodes a file's bytes to JSON. `framed`: an array with one entry per frame (`{"end": length}`
 * for a length ≤ 0); `der`: one message; `cert`: `{critical, command}` of a DER or PEM certificate
 * (null without an Albatross extension; an array for several PEM blocks); `state`: a state file.
 */
export function decodeToJson(bytes: Uint8Array, mode: WireMode, options: ToolOptions = {}): WireResult<Json> {
  switch (mode) {
    case 'framed': {
      const frames = splitFrames(bytes, { maxFrame: options.maxFrame ?? DEFAULT_MAX_FRAME });
      if (!frames.ok) return frames;
      const out: Json[] = [];
      for (const event of frames.value) {
        if (event.kind === 'end') {
          out.push({ end: event.length });
          continue;
        }
        const wire = decodeWire(event.payload);
        if (!wire.ok) return fail(shiftError(wire.error, event.offset + 4));
        out.push(toJson(wire.value));
      }
      return { ok: true, value: out };
    }
    case 'der': {
      const wire = decodeWire(bytes);
      return wire.ok ? { ok: true, value: toJson(wire.value) } : wire;
    }
    case 'cert': {
      const pem = pemBlocks(bytes);
      if (pem === null) return certJson(bytes);
      const out: Json[] = [];
      for (const der of pem) {
        const one = certJson(der);
        if (!one.ok) return one;
        out.push(one.value);
      }
      return { ok: true, value: out.length === 1 ? (out[0] as Json) : out };
    }
    case 'state': {
      const state = decodeState(bytes);
      return state.ok ? { ok: true, value: toJson(state.value) } : state;
    }
  }
}

function certJson(der: Uint8Array): WireResult<Json> {
  const found = certificateCommand(der);
  return found.ok ? { ok: true, value: toJson(found.value) } : found;
}

/** The DER of each `CERTIFICATE` block of a PEM file, or null when the input is not PEM. */
function pemBlocks(bytes: Uint8Array): Uint8Array[] | null {
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1');
  const blocks = [...text.matchAll(/-----BEGIN CERTIFICATE-----([\s\S]*?)-----END CERTIFICATE-----/g)];
  if (blocks.length === 0) return null;
  return blocks.map((m) => Uint8Array.from(Buffer.from((m[1] ?? '').replace(/\s+/g, ''), 'base64')));
}

/**
 * Encodes the JSON form back to bytes: the inverse of `decodeToJson` (`cert` yields the extension
 * value, since a certificate needs a key; `state` writes version 6, upgrading older versions).
 * The result is decoded again and must give back exactly the JSON given, so every field is
 * checked and a mistake is reported with its path.
 */
export function encodeFromJson(text: string, mode: WireMode): WireResult<Uint8Array> {
  const parsed = fromJson(text);
  if (!parsed.ok) return fail(wireError('E_WIRE_JSON', `invalid JSON input: ${parsed.message}`, null));
  const value = parsed.value;
  switch (mode) {
    case 'framed': {
      const items = Array.isArray(value) ? value : [value];
      const parts: Uint8Array[] = [];
      for (const [index, item] of items.entries()) {
        const end = (item as { end?: unknown } | null)?.end;
        if (typeof end === 'number' && Number.isInteger(end) && end <= 0) {
          parts.push(frameHeader(end));
          continue;
        }
        const one = checked(item, (v) => encodeWire(v as Wire), decodeWire, `frame ${index}: `);
        if (!one.ok) return one;
        parts.push(frame(one.value));
      }
      return { ok: true, value: Buffer.concat(parts) };
    }
    case 'der':
      return checked(value, (v) => encodeWire(v as Wire), decodeWire);
    case 'cert': {
      const command = (value as { command?: unknown } | null)?.command;
      return checked(command, (v) => encodeCertExtension(v as Command), decodeCertExtension);
    }
    case 'state':
      return checked(
        value,
        (v) => encodeState(upgradeState(v as State)),
        decodeState,
        '',
        (v) => upgradeState(v as State),
      );
  }
}

function checked<T>(
  value: unknown,
  encode: (value: unknown) => WireResult<Uint8Array>,
  decode: (bytes: Uint8Array) => WireResult<T>,
  where = '',
  expected: (value: unknown) => unknown = (v) => v,
): WireResult<Uint8Array> {
  const bad = (what: string) => fail(wireError('E_WIRE_JSON', `${where}${what}`, null));
  let bytes: WireResult<Uint8Array>;
  let want: Json;
  try {
    bytes = encode(value);
    want = toJson(expected(value));
  } catch (e) {
    return bad(`does not describe a message: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (!bytes.ok) {
    const internal = bytes.error.code === 'E_WIRE_INTERNAL';
    return bad(internal ? `does not describe a message (${bytes.error.message})` : bytes.error.message);
  }
  const back = decode(bytes.value);
  if (!back.ok) return bad(`does not describe a valid message: ${back.error.message}`);
  const diff = firstDifference(want, toJson(back.value));
  if (diff !== null) return bad(`field ${diff} is missing, unknown or not in canonical form`);
  return bytes;
}

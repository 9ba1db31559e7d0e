// MAC addresses: 6-byte OCTET STRINGs on the wire (`bad mac address` otherwise), lower-case
// hex pairs joined by `:` in Petrel (albatross-wire.md §2.9).

import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import { type Der, enc, type Reader } from './der.js';
import { fault } from './errors.js';
import type { MacAddress } from './types.js';

const MAC_TEXT = /^[0-9a-f]{2}(?::[0-9a-f]{2}){5}$/;

export function parseMac(text: string): Result<MacAddress, PetrelError<'E_WIRE_MAC'>> {
  const lower = typeof text === 'string' ? text.toLowerCase() : '';
  if (!MAC_TEXT.test(lower)) return err('E_WIRE_MAC', `bad mac address ${JSON.stringify(text)}`);
  return ok(lower as MacAddress);
}

const HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, '0'));

export function macFromBytes(bytes: Uint8Array): MacAddress {
  let text = HEX[bytes[0] as number] as string;
  for (let i = 1; i < bytes.length; i++) text += `:${HEX[bytes[i] as number]}`;
  return text as MacAddress;
}

const hexDigit = (c: number): number =>
  c >= 0x30 && c <= 0x39 ? c - 0x30 : c >= 0x61 && c <= 0x66 ? c - 0x57 : -1;

/** The six bytes of a MAC in its text form; the check is inline because every info entry has one. */
function macBytes(mac: MacAddress): Uint8Array {
  const out = new Uint8Array(6);
  let valid = typeof mac === 'string' && mac.length === 17;
  for (let i = 0; valid && i < 6; i++) {
    const hi = hexDigit(mac.charCodeAt(i * 3));
    const lo = hexDigit(mac.charCodeAt(i * 3 + 1));
    valid = hi >= 0 && lo >= 0 && (i === 5 || mac.charCodeAt(i * 3 + 2) === 0x3a);
    out[i] = hi * 16 + lo;
  }
  if (!valid) fault('E_WIRE_ENCODE', `bad mac address ${String(mac)}`, null);
  return out;
}

export function readMac(r: Reader): MacAddress {
  const bytes = r.octets('mac');
  if (bytes.length !== 6) fault('E_WIRE_MAC', 'bad mac address', r.lastStart);
  return macFromBytes(bytes);
}

export const encMac = (mac: MacAddress): Der => enc.octets(macBytes(mac));

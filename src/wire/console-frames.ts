// Console lines to subscribers in bulk: the framed Data messages of one read's lines (all with
// the same name and time) written into one buffer, byte for byte what `encodeWire` + a frame
// header gives for each line, with the header and the time encoded once per batch, not per line.

import type { Name } from '../resources/name.js';
import { ctx, enc, lengthSize, TAG, toBytes, writeHeader } from './der.js';
import { guard, type WireResult } from './errors.js';
import { encHeader } from './message.js';
import { WIRE_VERSION } from './types.js';

/** Identifier, length octets and content of a value with `length` content bytes. */
const tlv = (length: number): number => 1 + lengthSize(length) + length;

/** The last time encoded, per form: the lines of a read share one, and reads come in bursts. */
const times = {
  '2.0': { at: Number.NaN, bytes: new Uint8Array(0) as Uint8Array },
  '2.1': { at: Number.NaN, bytes: new Uint8Array(0) as Uint8Array },
};

function timeBytes(release: '2.0' | '2.1', timestamp: number): Uint8Array {
  const cached = times[release];
  if (cached.at !== timestamp) {
    const date = new Date(timestamp);
    cached.bytes = toBytes(release === '2.0' ? enc.utcTime(date) : enc.generalizedTime(date));
    cached.at = timestamp;
  }
  return cached.bytes;
}

/**
 * The frames (4-byte length, then the DER message) of console Data for each line, in order:
 * `console-old` ([3] [0] SEQUENCE { UTCTime, UTF8String }) for 2.0 subscribers, `console`
 * ([3] [3] SEQUENCE { GeneralizedTime, UTF8String }) for 2.1, header sequence 0.
 */
export function consoleFrames(
  release: '2.0' | '2.1',
  name: Name,
  timestamp: number,
  lines: readonly Uint8Array[],
): WireResult<Buffer> {
  return guard(() => {
    const header = toBytes(encHeader({ version: WIRE_VERSION, sequence: 0n, name }));
    const time = timeBytes(release, timestamp);
    const kind = ctx(release === '2.0' ? 0 : 3);
    let total = 0;
    for (const line of lines) total += 4 + messageSize(header.length, time.length, line.length);
    const out = Buffer.allocUnsafe(total);
    let pos = 0;
    for (const line of lines) {
      const text = tlv(line.length);
      const sequence = tlv(time.length + text);
      const data = tlv(sequence);
      const payload = tlv(data);
      const body = header.length + payload;
      out.writeInt32BE(tlv(body), pos);
      pos = writeHeader(out, pos + 4, TAG.SEQUENCE, body);
      out.set(header, pos);
      pos = writeHeader(out, pos + header.length, ctx(3), data);
      pos = writeHeader(out, pos, kind, sequence);
      pos = writeHeader(out, pos, TAG.SEQUENCE, time.length + text);
      out.set(time, pos);
      pos = writeHeader(out, pos + time.length, TAG.UTF8, line.length);
      out.set(line, pos);
      pos += line.length;
    }
    return out;
  });
}

function messageSize(header: number, time: number, line: number): number {
  return tlv(header + tlv(tlv(tlv(time + tlv(line)))));
}

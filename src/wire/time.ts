// GeneralizedTime and UTCTime as Albatross writes and reads them (albatross-wire.md §2.8).
// Times are JavaScript Dates, i.e. millisecond precision, which is exactly what `.fff` carries.

import { fault } from './errors.js';

const GENERALIZED = /^(\d{4})(\d{2})(\d{2})(\d{2})(?:(\d{2})(?:(\d{2})(?:\.(\d{1,3}))?)?)?(Z|[+-]\d{4})?$/;
const UTC = /^(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})?(Z|[+-]\d{4})?$/;

function asciiText(bytes: Uint8Array, start: number, end: number, at: number, kind: string): string {
  let text = '';
  for (let i = start; i < end; i++) {
    const b = bytes[i] as number;
    if (b >= 0x80) fault('E_WIRE_TIME', `${kind} holds a non-ASCII byte`, at);
    text += String.fromCharCode(b);
  }
  return text;
}

interface TimeText {
  readonly kind: 'GeneralizedTime' | 'UTCTime';
  readonly text: string;
  /** Where the TLV starts, for errors. */
  readonly at: number;
  /** The years the type can write back; a zone offset can carry an instant outside them. */
  readonly years: readonly [number, number];
}

/**
 * Builds the instant from UTC fields, refusing impossible dates (setUTCFullYear rather than
 * Date.UTC, which would read years 0–99 as 1900–1999).
 */
function instant(
  t: TimeText,
  [year, month, day, hour, minute, second, millis]: readonly number[],
  zone: string | undefined,
): Date {
  const bad = (why: string) => fault('E_WIRE_TIME', `${why} ${t.kind} ${JSON.stringify(t.text)}`, t.at);
  if (year === undefined || month === undefined || day === undefined) return bad('invalid');
  if (month < 1 || month > 12 || day < 1 || (hour ?? 0) > 23 || (minute ?? 0) > 59 || (second ?? 0) > 59)
    bad('invalid');
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour ?? 0, minute ?? 0, second ?? 0, millis ?? 0);
  if (date.getUTCDate() !== day) bad('invalid');
  if (zone !== undefined && zone !== 'Z') {
    const hh = Number(zone.slice(1, 3));
    const mm = Number(zone.slice(3, 5));
    if (hh > 23 || mm > 59) bad('invalid');
    const sign = zone[0] === '+' ? 1 : -1;
    date.setTime(date.getTime() - sign * (hh * 60 + mm) * 60_000);
  }
  const utcYear = date.getUTCFullYear();
  if (utcYear < t.years[0] || utcYear > t.years[1]) bad('out-of-range');
  return date;
}

/** The TLV's text, read as `kind` (which can write back the years `years`). */
function timeText(
  kind: TimeText['kind'],
  years: TimeText['years'],
  bytes: Uint8Array,
  start: number,
  end: number,
  at: number,
): TimeText {
  return { kind, text: asciiText(bytes, start, end, at, kind), at, years };
}

/** `YYYYMMDDHH[MM[SS[.f{1,3}]]]` then `Z`, `±hhmm` or nothing (UTC). */
export function decodeGeneralizedTime(bytes: Uint8Array, start: number, end: number, at: number): Date {
  const t = timeText('GeneralizedTime', [0, 9999], bytes, start, end, at);
  const m = GENERALIZED.exec(t.text);
  if (m === null) return fault('E_WIRE_TIME', `invalid GeneralizedTime ${JSON.stringify(t.text)}`, at);
  const millis = m[7] === undefined ? 0 : Number(m[7].padEnd(3, '0'));
  return instant(t, [...[m[1], m[2], m[3], m[4], m[5], m[6]].map((f) => Number(f ?? 0)), millis], m[8]);
}

/** `YYMMDDHHMM[SS]` then `Z`, `±hhmm` or nothing; YY ≥ 50 is 19YY, otherwise 20YY. */
export function decodeUtcTime(bytes: Uint8Array, start: number, end: number, at: number): Date {
  const t = timeText('UTCTime', [1950, 2049], bytes, start, end, at);
  const m = UTC.exec(t.text);
  if (m === null) return fault('E_WIRE_TIME', `invalid UTCTime ${JSON.stringify(t.text)}`, at);
  const [yy, ...rest] = [m[1], m[2], m[3], m[4], m[5], m[6]].map((f) => Number(f ?? 0)) as [
    number,
    ...number[],
  ];
  return instant(t, [yy >= 50 ? 1900 + yy : 2000 + yy, ...rest, 0], m[7]);
}

const pad = (n: number, width: number): string => String(n).padStart(width, '0');

function checkDate(time: Date): void {
  if (!(time instanceof Date) || Number.isNaN(time.getTime())) {
    fault('E_WIRE_ENCODE', `not a valid time: ${String(time)}`, null);
  }
}

/** `YYYYMMDDHHMMSS[.fff]Z`: the fraction only when the millisecond part is non-zero. */
export function encodeGeneralizedTime(time: Date): string {
  checkDate(time);
  const year = time.getUTCFullYear();
  if (year < 0 || year > 9999) fault('E_WIRE_ENCODE', `year ${year} does not fit GeneralizedTime`, null);
  const ms = time.getUTCMilliseconds();
  return `${pad(year, 4)}${clock(time)}${ms === 0 ? '' : `.${pad(ms, 3)}`}Z`;
}

/** `YYMMDDHHMMSSZ`, seconds precision (the fraction is dropped), years 1950–2049. */
export function encodeUtcTime(time: Date): string {
  checkDate(time);
  const year = time.getUTCFullYear();
  if (year < 1950 || year > 2049) fault('E_WIRE_ENCODE', `year ${year} does not fit UTCTime`, null);
  return `${pad(year % 100, 2)}${clock(time)}Z`;
}

function clock(time: Date): string {
  return (
    pad(time.getUTCMonth() + 1, 2) +
    pad(time.getUTCDate(), 2) +
    pad(time.getUTCHours(), 2) +
    pad(time.getUTCMinutes(), 2) +
    pad(time.getUTCSeconds(), 2)
  );
}

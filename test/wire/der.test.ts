// The DER primitives on their own: minimal INTEGERs at every size boundary, SET OF order,
// lengths in each form, and the time grammars.

import { describe, expect, test } from 'vitest';
import { compareBytes, enc, Reader, toBytes } from '../../src/wire/der.js';
import { guard } from '../../src/wire/errors.js';
import { decodeGeneralizedTime, decodeUtcTime } from '../../src/wire/time.js';
import { ascii, failed, hex, ok, toHex } from './helpers.js';

const intBytes = (value: number | bigint) => toHex(toBytes(enc.integer(value)));
const readBig = (bytes: Uint8Array) => ok(guard(() => new Reader(bytes).bigint()));

describe('INTEGER', () => {
  test.each([
    [0, '02 01 00'],
    [1, '02 01 01'],
    [127, '02 01 7f'],
    [128, '02 02 00 80'],
    [-1, '02 01 ff'],
    [-128, '02 01 80'],
    [-129, '02 02 ff 7f'],
    [32767, '02 02 7f ff'],
    [32768, '02 03 00 80 00'],
    [-32769, '02 03 ff 7f ff'],
    [1234, '02 02 04 d2'],
    [2 ** 53 - 1, '02 07 1f ff ff ff ff ff ff'],
    [(1n << 62n) - 1n, '02 08 3f ff ff ff ff ff ff ff'],
    [-(1n << 62n), '02 08 c0 00 00 00 00 00 00 00'],
  ] as const)('%s is %s and reads back', (value, bytes) => {
    expect(intBytes(value)).toBe(bytes);
    expect(readBig(hex(bytes))).toBe(BigInt(value));
  });

  test('numbers keep their exact value up to ±(2^53 − 1), beyond that they are refused', () => {
    expect(ok(guard(() => new Reader(hex('02 07 1f ff ff ff ff ff ff')).int()))).toBe(2 ** 53 - 1);
    expect(ok(guard(() => new Reader(hex('02 07 e0 00 00 00 00 00 01')).int()))).toBe(-(2 ** 53 - 1));
    failed(
      guard(() => new Reader(hex('02 07 20 00 00 00 00 00 00')).int()),
      'E_WIRE_INT_RANGE',
    );
  });
});

describe('SET OF', () => {
  test('sorted by complete encodings: {0, 1, 128} and -1 after 127', () => {
    const set = (values: number[]) => toHex(toBytes(enc.set(values.map(enc.integer))));
    expect(set([128, 1, 0])).toBe('31 0a 02 01 00 02 01 01 02 02 00 80');
    expect(set([-1, 127])).toBe('31 06 02 01 7f 02 01 ff');
    expect(set([1, 1])).toBe('31 06 02 01 01 02 01 01');
  });

  test('compareBytes: unsigned, shorter prefix first', () => {
    expect(compareBytes(hex('01'), hex('ff'))).toBeLessThan(0);
    expect(compareBytes(hex('01'), hex('01 00'))).toBeLessThan(0);
    expect(compareBytes(hex('02'), hex('01 ff'))).toBeGreaterThan(0);
  });
});

describe('lengths', () => {
  test.each([
    [0, '04 00'],
    [127, '04 7f'],
    [128, '04 81 80'],
    [255, '04 81 ff'],
    [256, '04 82 01 00'],
    [65536, '04 83 01 00 00'],
  ])('%d content bytes', (n, head) => {
    const bytes = toBytes(enc.octets(new Uint8Array(n)));
    expect(toHex(bytes.subarray(0, hex(head).length))).toBe(head);
    expect(ok(guard(() => new Reader(bytes).octets())).length).toBe(n);
  });

  test('BOOLEAN TRUE is ff, NULL is 05 00', () => {
    expect(toHex(toBytes(enc.boolean(true)))).toBe('01 01 ff');
    expect(toHex(toBytes(enc.boolean(false)))).toBe('01 01 00');
    expect(toHex(toBytes(enc.null()))).toBe('05 00');
  });

  test('strings are written as given: UTF-8, a byte order mark kept', () => {
    expect(toHex(toBytes(enc.utf8('é')))).toBe('0c 02 c3 a9');
    const bom = toBytes(enc.utf8('\ufeffx'));
    expect(ok(guard(() => new Reader(bom).utf8()))).toBe('\ufeffx');
  });
});

describe('GeneralizedTime and UTCTime', () => {
  const gt = (text: string) =>
    ok(guard(() => decodeGeneralizedTime(ascii(text), 0, text.length, 0))).toISOString();
  const utc = (text: string) => ok(guard(() => decodeUtcTime(ascii(text), 0, text.length, 0))).toISOString();

  test.each([
    ['20240102030405Z', '2024-01-02T03:04:05.000Z'],
    ['20240102030405.250Z', '2024-01-02T03:04:05.250Z'],
    ['20240102030405.5Z', '2024-01-02T03:04:05.500Z'],
    ['20240102030405.25Z', '2024-01-02T03:04:05.250Z'],
    ['2024010203Z', '2024-01-02T03:00:00.000Z'],
    ['202401020304Z', '2024-01-02T03:04:00.000Z'],
    ['20240102030405', '2024-01-02T03:04:05.000Z'],
    ['20240102030405+0100', '2024-01-02T02:04:05.000Z'],
    ['20240102030405-0130', '2024-01-02T04:34:05.000Z'],
    ['00010101000000Z', '0001-01-01T00:00:00.000Z'],
    ['20240229000000Z', '2024-02-29T00:00:00.000Z'],
  ])('GeneralizedTime %s', (text, iso) => expect(gt(text)).toBe(iso));

  test.each([
    '20230229000000Z',
    '20240102030460Z',
    '20240102240000Z',
    '2024010203040Z',
    '20240102030405.Z',
    '20240102030405.1234Z',
    '20240102030405+2400',
    'x0240102030405Z',
  ])('GeneralizedTime %s is refused', (text) => {
    failed(
      guard(() => decodeGeneralizedTime(ascii(text), 0, text.length, 0)),
      'E_WIRE_TIME',
    );
  });

  test.each([
    ['240102030405Z', '2024-01-02T03:04:05.000Z'],
    ['2401020304Z', '2024-01-02T03:04:00.000Z'],
    ['491231235959Z', '2049-12-31T23:59:59.000Z'],
    ['500101000000Z', '1950-01-01T00:00:00.000Z'],
    ['240102030405+0100', '2024-01-02T02:04:05.000Z'],
  ])('UTCTime %s', (text, iso) => expect(utc(text)).toBe(iso));

  test('encoding: a fraction only when the milliseconds are non-zero; UTCTime drops it', () => {
    const text = (der: Uint8Array) => String.fromCharCode(...der.subarray(2));
    expect(text(toBytes(enc.generalizedTime(new Date('2024-01-02T03:04:05Z'))))).toBe('20240102030405Z');
    expect(text(toBytes(enc.generalizedTime(new Date('2024-01-02T03:04:05.007Z'))))).toBe(
      '20240102030405.007Z',
    );
    expect(text(toBytes(enc.utcTime(new Date('2024-01-02T03:04:05.999Z'))))).toBe('240102030405Z');
  });
});

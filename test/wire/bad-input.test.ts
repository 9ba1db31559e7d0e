// Malformed input: each case yields a PetrelError E_WIRE_* that names the problem and the byte
// offset where it was found — never an exception.

import { describe, expect, test } from 'vitest';
import {
  decodeCertExtension,
  decodeState,
  decodeWire,
  encodeState,
  encodeWire,
} from '../../src/wire/index.js';
import type { Wire } from '../../src/wire/types.js';
import { cmd, createWire, data, failed, H, hex, MINIMAL_CONFIG, name, tlv, wire } from './helpers.js';

/** A message `:foo` whose payload is the given hex (lengths computed). */
const message = (...payload: string[]) => hex(tlv('30', H.foo, ...payload));
/** A command `:foo`: [0] around the given Command TLV. */
const command = (...inner: string[]) => message(tlv('a0', ...inner));

interface Case {
  readonly bytes: Uint8Array;
  readonly code: string;
  readonly text: RegExp;
  readonly offset?: number;
}

const cases: Record<string, Case> = {
  'empty input': { bytes: hex(''), code: 'E_WIRE_TAG', text: /not a sequence/, offset: 0 },
  'not a sequence': { bytes: hex('31 00'), code: 'E_WIRE_TAG', text: /not a sequence/, offset: 0 },
  'indefinite length': {
    bytes: hex('30 80 00 00'),
    code: 'E_WIRE_LENGTH',
    text: /indefinite length/,
    offset: 1,
  },
  'long form for a short length': {
    bytes: hex('30 81 05 00 00 00 00 00'),
    code: 'E_WIRE_LENGTH',
    text: /non-minimal length/,
    offset: 1,
  },
  'length with a leading zero byte': {
    bytes: hex('30 82 00 85', '00×133'),
    code: 'E_WIRE_LENGTH',
    text: /non-minimal length/,
    offset: 1,
  },
  'length of five bytes': {
    bytes: hex('30 85 01 00 00 00 00'),
    code: 'E_WIRE_LENGTH',
    text: /too large/,
    offset: 1,
  },
  'length beyond the input': {
    bytes: hex('30 10 30 00'),
    code: 'E_WIRE_TRUNCATED',
    text: /exceeds the 2 bytes available/,
    offset: 1,
  },
  'trailing bytes after the message': {
    bytes: hex(tlv('30', H.foo, 'a0 06 a3 04 a3 02 05 00'), '00'),
    code: 'E_WIRE_TRAILING',
    text: /trailing bytes/,
    offset: 31,
  },
  'unknown version 6': {
    bytes: hex(tlv('30', '30 13 02 01 06 04 08 00×8 0c 04 3a 66 6f 6f', 'a0 06 a3 04 a3 02 05 00')),
    code: 'E_WIRE_VERSION',
    text: /unknown version number 0x6 at byte 4/,
  },
  'unknown version 255': {
    bytes: hex(tlv('30', '30 14 02 02 00 ff 04 08 00×8 0c 04 3a 66 6f 6f', 'a0 06 a3 04 a3 02 05 00')),
    code: 'E_WIRE_VERSION',
    text: /unknown version number 0xFF/,
  },
  'non-minimal INTEGER': {
    bytes: hex(tlv('30', '30 14 02 02 00 05 04 08 00×8 0c 04 3a 66 6f 6f', 'a0 06 a3 04 a3 02 05 00')),
    code: 'E_WIRE_INTEGER',
    text: /non-minimal INTEGER at byte 4/,
  },
  'negative non-minimal INTEGER': {
    bytes: command(tlv('a3', tlv('ab', '02 02 ff ff'))),
    code: 'E_WIRE_INTEGER',
    text: /non-minimal/,
  },
  'empty INTEGER': { bytes: command('a3 04 ab 02 02 00'), code: 'E_WIRE_INTEGER', text: /empty INTEGER/ },
  'INTEGER beyond 63 bits': {
    bytes: message(tlv('a0', tlv('a0', tlv('a0', '02 08 40 00 00 00 00 00 00 00')))),
    code: 'E_WIRE_INT_RANGE',
    text: /int overflow/,
  },
  'INTEGER of nine bytes': {
    bytes: message(tlv('a0', tlv('a0', tlv('a0', '02 09 00 ff ff ff ff ff ff ff ff')))),
    code: 'E_WIRE_INT_RANGE',
    text: /int overflow/,
  },
  'INTEGER beyond a safe number (compression level)': {
    bytes: command(tlv('a3', tlv('ab', '02 07 7f ff ff ff ff ff ff'))),
    code: 'E_WIRE_INT_RANGE',
    text: /out of range/,
  },
  'int64 sequence of 7 bytes': {
    bytes: hex(tlv('30', '30 12 02 01 05 04 07 00×7 0c 04 3a 66 6f 6f', 'a0 06 a3 04 a3 02 05 00')),
    code: 'E_WIRE_INT64',
    text: /8-byte/,
    offset: 7,
  },
  'BOOLEAN of two bytes': {
    bytes: command(tlv('a5', tlv('a7', '01 02 ff ff'))),
    code: 'E_WIRE_BOOLEAN',
    text: /exactly one/,
  },
  'NULL with content': {
    bytes: command('a3 05 a3 03 05 01 00'),
    code: 'E_WIRE_NULL',
    text: /NULL with content/,
  },
  'invalid name': {
    bytes: hex(tlv('30', '30 14 02 01 05 04 08 00×8 0c 05 3a 3a 66 6f 6f', 'a0 06 a3 04 a3 02 05 00')),
    code: 'E_WIRE_NAME',
    text: /invalid name/,
    offset: 17,
  },
  'empty name': {
    bytes: hex(tlv('30', '30 0f 02 01 05 04 08 00×8 0c 00', 'a0 06 a3 04 a3 02 05 00')),
    code: 'E_WIRE_NAME',
    text: /empty name/,
  },
  'invalid UTF-8 in a failure': {
    bytes: message('a2 04 0c 02 c3 28'),
    code: 'E_WIRE_UTF8',
    text: /not valid UTF-8/,
  },
  'unknown payload [4]': {
    bytes: message('a4 02 05 00'),
    code: 'E_WIRE_TAG',
    text: /unknown payload tag \[4\]/,
  },
  'unknown command group [6]': {
    bytes: command('a6 02 05 00'),
    code: 'E_WIRE_TAG',
    text: /unknown command tag \[6\]/,
  },
  'log command': {
    bytes: command('a2 02 05 00'),
    code: 'E_WIRE_UNSUPPORTED',
    text: /support for log dropped/,
  },
  'log data': {
    bytes: message('a3 04 a2 02 05 00'),
    code: 'E_WIRE_UNSUPPORTED',
    text: /support for log dropped/,
  },
  'reserved unikernel info [0]': {
    bytes: command('a3 04 a0 02 05 00'),
    code: 'E_WIRE_UNSUPPORTED',
    text: /reserved/,
  },
  'reserved unikernel get [8]': {
    bytes: command('a3 04 a8 02 05 00'),
    code: 'E_WIRE_UNSUPPORTED',
    text: /reserved/,
  },
  'unknown unikernel tag [22]': {
    bytes: command('a3 04 b6 02 05 00'),
    code: 'E_WIRE_TAG',
    text: /unknown unikernel command tag \[22\]/,
  },
  'unknown reply [14]': {
    bytes: message('a1 04 ae 02 05 00'),
    code: 'E_WIRE_TAG',
    text: /unknown reply tag \[14\]/,
  },
  'primitive context tag as a CHOICE': {
    bytes: command('83 00'),
    code: 'E_WIRE_TAG',
    text: /unknown command tag identifier 83/,
  },
  'explicit wrapper with two elements': {
    bytes: command(tlv('a3', tlv('a3', '05 00 05 00'))),
    code: 'E_WIRE_TRAILING',
    text: /trailing bytes/,
  },
  'explicit wrapper with no element': {
    bytes: command('a3 02 a3 00'),
    code: 'E_WIRE_TRUNCATED',
    text: /missing NULL/,
  },
  'constructed OCTET STRING': {
    bytes: command(tlv('a5', tlv('a4', tlv('30', '01 01 00', tlv('24', '04 02 41 42'))))),
    code: 'E_WIRE_TAG',
    text: /expected data \(OCTET STRING\) but found identifier 24/,
  },
  'high-tag-number identifier': {
    bytes: command('bf 1f 02 05 00'),
    code: 'E_WIRE_TAG',
    text: /high-tag-number/,
  },
  'MAC of five bytes': {
    bytes: message(
      tlv(
        'a1',
        tlv(
          'a8',
          tlv(
            '30',
            tlv(
              '30',
              '0c 04 3a 66 6f 6f',
              tlv(
                '30',
                'a0 02 05 00 a0 02 05 00 02 01 00 02 01 20 04 00',
                tlv('a1', tlv('31', tlv('30', '0c 01 61 0c 01 62 04 05 00 80 41 01 02'))),
              ),
            ),
          ),
        ),
      ),
    ),
    code: 'E_WIRE_MAC',
    text: /bad mac address/,
  },
  'month 13': {
    bytes: command(tlv('a0', tlv('a2', tlv('a0', '18 0f', '32 30 32 34 31 33 30 32 30 33 30 34 30 35 5a')))),
    code: 'E_WIRE_TIME',
    text: /invalid GeneralizedTime "20241302030405Z"/,
  },
  'four fraction digits': {
    bytes: command(
      tlv('a0', tlv('a2', tlv('a0', '18 14', '32 30 32 34 30 31 30 32 30 33 30 34 30 35 2e 31 32 33 34 5a'))),
    ),
    code: 'E_WIRE_TIME',
    text: /invalid GeneralizedTime/,
  },
  'policy with negative memory': {
    bytes: command(tlv('a4', tlv('a1', '30 0d 30 03 02 01 00 02 01 01 02 01 ff 30 00'))),
    code: 'E_WIRE_POLICY',
    text: /memory -1/,
  },
};

describe('decoding refuses', () => {
  test.each(Object.entries(cases))('%s', (_title, c) => {
    const error = failed(decodeWire(c.bytes), c.code);
    expect(error.message).toMatch(c.text);
    expect(error.message).toMatch(/at byte \d+$/);
    expect(typeof error.details?.offset).toBe('number');
    if (c.offset !== undefined) expect(error.details?.offset).toBe(c.offset);
  });
});

describe('decoding accepts what Albatross accepts', () => {
  test('a BOOLEAN with any non-zero byte is TRUE (re-encoded as ff)', () => {
    const decoded = decodeWire(command('a5 05 a7 03 01 01 01'));
    expect(decoded.ok && decoded.value.payload).toEqual(cmd({ type: 'block-set', compressed: true }));
  });

  test('SET OF elements in any order', () => {
    const restart = (set: string) =>
      command(
        tlv(
          'a3',
          tlv('ae', tlv('a3', tlv('30', 'a0 02 05 00 01 01 ff', tlv('31', set), '02 01 40 a3 03 02 01 01'))),
        ),
      );
    const sorted = decodeWire(restart('02 01 00 02 01 01'));
    const unsorted = decodeWire(restart('02 01 01 02 01 00'));
    expect(sorted.ok && unsorted.ok).toBe(true);
    const cpuids = (r: typeof sorted) =>
      r.ok &&
      r.value.payload.kind === 'command' &&
      r.value.payload.command.type === 'unikernel-restart' &&
      r.value.payload.command.form === '2.7'
        ? r.value.payload.command.args.cpuids
        : null;
    expect(cpuids(unsorted)).toEqual([1, 0]);
    // … and encodes them sorted, so both give the canonical bytes.
    if (unsorted.ok && sorted.ok) expect(encodeWire(unsorted.value)).toEqual(encodeWire(sorted.value));
  });

  test('console lines are bytes, whatever they hold', () => {
    const line = hex('ff fe 00 c3 28');
    const bytes = message(
      tlv(
        'a3',
        tlv(
          'a3',
          tlv('30', '18 0f 32 30 32 34 30 31 30 32 30 33 30 34 30 35 5a', tlv('0c', 'ff fe 00 c3 28')),
        ),
      ),
    );
    const decoded = decodeWire(bytes);
    expect(decoded.ok && decoded.value).toEqual(
      wire(':foo', data({ type: 'console', timestamp: new Date('2024-01-02T03:04:05Z'), line })),
    );
  });
});

describe('encoding refuses values that have no encoding', () => {
  const create = (config: object): Wire => createWire(':hello', config);

  test.each([
    ['a fractional memory', create({ memory: 1.5 }), /not a safe integer/],
    ['a memory beyond 2^53', create({ memory: 2 ** 60 }), /not a safe integer/],
    [
      'an invalid time',
      wire(':foo', data({ type: 'console', timestamp: new Date(Number.NaN), line: hex('') })),
      /not a valid time/,
    ],
    [
      'a UTCTime after 2049',
      wire(':foo', data({ type: 'console-old', timestamp: new Date('2050-01-01T00:00:00Z'), line: hex('') })),
      /UTCTime/,
    ],
    [
      'a year beyond 9999',
      wire(':foo', data({ type: 'console', timestamp: new Date('+010000-01-01T00:00:00Z'), line: hex('') })),
      /GeneralizedTime/,
    ],
    ['a lone surrogate', wire(':foo', { kind: 'failure', message: 'a\ud800b' }), /lone surrogate/],
    ['a bad MAC', create({ bridges: [{ netif: 'x', bridge: null, mac: 'zz' }] }), /bad mac/],
    [
      'a sequence beyond 64 bits',
      {
        header: { version: 5, sequence: 1n << 64n, name: name(':') },
        payload: cmd({ type: 'policy-info' }),
      } as Wire,
      /64-bit/,
    ],
    ['a console limit beyond 63 bits', wire(':', cmd({ type: 'console-add', limit: 1n << 62n })), /63-bit/],
  ] as const)('%s', (_title, value, text) => {
    const error = failed(encodeWire(value as Wire), 'E_WIRE_ENCODE');
    expect(error.message).toMatch(text);
  });

  test('garbage instead of a message is an error, not an exception', () => {
    failed(encodeWire({} as Wire));
    failed(
      encodeWire({
        header: { version: 5, sequence: 0n, name: name(':') },
        payload: { kind: 'nope' },
      } as unknown as Wire),
      'E_WIRE_ENCODE',
    );
  });
});

describe('certificate extension and state refuse', () => {
  test('an extension of version 4', () => {
    expect(
      failed(decodeCertExtension(hex('30 09 02 01 04 a3 04 b3 02 05 00')), 'E_WIRE_VERSION').message,
    ).toMatch(/0x4/);
  });

  test('state [7] and unknown state tags', () => {
    expect(failed(decodeState(hex('a7 02 05 00')), 'E_WIRE_UNSUPPORTED').message).toMatch(
      /not yet implemented/,
    );
    failed(decodeState(hex('a8 02 05 00')), 'E_WIRE_TAG');
  });

  test('duplicate and unparsable keys', () => {
    const entry = tlv(
      '30',
      '0c 06 3a 68 65 6c 6c 6f',
      '30 20 a0 02 05 00 01 01 00 04 03 49 4d 47 01 01 ff a0 02 05 00 31 03 02 01 00 02 01 20 a3 03 02 01 01',
    );
    const twice = hex(tlv('a6', tlv('30', tlv('30', entry, entry), '30 00')));
    expect(failed(decodeState(twice), 'E_WIRE_DUPLICATE').message).toMatch(/duplicate unikernel :hello/);
    const policyEntry = tlv('30', '0c 04 75 73 65 72', '30 0e 30 03 02 01 00 02 01 01 02 02 02 00 30 00');
    const policyEntry2 = tlv('30', '0c 05 75 73 65 72 3a', '30 0e 30 03 02 01 00 02 01 01 02 02 02 00 30 00');
    const policies = hex(tlv('a6', tlv('30', '30 00', tlv('30', policyEntry, policyEntry2))));
    expect(failed(decodeState(policies), 'E_WIRE_DUPLICATE').message).toMatch(/duplicate policy user:/);
    failed(decodeState(hex(tlv('a3', tlv('30', tlv('30', '0c 02 3a 3a', '30 00'))))), 'E_WIRE_NAME');
    const unikernel = { name: name(':a'), config: MINIMAL_CONFIG };
    failed(encodeState({ version: 6, unikernels: [unikernel, unikernel], policies: [] }), 'E_WIRE_DUPLICATE');
  });
});

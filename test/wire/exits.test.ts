// Petrel's unikernel-exits command and reply (differences (l)): their bytes, round trips through
// the codec and the JSON tool, and malformed replies refused with a code and the offset.

import { describe, expect, test } from 'vitest';
import { decodeWire, encodeWire } from '../../src/wire/index.js';
import { decodeToJson, encodeFromJson } from '../../src/wire/tool.js';
import type { Reply } from '../../src/wire/types.js';
import { cmd, failed, H, hex, name, ok, reply, tlv, toHex, wire } from './helpers.js';

const ascii = (text: string) => toHex(Uint8Array.from(Buffer.from(text)));
const utf8 = (text: string) => tlv('0c', ascii(text));
/** GeneralizedTime of 2026-12-02T01:02:03Z (no fraction: DER drops a zero one). */
const TIME = tlv('18', ascii('20261202010203Z'));
const AT = new Date('2026-12-02T01:02:03Z');

/** A reply message `:foo` with Success [30] around the given entries. */
const exitsReply = (...entries: string[]) =>
  hex(tlv('30', H.foo, tlv('a1', tlv('be', tlv('30', ...entries)))));

const EXITS: Reply = {
  type: 'unikernel-exits',
  entries: [
    {
      name: name('team:grow'),
      info: {
        exit: 'signal SIGXFSZ',
        limit: 'RLIMIT_FSIZE',
        at: AT,
        restarts: 0,
        outcome: { kind: 'dropped', reason: 'signal SIGXFSZ does not restart' },
      },
    },
    {
      name: name('web'),
      info: {
        exit: 'exit 3',
        limit: null,
        at: new Date('2026-12-02T01:02:03.250Z'),
        restarts: 2,
        outcome: { kind: 'restarting', restartAt: new Date('2026-12-02T01:02:07Z') },
      },
    },
    {
      name: name('db'),
      info: { exit: 'exit 0', limit: null, at: AT, restarts: 1, outcome: { kind: 'restarted' } },
    },
  ],
};

describe('unikernel-exits', () => {
  test('the command is [0] [3] [30] NULL and decodes back', () => {
    const message = wire(':foo', cmd({ type: 'unikernel-exits' }));
    const bytes = ok(encodeWire(message));
    expect(toHex(bytes)).toBe(toHex(hex(tlv('30', H.foo, 'a0 06 a3 04 be 02 05 00'))));
    expect(ok(decodeWire(bytes))).toEqual(message);
  });

  test('a reply round-trips with every outcome, with and without a limit', () => {
    const message = wire(':foo', reply(EXITS));
    const bytes = ok(encodeWire(message));
    expect(ok(decodeWire(bytes))).toEqual(message);
  });

  test('an entry is name, exit, [0] limit, time, restarts, outcome', () => {
    const entry = tlv(
      '30',
      utf8('team:grow'),
      utf8('signal SIGXFSZ'),
      tlv('a0', utf8('RLIMIT_FSIZE')),
      TIME,
      '02 01 00',
      tlv('a3', utf8('signal SIGXFSZ does not restart')),
    );
    const [first] = EXITS.type === 'unikernel-exits' ? EXITS.entries : [];
    const one: Reply = { type: 'unikernel-exits', entries: first === undefined ? [] : [first] };
    expect(toHex(ok(encodeWire(wire(':foo', reply(one)))))).toBe(toHex(exitsReply(entry)));
    const bare = tlv('30', utf8('db'), utf8('exit 0'), TIME, '02 01 01', 'a1 02 05 00');
    expect(ok(decodeWire(exitsReply(bare))).payload).toEqual(
      reply({
        type: 'unikernel-exits',
        entries: [
          {
            name: name('db'),
            info: { exit: 'exit 0', limit: null, at: AT, restarts: 1, outcome: { kind: 'restarted' } },
          },
        ],
      }),
    );
    expect(ok(decodeWire(exitsReply())).payload).toEqual(reply({ type: 'unikernel-exits', entries: [] }));
  });

  test('the JSON tool shows it and encodes the same bytes again', () => {
    const bytes = ok(encodeWire(wire(':foo', reply(EXITS))));
    const json = ok(decodeToJson(bytes, 'der'));
    const text = JSON.stringify(json);
    expect(text).toContain('"at":"2026-12-02T01:02:03.250Z"');
    expect(text).toContain('"restartAt":"2026-12-02T01:02:07.000Z"');
    expect(toHex(ok(encodeFromJson(text, 'der')))).toBe(toHex(bytes));
  });

  const entry = (...fields: string[]) => exitsReply(tlv('30', utf8('db'), ...fields));
  const refused: Record<string, { bytes: Uint8Array; code: string; text: RegExp }> = {
    'a negative restart count': {
      bytes: entry(utf8('exit 0'), TIME, '02 01 ff', 'a1 02 05 00'),
      code: 'E_WIRE_INT_RANGE',
      text: /negative restart count -1/,
    },
    'an unknown outcome': {
      bytes: entry(utf8('exit 0'), TIME, '02 01 00', 'a4 02 05 00'),
      code: 'E_WIRE_TAG',
      text: /unknown exit outcome tag \[4\]/,
    },
    'an empty exit': {
      bytes: entry(utf8(''), TIME, '02 01 00', 'a1 02 05 00'),
      code: 'E_WIRE_EXIT',
      text: /an empty exit description/,
    },
    'no outcome': {
      bytes: entry(utf8('exit 0'), TIME, '02 01 00'),
      code: 'E_WIRE_TRUNCATED',
      text: /ended where another element was expected/,
    },
    'a limit under another tag': {
      bytes: entry(utf8('exit 0'), tlv('a1', utf8('RLIMIT_FSIZE')), TIME, '02 01 00', 'a1 02 05 00'),
      code: 'E_WIRE_TAG',
      text: /GeneralizedTime/,
    },
    'a restart time that is not a time': {
      bytes: entry(utf8('exit 0'), TIME, '02 01 00', tlv('a2', utf8('soon'))),
      code: 'E_WIRE_TAG',
      text: /GeneralizedTime/,
    },
    'a restarted outcome with content': {
      bytes: entry(utf8('exit 0'), TIME, '02 01 00', 'a1 03 05 01 00'),
      code: 'E_WIRE_NULL',
      text: /NULL with content/,
    },
    'a command [30] with content': {
      bytes: hex(tlv('30', H.foo, 'a0 07 a3 05 be 03 05 01 00')),
      code: 'E_WIRE_NULL',
      text: /NULL with content/,
    },
  };
  test.each(Object.entries(refused))('refuses %s, naming the byte', (_title, c) => {
    const error = failed(decodeWire(c.bytes), c.code);
    expect(error.message).toMatch(c.text);
    expect(error.message).toMatch(/at byte \d+$/);
  });

  test('encoding refuses an entry that describes no exit, or a count that is none', () => {
    const [first] = EXITS.type === 'unikernel-exits' ? EXITS.entries : [];
    if (first === undefined) throw new Error('no entry');
    const bad = (info: Partial<typeof first.info>) =>
      encodeWire(
        wire(
          ':foo',
          reply({ type: 'unikernel-exits', entries: [{ ...first, info: { ...first.info, ...info } }] }),
        ),
      );
    expect(failed(bad({ exit: '' }), 'E_WIRE_ENCODE').message).toMatch(/empty exit/);
    expect(failed(bad({ restarts: -1 }), 'E_WIRE_ENCODE').message).toMatch(/restart count -1/);
  });
});

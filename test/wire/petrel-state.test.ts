// Petrel's own state: records name images by digest; snapshots and journal entries round-trip,
// and a journal cut at any byte, or damaged, ends at the last intact entry.
import { describe, expect, test } from 'vitest';
import type { Path } from '../../src/resources/name.js';
import { encodeWire, imageReplyHead, readImageReplyHead } from '../../src/wire/index.js';
import {
  decodeSnapshot,
  EMPTY_STATE,
  encodeEntry,
  encodeSnapshot,
  loadPetrelState,
  type PetrelState,
  readJournal,
  type StateChange,
  type UnikernelRecord,
} from '../../src/wire/petrel-state.js';
import { MINIMAL_CONFIG, name, ok, policy, wire } from './helpers.js';

const path = (...labels: string[]) => labels as unknown as Path;

const { image: _image, ...kept } = MINIMAL_CONFIG;
const digest = (n: number) => n.toString(16).padStart(2, '0').repeat(32);
const record = (text: string, n = 1, change = {}): UnikernelRecord => ({
  name: name(text),
  config: { ...kept, ...change },
  image: { digest: digest(n), size: 1000 + n },
});
const POLICY = policy({ cpuids: [0, 1], vms: 3, memory: 256, block: 10, bridges: ['br0'] });

const STATE: PetrelState = {
  unikernels: [record('u:b', 2, { compressed: true, arguments: ['x'] }), record(':a')],
  policies: [
    { path: path('u'), policy: POLICY },
    { path: [], policy: POLICY },
  ],
  imported: [digest(9)],
};

const sorted = (state: PetrelState) => ({
  ...state,
  unikernels: [...state.unikernels].sort((a, b) => (a.name.label ?? '').localeCompare(b.name.label ?? '')),
  policies: [...state.policies].sort((a, b) => a.path.length - b.path.length),
});

describe('snapshot', () => {
  test('round-trips; equal states give equal bytes; records hold digest, size, flag, no image', () => {
    const bytes = ok(encodeSnapshot(STATE));
    expect(sorted(ok(decodeSnapshot(bytes)))).toEqual(sorted(STATE));
    expect(
      Buffer.from(ok(encodeSnapshot({ ...STATE, unikernels: [...STATE.unikernels].reverse() }))),
    ).toEqual(Buffer.from(bytes));
    expect(bytes.length).toBeLessThan(400);
    expect(ok(decodeSnapshot(ok(encodeSnapshot(EMPTY_STATE))))).toEqual(EMPTY_STATE);
  });

  test('refuses duplicates, bad digests and a version it does not know', () => {
    const twice = { ...STATE, unikernels: [record(':a'), record(':a', 2)] };
    expect(encodeSnapshot(twice)).toMatchObject({ ok: false, error: { code: 'E_WIRE_DUPLICATE' } });
    const bad = { ...STATE, unikernels: [{ ...record(':a'), image: { digest: 'abc', size: 1 } }] };
    expect(encodeSnapshot(bad)).toMatchObject({ ok: false, error: { code: 'E_WIRE_ENCODE' } });
    const bytes = Buffer.from(ok(encodeSnapshot(EMPTY_STATE)));
    bytes[bytes.indexOf(Buffer.from([0x02, 0x01, 0x01])) + 2] = 3;
    expect(decodeSnapshot(bytes)).toMatchObject({ ok: false, error: { code: 'E_WIRE_VERSION' } });
  });
});

describe('journal', () => {
  const changes: StateChange[][] = [
    [{ kind: 'put-unikernel', record: record(':c', 3) }],
    [{ kind: 'put-policy', path: path('v'), policy: POLICY }],
    [
      { kind: 'remove-unikernel', name: name(':a') },
      { kind: 'put-unikernel', record: record('u:b', 4) },
    ],
    [{ kind: 'remove-policy', path: path('u') }],
  ];
  const entries = changes.map((c) => ok(encodeEntry(c)));
  const journal = Buffer.concat(entries);
  const snapshot = ok(encodeSnapshot(STATE));
  /** The state after the first `n` entries. */
  const stateAfter = (n: number) => ok(loadPetrelState(snapshot, Buffer.concat(entries.slice(0, n)))).state;

  test('entries replay over the snapshot in order', () => {
    const state = stateAfter(changes.length);
    expect(state.unikernels.map((u) => [u.name.label, u.image.digest]).sort()).toEqual([
      ['b', digest(4)],
      ['c', digest(3)],
    ]);
    expect(state.policies.map((p) => p.path)).toEqual([[], ['v']]);
    expect(state.imported).toEqual(STATE.imported);
  });

  test('a journal cut at any byte reads as the entries before the cut', () => {
    let whole = 0;
    for (let cut = 0; cut <= journal.length; cut++) {
      while (whole < entries.length && entries.slice(0, whole + 1).reduce((n, e) => n + e.length, 0) <= cut)
        whole++;
      const read = readJournal(journal.subarray(0, cut));
      expect(read.entries).toHaveLength(whole);
      expect(read.validBytes).toBe(entries.slice(0, whole).reduce((n, e) => n + e.length, 0));
      expect(ok(loadPetrelState(snapshot, journal.subarray(0, cut))).state).toEqual(stateAfter(whole));
    }
  });

  test('a damaged entry ends the journal there (its checksum does not match)', () => {
    const damaged = Buffer.from(journal);
    const at = (entries[0]?.length ?? 0) + 20;
    damaged[at] = (damaged[at] as number) ^ 0xff;
    expect(readJournal(damaged).entries).toHaveLength(1);
    expect(readJournal(Buffer.concat([journal, Buffer.from('garbage after it')])).entries).toHaveLength(4);
  });

  test('replaying the journal again over a snapshot that already holds it changes nothing', () => {
    const compacted = ok(encodeSnapshot(stateAfter(changes.length)));
    expect(sorted(ok(loadPetrelState(compacted, journal)).state)).toEqual(sorted(stateAfter(changes.length)));
  });
});

describe('a get reply streamed from the store', () => {
  test('the head and the image are exactly the encoded reply', () => {
    for (const size of [0, 1, 127, 128, 255, 256, 65_535, 65_536, 1 << 24]) {
      const image = new Uint8Array(size).fill(7);
      for (const compressed of [false, true]) {
        const message = wire(
          ':hello',
          { kind: 'reply', reply: { type: 'unikernel-image', compressed, image } },
          3n,
        );
        const head = ok(imageReplyHead(message.header, compressed, size));
        const whole = ok(encodeWire(message));
        expect(head.length + size).toBe(whole.length);
        expect(Buffer.from(whole.subarray(0, head.length)).equals(Buffer.from(head))).toBe(true);
      }
    }
  });
});

describe('the head of a get reply, read back from its first bytes (the TLS endpoint relays the rest)', () => {
  const image = new Uint8Array(300).fill(9);
  const reply = (compressed: boolean) =>
    ok(
      encodeWire(wire(':a:b', { kind: 'reply', reply: { type: 'unikernel-image', compressed, image } }, 42n)),
    );

  test('gives the header, the form and where the image starts, from any prefix that holds the head', () => {
    for (const compressed of [false, true]) {
      const whole = reply(compressed);
      const headLength = whole.length - image.length;
      for (let cut = 0; cut <= whole.length; cut++) {
        const read = readImageReplyHead(whole.subarray(0, cut), whole.length);
        if (cut < headLength) expect(read, `prefix of ${cut}`).toBe('more');
        else
          expect(read).toEqual({
            header: { version: 5, sequence: 42n, name: name(':a:b') },
            compressed,
            headLength,
            imageLength: image.length,
          });
      }
    }
  });

  test('is null for any other message, so that one is read whole', () => {
    const others = [
      wire(':a', { kind: 'failure', message: 'no such unikernel' }),
      wire(':a', { kind: 'reply', reply: { type: 'string', text: 'destroyed' } }),
    ];
    for (const other of others) {
      const bytes = ok(encodeWire(other));
      expect(readImageReplyHead(bytes, bytes.length)).toBeNull();
    }
  });

  test('is null for a head that lies about the message: wrong total, other wrappers, a non-DER length', () => {
    const whole = reply(false);
    expect(readImageReplyHead(whole, whole.length + 1)).toBeNull();
    expect(readImageReplyHead(whole, whole.length - 1)).toBeNull();
    const otherTag = Uint8Array.from(whole);
    otherTag[0] = 0x31; // a SET, not a SEQUENCE
    expect(readImageReplyHead(otherTag, whole.length)).toBeNull();
    // The boolean as 0x01 instead of DER's 0xff: not what imageReplyHead writes.
    const loose = Uint8Array.from(reply(true));
    const at = loose.length - image.length - 2 - 2 - 1; // the boolean's value byte
    expect(loose[at]).toBe(0xff);
    loose[at] = 0x01;
    expect(readImageReplyHead(loose, loose.length)).toBeNull();
  });
});

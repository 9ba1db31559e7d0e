// The Albatross 2.1.0 captures (../shared/vectors/albatross-2.1): every frame decodes and
// re-encodes byte for byte, every certificate yields its command, and the replies Petrel would
// send, built from scratch, equal the captured bytes.

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import {
  commandFromCertificate,
  decodeWire,
  encodeWire,
  findCertExtension,
  frame,
  infoReply,
  splitFrames,
} from '../../src/wire/index.js';
import type { Command, Payload, Wire } from '../../src/wire/types.js';
import { hex, name, ok, policy, reply, steps, toHex, VECTORS, wire } from './helpers.js';

const read = (step: string, file: string): Uint8Array =>
  new Uint8Array(readFileSync(join(VECTORS, step, file)));

/** Every framed file of the capture: [step, file]. */
const framedFiles = steps().flatMap((step) =>
  readdirSync(join(VECTORS, step))
    .filter((f) => f.endsWith('.bin'))
    .map((f) => [step, f] as const),
);

const certificates = [
  ...steps().flatMap((step) =>
    readdirSync(join(VECTORS, step))
      .filter((f) => f.endsWith('.der'))
      .map((f) => [step, f] as const),
  ),
  ['pki', 'cacert.der'] as const,
  ['pki', 'sub.der'] as const,
];

/** The payload of a file holding exactly one frame. */
function onlyFrame(step: string, file: string): Uint8Array {
  const events = ok(splitFrames(read(step, file)));
  expect(events).toHaveLength(1);
  const [event] = events;
  if (event?.kind !== 'frame') throw new Error(`${file}: not a frame`);
  return event.payload;
}

describe('every captured frame', () => {
  test('there are over 250 of them', () => {
    expect(framedFiles.length).toBeGreaterThanOrEqual(250);
  });

  test.each(framedFiles)('%s/%s decodes and re-encodes byte for byte', (step, file) => {
    const payload = onlyFrame(step, file);
    const decoded = ok(decodeWire(payload));
    expect(toHex(ok(encodeWire(decoded)))).toBe(toHex(payload));
  });
});

describe('every captured certificate', () => {
  test.each(certificates)('%s/%s yields its extension', (step, file) => {
    const der = read(step, file);
    const ext = ok(findCertExtension(der));
    if (file === 'cacert.der' || (file.includes('chain0') && ext === null)) {
      expect(ext).toBeNull(); // the root CA carries no command
      return;
    }
    expect(ext?.critical).toBe(false);
    expect(ok(commandFromCertificate(der))).not.toBeNull();
  });

  const SUB_POLICY = policy({ cpuids: [0], vms: 2, memory: 256, block: 100, bridges: ['service'] });
  const leafOf = (step: string) =>
    readdirSync(join(VECTORS, step)).find((f) => f.endsWith('client-cert.der')) ?? '';

  test.each([
    ['01-policy-info-root', { type: 'policy-info' }],
    ['03-unikernel-info-root', { type: 'unikernel-info', release: '2.1' }],
    ['04-block-info-root', { type: 'block-info' }],
    ['05-policy-add-via-leaf', { type: 'policy-add', policy: SUB_POLICY }],
    ['13-console-hello', { type: 'console-subscribe', release: '2.1', select: { kind: 'count', count: 20 } }],
    ['20-unikernel-restart', { type: 'unikernel-restart', form: 'legacy' }],
    ['22-unikernel-destroy-ctl', { type: 'unikernel-destroy' }],
    ['25-block-create-sub', { type: 'block-add-old', size: 10, compressed: false, data: null }],
    ['28-stats-subscribe', { type: 'stats-subscribe' }],
    ['29-policy-remove-via-leaf', { type: 'policy-remove' }],
  ] as [string, Command][])('%s: the leaf carries the documented command', (step, command) => {
    expect(ok(commandFromCertificate(read(step, leafOf(step))))).toEqual(command);
  });

  test('the intermediate CA sub carries its policy; the leaf seen by openssl equals step 08', () => {
    expect(ok(commandFromCertificate(read('pki', 'sub.der')))).toEqual({
      type: 'policy-add',
      policy: SUB_POLICY,
    });
    const fromWire = ok(
      findCertExtension(read('99-wire-crosscheck-openssl-s_server', 'info-leaf-cert-from-wire.der')),
    );
    expect(toHex(fromWire?.value ?? new Uint8Array())).toBe('30 09 02 01 05 a3 04 ad 02 05 00');
  });
});

describe('§7.3 the two frames printed in full', () => {
  test('15: unikernel info reply [8] with one entry', () => {
    const payload = onlyFrame('15-unikernel-info-sub', 'albatross-client-23682-003-tls-read.bin');
    const digest = hex(
      '01 ac 03 02 6e ce 6a e8 d3 74 a7 fb 94 67 90 91 af 2f f4 53 9e cc 07 06 6d ee ea b8 3a 87 f1 46',
    );
    expect(ok(decodeWire(payload))).toEqual(
      wire(
        'sub:',
        reply({
          type: 'unikernel-info',
          release: '2.1',
          entries: [
            {
              name: name(':ctl'),
              info: {
                typ: 'solo5',
                failBehaviour: { kind: 'quit' },
                cpuid: 0,
                memory: 32,
                digest,
                blocks: [],
                bridges: [],
                arguments: ['forever'],
                started: new Date('2026-11-29T15:31:09.978Z'),
              },
            },
          ],
        }),
      ),
    );
  });

  test('08: the endpoint adds the policy of sub: with sequence 3', () => {
    const step = '08-unikernel-info-sub';
    const file = readdirSync(join(VECTORS, step)).find(
      (f) => f.includes('tls-endpoint') && f.includes('010-unix-write'),
    );
    const payload = onlyFrame(step, file ?? '');
    expect(ok(decodeWire(payload))).toEqual(
      wire(
        'sub:',
        {
          kind: 'command',
          command: {
            type: 'policy-add',
            policy: policy({ cpuids: [0], vms: 2, memory: 256, block: 100, bridges: ['service'] }),
          },
        },
        3n,
      ),
    );
  });
});

describe('replies Petrel would send equal the captured ones (§7.4)', () => {
  const SUB = policy({ cpuids: [0], vms: 2, memory: 256, block: 100, bridges: ['service'] });
  const CTL_INFO = {
    typ: 'solo5',
    startup: null,
    failBehaviour: { kind: 'quit' },
    cpuids: [0],
    memory: 32,
    digest: hex(
      '01 ac 03 02 6e ce 6a e8 d3 74 a7 fb 94 67 90 91 af 2f f4 53 9e cc 07 06 6d ee ea b8 3a 87 f1 46',
    ),
    blocks: [],
    bridges: [],
    arguments: ['forever'],
    started: new Date('2026-11-29T15:31:09.978Z'),
    cpus: 1,
    linuxBootPartition: null,
  } as const;

  const cases: [string, string, Wire][] = [
    ['01-policy-info-root', 'tls-read', wire(':', reply({ type: 'policies', entries: [] }))],
    ['31-policy-info-root', 'tls-read', wire(':', reply({ type: 'policies', entries: [] }))],
    [
      '09-policy-info-root',
      'tls-read',
      wire(':', reply({ type: 'policies', entries: [{ name: name('sub:'), policy: SUB }] })),
    ],
    [
      '10-policy-info-path-sub',
      'tls-read',
      wire(':sub', reply({ type: 'policies', entries: [{ name: name('sub:'), policy: SUB }] })),
    ],
    ['03-unikernel-info-root', 'tls-read', wire(':', reply(infoReply('2.1', [])))],
    ['08-unikernel-info-sub', 'tls-read', wire('sub:', reply(infoReply('2.1', [])))],
    [
      '15-unikernel-info-sub',
      'tls-read',
      wire('sub:', reply(infoReply('2.1', [{ name: name(':ctl'), info: CTL_INFO }]))),
    ],
    [
      '16-unikernel-info-name',
      'tls-read',
      wire('sub:ctl', reply(infoReply('2.1', [{ name: name('sub:ctl'), info: CTL_INFO }]))),
    ],
    ['04-block-info-root', 'tls-read', wire(':', reply({ type: 'block-devices', entries: [] }))],
    [
      '26-block-info-sub',
      'tls-read',
      wire(
        'sub:',
        reply({ type: 'block-devices', entries: [{ name: name(':blk'), size: 10, active: false }] }),
      ),
    ],
    [
      '23-unikernel-destroy-nonexistent',
      'tls-read',
      wire('sub:nonexistent', { kind: 'failure', message: 'destroy: not found' } as Payload),
    ],
    [
      '30-policy-remove-local-socket',
      'unix-write',
      wire('sub:', reply({ type: 'string', text: 'removed policy' })),
    ],
  ];

  test.each(cases)('%s (%s)', (step, kind, message) => {
    const file = readdirSync(join(VECTORS, step)).find(
      (f) =>
        f.endsWith(`${kind}.bin`) &&
        (kind === 'tls-read' ? f.startsWith('albatross-client') : f.startsWith('albatrossd')),
    );
    const captured = read(step, file ?? '');
    expect(toHex(frame(ok(encodeWire(message))))).toBe(toHex(captured));
  });

  test('30: the local client request, length prefix included', () => {
    const step = '30-policy-remove-local-socket';
    const file = readdirSync(join(VECTORS, step)).find(
      (f) => f.startsWith('albatrossd') && f.endsWith('unix-read.bin'),
    );
    const request = wire('sub:', { kind: 'command', command: { type: 'policy-remove' } });
    expect(toHex(frame(ok(encodeWire(request))))).toBe(
      toHex(hex('00 00 00 1f 30 1d 30 13 02 01 05 04 08 00×8 0c 04 73 75 62 3a a0 06 a4 04 a2 02 05 00')),
    );
    expect(toHex(read(step, file ?? ''))).toBe(toHex(frame(ok(encodeWire(request)))));
  });
});

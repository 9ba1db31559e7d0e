// Every hex vector of albatross-wire.md §6 decodes to the documented value and re-encodes to the
// very same bytes.

import { describe, expect, test } from 'vitest';
import { MAX_VMS } from '../../src/resources/policy.js';
import {
  encConfig,
  encConfigV3,
  encConfigV4,
  macFromBytes,
  readConfig,
  readConfigV3,
  readConfigV4,
} from '../../src/wire/config.js';
import { Reader, toBytes } from '../../src/wire/der.js';
import {
  commandFromCertificate,
  decodeCertExtension,
  decodeState,
  decodeWire,
  encodeCertExtension,
  encodeState,
  encodeWire,
  findCertExtension,
  infoReply,
} from '../../src/wire/index.js';
import { encInfo, readInfo } from '../../src/wire/info.js';
import type { Command, InfoRelease, MacAddress, UnikernelInfo, Wire } from '../../src/wire/types.js';
import {
  ascii,
  cmd,
  data,
  H,
  hex,
  MINIMAL_CONFIG,
  name,
  ok,
  policy,
  reply,
  tlv,
  toHex,
  wire,
} from './helpers.js';

const T_2024 = new Date('2024-01-02T03:04:05Z');
const GT_2024 = '18 0f 32 30 32 34 30 31 30 32 30 33 30 34 30 35 5a';
const HELLO = '0c 05 68 65 6c 6c 6f';
const MAC = macFromBytes(hex('00 80 41 01 02 03')) as MacAddress;

interface Vector {
  readonly title: string;
  readonly bytes: Uint8Array;
  readonly value: Wire;
}

const v = (title: string, bytes: Uint8Array, value: Wire): Vector => ({ title, bytes, value });

const console_: Vector[] = [
  v(
    'console subscribe count 20 (U)',
    hex('30 20', H.foo, 'a0 09 a0 07 a2 05 a1 03 02 01 14'),
    wire(':foo', cmd({ type: 'console-subscribe', release: '2.1', select: { kind: 'count', count: 20 } })),
  ),
  v(
    'console subscribe since',
    hex('30 2e', H.foo, 'a0 17 a0 15 a2 13 a0 11', GT_2024),
    wire(
      ':foo',
      cmd({ type: 'console-subscribe', release: '2.1', select: { kind: 'since', since: T_2024 } }),
    ),
  ),
  v(
    'console subscribe-OLD count 20',
    hex('30 20', H.foo, 'a0 09 a0 07 a1 05 a1 03 02 01 14'),
    wire(':foo', cmd({ type: 'console-subscribe', release: '2.0', select: { kind: 'count', count: 20 } })),
  ),
  v(
    'console subscribe-OLD since (UTCTime)',
    hex('30 2c', H.foo, 'a0 15 a0 13 a1 11 a0 0f 17 0d 32 34 30 31 30 32 30 33 30 34 30 35 5a'),
    wire(
      ':foo',
      cmd({ type: 'console-subscribe', release: '2.0', select: { kind: 'since', since: T_2024 } }),
    ),
  ),
  v(
    'console add 4, sequence 1',
    hex(
      '30 22 30 17 02 01 05 04 08 00 00 00 00 00 00 00 01 0c 08 75 73 65 72 3a 77 65 62',
      'a0 07 a0 05 a0 03 02 01 04',
    ),
    wire('user:web', cmd({ type: 'console-add', limit: 4n }), 1n),
  ),
  v(
    'console add (NULL form)',
    hex(
      '30 21 30 17 02 01 05 04 08 00 00 00 00 00 00 00 01 0c 08 75 73 65 72 3a 77 65 62',
      'a0 06 a0 04 a0 02 05 00',
    ),
    wire('user:web', cmd({ type: 'console-add', limit: null }), 1n),
  ),
  v(
    'console list-inactive',
    hex('30 1e', H.user, 'a0 06 a0 04 a3 02 05 00'),
    wire('user:', cmd({ type: 'console-list-inactive' })),
  ),
  v(
    'data console',
    hex('30 33', H.foo, 'a3 1c a3 1a 30 18', GT_2024, HELLO),
    wire(':foo', data({ type: 'console', timestamp: T_2024, line: ascii('hello') })),
  ),
  v(
    'data console-OLD',
    hex('30 31', H.foo, 'a3 1a a0 18 30 16 17 0d 32 34 30 31 30 32 30 33 30 34 30 35 5a', HELLO),
    wire(':foo', data({ type: 'console-old', timestamp: T_2024, line: ascii('hello') })),
  ),
];

const infoTags: [InfoRelease, string][] = [
  ['2.7', 'b3'],
  ['2.0', 'a7'],
  ['2.1', 'ad'],
  ['2.4', 'af'],
  ['2.6', 'b2'],
];

const CONFIG_MIN =
  '30 20 a0 02 05 00 01 01 00 04 03 49 4d 47 01 01 ff a0 02 05 00 31 03 02 01 00 02 01 20 a3 03 02 01 01';
const CONFIG_V4 = '30 19 a0 02 05 00 01 01 00 04 03 49 4d 47 01 01 ff a0 02 05 00 02 01 00 02 01 20';
const CONFIG_V3 = '30 16 a0 02 05 00 01 01 00 04 03 49 4d 47 a0 02 05 00 02 01 00 02 01 20';
const { cpuids: _c, cpus: _p, linuxBootPartition: _l, ...v4Base } = MINIMAL_CONFIG;
const V4 = { ...v4Base, cpuid: 0 };
const { startup: _s, addName: _a, ...V3 } = V4;

const unikernel: Vector[] = [
  ...infoTags.map(([release, tag]) =>
    v(
      `info ${release} (${tag})`,
      hex('30 1a', H.root, `a0 06 a3 04 ${tag} 02 05 00`),
      wire(':', cmd({ type: 'unikernel-info', release })),
    ),
  ),
  v(
    'restart-2.0 [12]',
    hex('30 1a', H.root, 'a0 06 a3 04 ac 02 05 00'),
    wire(':', cmd({ type: 'unikernel-restart', form: 'legacy' })),
  ),
  v(
    'destroy',
    hex('30 1d', H.foo, 'a0 06 a3 04 a3 02 05 00'),
    wire(':foo', cmd({ type: 'unikernel-destroy' })),
  ),
  v(
    'get level 0',
    hex('30 1e', H.foo, 'a0 07 a3 05 ab 03 02 01 00'),
    wire(':foo', cmd({ type: 'unikernel-get', level: 0 })),
  ),
  v(
    'restart [14][0]',
    hex('30 1f', H.foo, 'a0 08 a3 06 ae 04 a0 02 05 00'),
    wire(':foo', cmd({ type: 'unikernel-restart', form: 'keep' })),
  ),
  v(
    'restart [14][3]',
    hex(
      '30 33',
      H.foo,
      'a0 1c a3 1a ae 18 a3 16 30 14 a0 02 05 00 01 01 ff 31 03 02 01 00 02 01 40 a3 03 02 01 01',
    ),
    wire(
      ':foo',
      cmd({
        type: 'unikernel-restart',
        form: '2.7',
        args: {
          failBehaviour: { kind: 'quit' },
          startup: null,
          addName: true,
          cpuids: [0],
          memory: 64,
          blocks: [],
          bridges: [],
          arguments: null,
          cpus: 1,
          linuxBootPartition: null,
        },
      }),
    ),
  ),
  v(
    'restart [14][2]',
    hex('30 2c', H.foo, 'a0 15 a3 13 ae 11 a2 0f 30 0d a0 02 05 00 01 01 ff 02 01 00 02 01 40'),
    wire(
      ':foo',
      cmd({
        type: 'unikernel-restart',
        form: '2.6',
        args: {
          failBehaviour: { kind: 'quit' },
          startup: null,
          addName: true,
          cpuid: 0,
          memory: 64,
          blocks: [],
          bridges: [],
          arguments: null,
        },
      }),
    ),
  ),
  v(
    'restart [14][1]',
    hex('30 29', H.foo, 'a0 12 a3 10 ae 0e a1 0c 30 0a a0 02 05 00 02 01 00 02 01 40'),
    wire(
      ':foo',
      cmd({
        type: 'unikernel-restart',
        form: '2.4',
        args: {
          failBehaviour: { kind: 'quit' },
          cpuid: 0,
          memory: 64,
          blocks: [],
          bridges: [],
          arguments: null,
        },
      }),
    ),
  ),
  v(
    'create [20]',
    hex('30 3f', H.hello, 'a0 26 a3 24 b4 22', CONFIG_MIN),
    wire(':hello', cmd({ type: 'unikernel-create', force: false, release: '2.7', config: MINIMAL_CONFIG })),
  ),
  v(
    'force-create [21]',
    hex('30 3f', H.hello, 'a0 26 a3 24 b5 22', CONFIG_MIN),
    wire(':hello', cmd({ type: 'unikernel-create', force: true, release: '2.7', config: MINIMAL_CONFIG })),
  ),
  v(
    'create-2.6 [16]',
    hex('30 38', H.hello, 'a0 1f a3 1d b0 1b', CONFIG_V4),
    wire(':hello', cmd({ type: 'unikernel-create', force: false, release: '2.6', config: V4 })),
  ),
  v(
    'create-2.0 [9]',
    hex('30 35', H.hello, 'a0 1c a3 1a a9 18', CONFIG_V3),
    wire(':hello', cmd({ type: 'unikernel-create', force: false, release: '2.0', config: V3 })),
  ),
];

const RICH = `30 81 87 a0 02 05 00 01 01 ff 04 02 78 9c 02 01 0a 01 01 00 a1 02 31 00 31 06 02 01 00 02 01 01
02 01 40 a0 11 31 0f 30 0d 0c 07 73 74 6f 72 61 67 65 02 02 10 00 a1 28 31 26 30 0c 0c 0a 6d 61
6e 61 67 65 6d 65 6e 74 30 16 0c 07 73 65 72 76 69 63 65 0c 03 62 72 30 04 06 00 80 41 01 02 03
a2 23 30 21 0c 12 2d 2d 69 70 76 34 3d 31 30 2e 30 2e 30 2e 32 2f 32 34 0c 02 2d 6c 0c 07 2a 3a
64 65 62 75 67 a3 03 02 01 01`;

const RICH_CONFIG = {
  typ: 'solo5',
  compressed: true,
  image: hex('78 9c'),
  startup: 10,
  addName: false,
  failBehaviour: { kind: 'restart', exitCodes: [] },
  cpuids: [0, 1],
  memory: 64,
  blocks: [{ device: 'storage', hostDevice: null, sectorSize: 4096 }],
  bridges: [
    { netif: 'management', bridge: null, mac: null },
    { netif: 'service', bridge: 'br0', mac: MAC },
  ],
  arguments: ['--ipv4=10.0.0.2/24', '-l', '*:debug'],
  cpus: 1,
  linuxBootPartition: null,
} as const;

const POLICY_512 = policy({ cpuids: [0], vms: 1, memory: 512, block: null, bridges: [] });

const policyBlock: Vector[] = [
  v(
    'policy add on arc:',
    hex(
      '30 2b 30 13 02 01 05 04 08 00 00 00 00 00 00 00 00 0c 04 61 72 63 3a a0 14 a4 12 a1 10',
      '30 0e 30 03 02 01 00 02 01 01 02 02 02 00 30 00',
    ),
    wire('arc:', cmd({ type: 'policy-add', policy: POLICY_512 })),
  ),
  v(
    'policy add on user:',
    hex(
      '30 40',
      H.user,
      'a0 28 a4 26 a1 24 30 22 30 06 02 01 00 02 01 01 02 01 10 02 02 04 00 02 01 64 30 0e 0c 03 62 72 30 0c 07 73 65 72 76 69 63 65',
    ),
    wire(
      'user:',
      cmd({
        type: 'policy-add',
        policy: policy({ cpuids: [0, 1], vms: 16, memory: 1024, block: 100, bridges: ['br0', 'service'] }),
      }),
    ),
  ),
  v('policy info', hex('30 1a', H.root, 'a0 06 a4 04 a0 02 05 00'), wire(':', cmd({ type: 'policy-info' }))),
  v(
    'policy remove',
    hex('30 1a', H.root, 'a0 06 a4 04 a2 02 05 00'),
    wire(':', cmd({ type: 'policy-remove' })),
  ),
  v(
    'block add 10',
    hex('30 1f', H.disk, 'a0 07 a5 05 a1 03 02 01 0a'),
    wire(':disk', cmd({ type: 'block-add', size: 10 })),
  ),
  v(
    'block info',
    hex('30 1e', H.disk, 'a0 06 a5 04 a0 02 05 00'),
    wire(':disk', cmd({ type: 'block-info' })),
  ),
  v(
    'block remove',
    hex('30 1e', H.disk, 'a0 06 a5 04 a2 02 05 00'),
    wire(':disk', cmd({ type: 'block-remove' })),
  ),
  v(
    'block dump 0',
    hex('30 1f', H.disk, 'a0 07 a5 05 a6 03 02 01 00'),
    wire(':disk', cmd({ type: 'block-dump', level: 0 })),
  ),
  v(
    'block set FALSE',
    hex('30 1f', H.disk, 'a0 07 a5 05 a7 03 01 01 00'),
    wire(':disk', cmd({ type: 'block-set', compressed: false })),
  ),
  v(
    'block add-OLD',
    hex('30 24', H.disk, 'a0 0c a5 0a a3 08 30 06 02 01 0a 01 01 00'),
    wire(':disk', cmd({ type: 'block-add-old', size: 10, compressed: false, data: null })),
  ),
  v(
    'block set-OLD',
    hex('30 25', H.disk, 'a0 0d a5 0b a4 09 30 07 01 01 00 04 02 41 42'),
    wire(':disk', cmd({ type: 'block-set-old', compressed: false, data: ascii('AB') })),
  ),
  v(
    'block dump-OLD 0',
    hex('30 1f', H.disk, 'a0 07 a5 05 a5 03 02 01 00'),
    wire(':disk', cmd({ type: 'block-dump-old', level: 0 })),
  ),
];

const stats: Vector[] = [
  v(
    'stats subscribe',
    hex('30 1d', H.foo, 'a0 06 a1 04 a2 02 05 00'),
    wire(':foo', cmd({ type: 'stats-subscribe' })),
  ),
  v(
    'stats initial',
    hex('30 1a', H.root, 'a0 06 a1 04 a3 02 05 00'),
    wire(':', cmd({ type: 'stats-initial' })),
  ),
  v(
    'stats add',
    hex(
      '30 39 30 13 02 01 05 04 08 00 00 00 00 00 00 00 01 0c 04 3a 66 6f 6f a0 22 a1 20 a0 1e 30 1c',
      '0c 00 02 02 04 d2 30 14 30 12 0c 07 73 65 72 76 69 63 65 0c 07 76 6d 6d 74 61 70 30',
    ),
    wire(
      ':foo',
      cmd({ type: 'stats-add', vmmdev: '', pid: 1234, network: [{ bridge: 'service', tap: 'vmmtap0' }] }),
      1n,
    ),
  ),
];

const DIGEST = hex('aa×32');
const INFO_27: UnikernelInfo = {
  typ: 'solo5',
  startup: null,
  failBehaviour: { kind: 'quit' },
  cpuids: [0],
  memory: 32,
  digest: DIGEST,
  blocks: [],
  bridges: [{ netif: 'service', bridge: 'br0', mac: MAC }],
  arguments: null,
  started: T_2024,
  cpus: 1,
  linuxBootPartition: null,
};
const INFO_NET = 'a1 1a 31 18 30 16 0c 07 73 65 72 76 69 63 65 0c 03 62 72 30 04 06 00 80 41 01 02 03';
const INFO_13 = hex(
  '30 81 8f',
  H.hello,
  'a1 76 ad 74 30 72 30 70 0c 06 3a 68 65 6c 6c 6f 30 66 a0 02 05 00 a0 02 05 00 31 03 02 01 00 02 01 20 04 20 aa×32',
  INFO_NET,
  'a3 11',
  GT_2024,
  'a4 03 02 01 01',
);
const infoOld = (tag: string) =>
  hex(
    '30 81 88',
    H.hello,
    `a1 6f ${tag} 6d 30 6b 30 69 0c 06 3a 68 65 6c 6c 6f 30 5f a0 02 05 00 a0 02 05 00 02 01 00 02 01 20 04 20 aa×32`,
    INFO_NET,
    'a3 11',
    GT_2024,
  );
const INFO_5 = hex(
  '30 75',
  H.hello,
  'a1 5c a5 5a 30 58 30 56 0c 06 3a 68 65 6c 6c 6f 30 4c a0 02 05 00 a0 02 05 00 02 01 00 02 01 20 04 20 aa×32',
  INFO_NET,
);

/** One 2.7 info value, shaped by `infoReply` for each release, must give each release's bytes. */
const infoWire = (release: InfoRelease) =>
  wire(':hello', reply(infoReply(release, [{ name: name(':hello'), info: INFO_27 }])));

const replies: Vector[] = [
  v('success empty', hex('30 1b', H.foo, 'a1 04 a0 02 05 00'), wire(':foo', reply({ type: 'empty' }))),
  v(
    'success string created',
    hex('30 2c', H.foo, 'a1 15 a1 13 0c 11 63 72 65 61 74 65 64 20 75 6e 69 6b 65 72 6e 65 6c'),
    wire(':foo', reply({ type: 'string', text: 'created unikernel' })),
  ),
  v(
    'success string destroyed',
    hex('30 2e', H.foo, 'a1 17 a1 15 0c 13 64 65 73 74 72 6f 79 65 64 20 75 6e 69 6b 65 72 6e 65 6c'),
    wire(':foo', reply({ type: 'string', text: 'destroyed unikernel' })),
  ),
  v(
    'failure unknown command',
    hex('30 28', H.foo, 'a2 11 0c 0f 75 6e 6b 6e 6f 77 6e 20 63 6f 6d 6d 61 6e 64'),
    wire(':foo', { kind: 'failure', message: 'unknown command' }),
  ),
  v(
    'failure destroy: not found',
    hex('30 2b', H.foo, 'a2 14 0c 12 64 65 73 74 72 6f 79 3a 20 6e 6f 74 20 66 6f 75 6e 64'),
    wire(':foo', { kind: 'failure', message: 'destroy: not found' }),
  ),
  v(
    'policies',
    hex('30 2d', H.root, 'a1 19 a2 17 30 15 30 13 0c 01 3a 30 0e 30 03 02 01 00 02 01 01 02 02 02 00 30 00'),
    wire(':', reply({ type: 'policies', entries: [{ name: name(':'), policy: POLICY_512 }] })),
  ),
  v(
    'block devices',
    hex('30 2b', H.disk, 'a1 13 a4 11 30 0f 30 0d 0c 05 3a 64 69 73 6b 02 01 0a 01 01 00'),
    wire(
      ':disk',
      reply({ type: 'block-devices', entries: [{ name: name(':disk'), size: 10, active: false }] }),
    ),
  ),
  v(
    'unikernel image',
    hex('30 23', H.foo, 'a1 0c a6 0a 30 08 01 01 00 04 03 49 4d 47'),
    wire(':foo', reply({ type: 'unikernel-image', compressed: false, image: ascii('IMG') })),
  ),
  v(
    'block-device-image TRUE',
    hex('30 1d', H.disk, 'a1 05 aa 03 01 01 ff'),
    wire(':disk', reply({ type: 'block-device-image', compressed: true })),
  ),
  v(
    'block-image-OLD',
    hex('30 23', H.disk, 'a1 0b a7 09 30 07 01 01 00 04 02 41 42'),
    wire(':disk', reply({ type: 'block-image-old', compressed: false, image: ascii('AB') })),
  ),
  v(
    'consoles',
    hex('30 22', H.user, 'a1 0a ac 08 30 06 0c 04 3a 6f 6c 64'),
    wire('user:', reply({ type: 'consoles', names: [name(':old')] })),
  ),
  v(
    'data block some-data',
    hex('30 20', H.disk, 'a3 08 a4 06 a0 04 04 02 41 42'),
    wire(':disk', data({ type: 'block', data: ascii('AB') })),
  ),
  v(
    'data block no-data',
    hex('30 1e', H.disk, 'a3 06 a4 04 a1 02 05 00'),
    wire(':disk', data({ type: 'block', data: null })),
  ),
  v('unikernel info [13]', INFO_13, infoWire('2.7')),
  v('unikernel info [11]', infoOld('ab'), infoWire('2.6')),
  v('unikernel info [9]', infoOld('a9'), infoWire('2.4')),
  v('unikernel info [8]', infoOld('a8'), infoWire('2.1')),
  v('unikernel info [5]', INFO_5, infoWire('2.0')),
];

const Z8 = '04 08 00×8';
const STATS = hex(
  '30 82 01 bc',
  H.hello,
  'a3 82 01 a1 a1 82 01 9d 30 82 01 99',
  '30 81 ae',
  '30 0f 04 08 00 00 00 00 00 00 00 01 02 03 07 a1 20',
  '30 0f 04 08 00 00 00 00 00 00 00 00 02 03 03 d0 90',
  '04 08 00 00 00 00 00 00 00 64',
  Z8,
  Z8,
  Z8,
  '04 08 00 00 00 00 00 00 00 0a',
  ...Array(7).fill(Z8),
  '04 08 00 00 00 00 00 00 00 03  04 08 00 00 00 00 00 00 00 04',
  '30 81 95 30 81 92',
  '0c 07 73 65 72 76 69 63 65 02 02 10 43 02 01 00 02 01 00 02 01 00 02 02 05 dc',
  Z8,
  '04 08 00 00 00 00 00 00 00 05',
  Z8,
  '04 08 00 00 00 00 00 00 00 06',
  Z8,
  Z8,
  '04 08 00 00 00 00 00 00 01 2c  04 08 00 00 00 00 00 00 01 90',
  ...Array(4).fill(Z8),
  'a1 4e',
  '04 08 00 00 00 00 00 10 00 00  04 08 00 00 00 00 00 00 00 64',
  '04 08 00 00 00 00 00 00 00 05  04 08 00 00 00 00 00 00 00 07  04 08 00 00 00 00 00 00 00 07',
  '04 08 00 00 00 00 00 1a b3 f0  02 01 00',
  '30 0d 04 08 00 00 00 00 65 93 7d 25 02 01 00',
);

const STATS_VALUE = {
  rusage: {
    utime: { seconds: 1n, microseconds: 500000 },
    stime: { seconds: 0n, microseconds: 250000 },
    maxrss: 100n,
    ixrss: 0n,
    idrss: 0n,
    isrss: 0n,
    minflt: 10n,
    majflt: 0n,
    nswap: 0n,
    inblock: 0n,
    outblock: 0n,
    msgsnd: 0n,
    msgrcv: 0n,
    nsignals: 0n,
    nvcsw: 3n,
    nivcsw: 4n,
  },
  ifdata: [
    {
      bridge: 'service',
      flags: 0x1043,
      sendLength: 0,
      maxSendLength: 0,
      sendDrops: 0,
      mtu: 1500,
      baudrate: 0n,
      inputPackets: 5n,
      inputErrors: 0n,
      outputPackets: 6n,
      outputErrors: 0n,
      collisions: 0n,
      inputBytes: 300n,
      outputBytes: 400n,
      inputMcast: 0n,
      outputMcast: 0n,
      inputDropped: 0n,
      outputDropped: 0n,
    },
  ],
  vmmStats: null,
  kinfoMem: {
    vsize: 1048576n,
    rss: 100n,
    tsize: 5n,
    dsize: 7n,
    ssize: 7n,
    runtime: 1750000n,
    cow: 0,
    start: { seconds: 1704164645n, microseconds: 0 },
  },
};

const statsData: Vector[] = [
  v('statistics data', STATS, wire(':hello', data({ type: 'statistics', stats: STATS_VALUE }))),
];

describe.each([
  ['§6.2 console', console_],
  ['§6.3 unikernel commands', unikernel],
  ['§6.4 policy and block commands', policyBlock],
  ['§6.5 statistics commands', stats],
  ['§6.6 replies and data', replies],
  ['§6.6 statistics data', statsData],
])('%s', (_section, vectors) => {
  test.each(vectors.map((vector) => [vector.title, vector] as const))('%s', (_title, vector) => {
    expect(ok(decodeWire(vector.bytes))).toEqual(vector.value);
    expect(toHex(ok(encodeWire(vector.value)))).toBe(toHex(vector.bytes));
  });
});

test('§6.1 headers', () => {
  for (const [text, header] of [
    [':', H.root],
    [':foo', H.foo],
    [':disk', H.disk],
    [':hello', H.hello],
    ['user:', H.user],
  ] as const) {
    const bytes = ok(encodeWire(wire(text, reply({ type: 'empty' }))));
    expect(toHex(bytes.subarray(2, 2 + hex(header).length))).toBe(toHex(hex(header)));
  }
});

test('§6.2 a fractional time is written with exactly three digits', () => {
  const since = new Date('2024-01-02T03:04:05.25Z');
  const bytes = ok(
    encodeWire(
      wire(':foo', cmd({ type: 'console-subscribe', release: '2.1', select: { kind: 'since', since } })),
    ),
  );
  expect(toHex(bytes)).toContain(toHex(hex('18 13', toHex(ascii('20240102030405.250Z')))));
  expect(ok(decodeWire(bytes))).toEqual(
    wire(':foo', cmd({ type: 'console-subscribe', release: '2.1', select: { kind: 'since', since } })),
  );
});

test('§2.4 max_int travels as 02 08 3f ff … (the root policy)', () => {
  const root = policy({ cpuids: [0], vms: MAX_VMS, memory: 1, block: null, bridges: [] });
  const bytes = ok(encodeWire(wire(':', cmd({ type: 'policy-add', policy: root }))));
  expect(toHex(bytes)).toContain('02 08 3f ff ff ff ff ff ff ff');
  expect(ok(decodeWire(bytes))).toEqual(wire(':', cmd({ type: 'policy-add', policy: root })));
});

describe('§6.3 configurations on their own', () => {
  test('the rich UnikernelConfig (SET sorted by encoding: management before service)', () => {
    const decoded = readConfig(new Reader(hex(RICH)));
    expect(decoded).toEqual(RICH_CONFIG);
    expect(toHex(toBytes(encConfig(decoded)))).toBe(toHex(hex(RICH)));
    const reversed = { ...decoded, bridges: [...decoded.bridges].reverse() };
    expect(toHex(toBytes(encConfig(reversed)))).toBe(toHex(hex(RICH)));
  });

  test('the minimal configuration in its three shapes', () => {
    expect(readConfig(new Reader(hex(CONFIG_MIN)))).toEqual(MINIMAL_CONFIG);
    expect(readConfigV4(new Reader(hex(CONFIG_V4)))).toEqual(V4);
    expect(readConfigV3(new Reader(hex(CONFIG_V3)))).toEqual(V3);
    expect(toHex(toBytes(encConfigV4(V4)))).toBe(toHex(hex(CONFIG_V4)));
    expect(toHex(toBytes(encConfigV3(V3)))).toBe(toHex(hex(CONFIG_V3)));
  });

  test('the UnikernelInfo entry with startup, two CPUs, a block device and arguments', () => {
    const bytes = hex(
      '30 74 a0 02 05 00 02 01 0a a0 02 05 00 31 06 02 01 00 02 01 01 02 01 40 04 20 aa×32',
      'a0 1a 31 18 30 16 0c 07 73 74 6f 72 61 67 65 0c 04 64 69 73 6b 02 02 02 00 02 01 0a',
      'a2 06 30 04 0c 02 2d 6c a3 11',
      GT_2024,
      'a4 03 02 01 01',
    );
    const value: UnikernelInfo = {
      ...INFO_27,
      startup: 10,
      cpuids: [0, 1],
      memory: 64,
      blocks: [{ device: 'storage', hostDevice: 'disk', sectorSize: 512, blockSize: 10 }],
      bridges: [],
      arguments: ['-l'],
    };
    expect(readInfo(new Reader(bytes))).toEqual(value);
    expect(toHex(toBytes(encInfo(value)))).toBe(toHex(bytes));
  });
});

describe('§6.7 certificate extensions', () => {
  test.each([
    [
      'console subscribe count 20 (U)',
      '30 0c 02 01 05 a0 07 a2 05 a1 03 02 01 14',
      {
        type: 'console-subscribe',
        release: '2.1',
        select: { kind: 'count', count: 20 },
      },
    ],
    [
      'policy add (U)',
      '30 17 02 01 05 a4 12 a1 10 30 0e 30 03 02 01 00 02 01 01 02 02 02 00 30 00',
      {
        type: 'policy-add',
        policy: POLICY_512,
      },
    ],
    ['unikernel info [19]', '30 09 02 01 05 a3 04 b3 02 05 00', { type: 'unikernel-info', release: '2.7' }],
    ['unikernel destroy', '30 09 02 01 05 a3 04 a3 02 05 00', { type: 'unikernel-destroy' }],
    ['unikernel info [13]', '30 09 02 01 05 a3 04 ad 02 05 00', { type: 'unikernel-info', release: '2.1' }],
    ['policy info', '30 09 02 01 05 a4 04 a0 02 05 00', { type: 'policy-info' }],
    [
      '§7.1 the intermediate CA sub',
      '30 23 02 01 05 a4 1e a1 1c 30 1a 30 03 02 01 00 02 01 02 02 02 01 00 02 01 64 30 09 0c 07 73 65 72 76 69 63 65',
      {
        type: 'policy-add',
        policy: policy({ cpuids: [0], vms: 2, memory: 256, block: 100, bridges: ['service'] }),
      },
    ],
  ] as const)('%s', (_title, bytes, command) => {
    expect(ok(decodeCertExtension(hex(bytes)))).toEqual(command);
    expect(toHex(ok(encodeCertExtension(command as Command)))).toBe(toHex(hex(bytes)));
  });

  test('the whole extension (OID, not critical) is found inside a certificate structure', () => {
    const extension = hex('30 18 06 09 2b 06 01 04 01 83 85 2c 2a 04 0b 30 09 02 01 05 a3 04 b3 02 05 00');
    // Certificate { TBSCertificate { [0] { INTEGER 2 }, INTEGER 1, [3] { Extensions } }, NULL }
    const tbs = tlv('30', 'a0 03 02 01 02', '02 01 01', tlv('a3', tlv('30', toHex(extension))));
    const certificate = hex(tlv('30', tbs, '05 00'));
    const found = ok(findCertExtension(certificate));
    expect(found?.critical).toBe(false);
    expect(toHex(found?.value ?? new Uint8Array())).toBe('30 09 02 01 05 a3 04 b3 02 05 00');
    expect(ok(commandFromCertificate(certificate))).toEqual({ type: 'unikernel-info', release: '2.7' });
  });
});

describe('§6.8 state files', () => {
  test('State [6] with one unikernel and the root policy', () => {
    const bytes = hex(
      'a6 47 30 45 30 2c 30 2a 0c 06 3a 68 65 6c 6c 6f',
      CONFIG_MIN,
      '30 15 30 13 0c 01 3a 30 0e 30 03 02 01 00 02 01 01 02 02 02 00 30 00',
    );
    const state = {
      version: 6,
      unikernels: [{ name: name(':hello'), config: MINIMAL_CONFIG }],
      policies: [{ path: [], policy: POLICY_512 }],
    } as const;
    expect(ok(decodeState(bytes))).toEqual(state);
    expect(toHex(ok(encodeState(state)))).toBe(toHex(bytes));
  });

  test('State [6] empty and State [3] empty (2.1.0)', () => {
    expect(ok(decodeState(hex('a6 06 30 04 30 00 30 00')))).toEqual({
      version: 6,
      unikernels: [],
      policies: [],
    });
    expect(toHex(ok(encodeState({ version: 6, unikernels: [], policies: [] })))).toBe(
      'a6 06 30 04 30 00 30 00',
    );
    expect(ok(decodeState(hex('a3 02 30 00')))).toEqual({ version: 3, unikernels: [] });
  });
});

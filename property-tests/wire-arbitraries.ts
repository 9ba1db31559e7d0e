// fast-check generators for every wire value, in canonical form (SET OF elements in DER order,
// policies built by makePolicy), so that decode(encode(x)) must equal x exactly.

import fc from 'fast-check';
import { unwrap } from '../src/resources/errors.js';
import { childName, type Label, type Name, parseLabel, pathName } from '../src/resources/name.js';
import { MAX_VMS, makePolicy, type Policy } from '../src/resources/policy.js';
import { encBlockSpec, encNetSpec, macFromBytes } from '../src/wire/config.js';
import { compareBytes, type Der, enc, toBytes } from '../src/wire/der.js';
import { encInfoBlock, encInfoNet } from '../src/wire/info.js';
import type {
  BlockSpec,
  Command,
  CurrentState,
  Data,
  FailBehaviour,
  InfoBlock,
  InfoNet,
  Named,
  NetSpec,
  Reply,
  StatsData,
  Timeval,
  Typ,
  UnikernelArguments,
  UnikernelArgumentsV0,
  UnikernelArgumentsV1,
  UnikernelConfig,
  UnikernelConfigV2,
  UnikernelConfigV3,
  UnikernelConfigV4,
  UnikernelInfo,
  UnikernelInfoV3,
  UnikernelInfoV5,
  Wire,
} from '../src/wire/types.js';

/** SET OF elements in the order DER writes them (by complete encoding), so decode gives them back. */
const derSorted = <T>(items: readonly T[], encode: (item: T) => Der): T[] =>
  items
    .map((item) => ({ item, bytes: toBytes(encode(item)) }))
    .sort((a, b) => compareBytes(a.bytes, b.bytes))
    .map((x) => x.item);

const INT63 = { min: -(1n << 62n), max: (1n << 62n) - 1n };

export const int = fc.oneof(fc.integer({ min: -200, max: 70000 }), fc.maxSafeInteger());
export const count = fc.oneof(fc.nat({ max: 4096 }), fc.nat({ max: Number.MAX_SAFE_INTEGER }));
export const int64 = fc.bigInt({ min: -(1n << 63n), max: (1n << 63n) - 1n });
export const text = fc.oneof(fc.string({ maxLength: 12 }), fc.string({ unit: 'grapheme', maxLength: 6 }));
export const bytes = fc.uint8Array({ maxLength: 48 });
export const time = fc.date({
  min: new Date('0000-01-01T00:00:00.000Z'),
  max: new Date('9999-12-31T23:59:59.999Z'),
  noInvalidDate: true,
});
/** UTCTime: whole seconds, 1950–2049. */
export const utcTime = fc
  .integer({ min: Date.UTC(1950, 0, 1) / 1000, max: Date.UTC(2049, 11, 31, 23, 59, 59) / 1000 })
  .map((s) => new Date(s * 1000));
const mac = fc.uint8Array({ minLength: 6, maxLength: 6 }).map(macFromBytes);
const orNull = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: null });
const list = <T>(arb: fc.Arbitrary<T>, maxLength = 3) => fc.array(arb, { maxLength });

const labelText = fc.oneof(
  fc.stringMatching(/^[a-z0-9.][a-z0-9.-]{0,7}$/),
  fc.stringMatching(/^[a-z0-9.][a-z0-9.-]{62}$/),
);
const label: fc.Arbitrary<Label> = labelText.map((t) => unwrap(parseLabel(t)));
export const name: fc.Arbitrary<Name> = fc
  .tuple(list(label), orNull(label))
  .map(([path, last]) => (last === null ? pathName(path) : childName(path, last)));

export const policy: fc.Arbitrary<Policy> = fc
  .record({
    vms: fc.bigInt({ min: 0n, max: MAX_VMS }),
    memory: count,
    cpuids: list(count, 4),
    block: orNull(count),
    bridges: list(fc.string({ minLength: 1, maxLength: 8 })),
  })
  .map((input) => unwrap(makePolicy(input)));

const typ: fc.Arbitrary<Typ> = fc.constantFrom('solo5', 'bhyve');
const intSet = (arb = int) => list(arb, 4).map((items) => derSorted(items, enc.integer));
const failBehaviour: fc.Arbitrary<FailBehaviour> = fc.oneof(
  fc.constant({ kind: 'quit' } as const),
  intSet().map((exitCodes) => ({ kind: 'restart', exitCodes }) as const),
);
const blockSpec: fc.Arbitrary<BlockSpec> = fc.record({
  device: text,
  hostDevice: orNull(text),
  sectorSize: orNull(int),
});
const netSpec: fc.Arbitrary<NetSpec> = fc.record({ netif: text, bridge: orNull(text), mac: orNull(mac) });
const blockSpecs = list(blockSpec).map((items) => derSorted(items, encBlockSpec));
const netSpecs = list(netSpec).map((items) => derSorted(items, encNetSpec));
const args = orNull(list(text));

const head = { failBehaviour, startup: orNull(int), addName: fc.boolean() };
const tail = { memory: int, blocks: blockSpecs, bridges: netSpecs, arguments: args };
const image = { typ, compressed: fc.boolean(), image: bytes };

export const argumentsV0: fc.Arbitrary<UnikernelArgumentsV0> = fc.record({
  failBehaviour,
  cpuid: int,
  ...tail,
});
export const argumentsV1: fc.Arbitrary<UnikernelArgumentsV1> = fc.record({ ...head, cpuid: int, ...tail });
export const arguments27: fc.Arbitrary<UnikernelArguments> = fc.record({
  ...head,
  cpuids: intSet(),
  ...tail,
  cpus: int,
  linuxBootPartition: orNull(text),
});
export const config: fc.Arbitrary<UnikernelConfig> = fc.record({
  ...image,
  ...head,
  cpuids: intSet(),
  ...tail,
  cpus: int,
  linuxBootPartition: orNull(text),
});
export const configV4: fc.Arbitrary<UnikernelConfigV4> = fc.record({
  ...image,
  ...head,
  cpuid: int,
  ...tail,
});
export const configV3: fc.Arbitrary<UnikernelConfigV3> = fc.record({
  ...image,
  failBehaviour,
  cpuid: int,
  ...tail,
});
export const configV2: fc.Arbitrary<UnikernelConfigV2> = fc.record({
  ...image,
  failBehaviour,
  cpuid: int,
  memory: int,
  blocks: list(text).map((items) => derSorted(items, enc.utf8)),
  bridges: list(fc.record({ netif: text, bridge: orNull(text) })),
  arguments: args,
});

export const command: fc.Arbitrary<Command> = fc.oneof(
  fc.record({ type: fc.constant('console-add'), limit: orNull(fc.bigInt(INT63)) }),
  fc.record({
    type: fc.constant('console-subscribe'),
    release: fc.constant('2.1'),
    select: fc.oneof(
      fc.record({ kind: fc.constant('since'), since: time }),
      fc.record({ kind: fc.constant('count'), count: int }),
    ),
  }),
  fc.record({
    type: fc.constant('console-subscribe'),
    release: fc.constant('2.0'),
    select: fc.oneof(
      fc.record({ kind: fc.constant('since'), since: utcTime }),
      fc.record({ kind: fc.constant('count'), count: int }),
    ),
  }),
  fc.constantFrom(
    { type: 'console-list-inactive' },
    { type: 'stats-remove' },
    { type: 'stats-subscribe' },
    { type: 'stats-initial' },
    { type: 'unikernel-destroy' },
    { type: 'policy-info' },
    { type: 'policy-remove' },
    { type: 'block-info' },
    { type: 'block-remove' },
    { type: 'unikernel-restart', form: 'legacy' },
    { type: 'unikernel-restart', form: 'keep' },
  ),
  fc.record({
    type: fc.constant('stats-add'),
    vmmdev: text,
    pid: int,
    network: list(fc.record({ bridge: text, tap: text })),
  }),
  fc.record({
    type: fc.constant('unikernel-info'),
    release: fc.constantFrom('2.0', '2.1', '2.4', '2.6', '2.7'),
  }),
  fc.record({
    type: fc.constant('unikernel-create'),
    force: fc.boolean(),
    release: fc.constant('2.0'),
    config: configV3,
  }),
  fc.record({
    type: fc.constant('unikernel-create'),
    force: fc.boolean(),
    release: fc.constant('2.6'),
    config: configV4,
  }),
  fc.record({
    type: fc.constant('unikernel-create'),
    force: fc.boolean(),
    release: fc.constant('2.7'),
    config,
  }),
  fc.record({ type: fc.constant('unikernel-get'), level: int }),
  fc.record({ type: fc.constant('unikernel-restart'), form: fc.constant('2.4'), args: argumentsV0 }),
  fc.record({ type: fc.constant('unikernel-restart'), form: fc.constant('2.6'), args: argumentsV1 }),
  fc.record({ type: fc.constant('unikernel-restart'), form: fc.constant('2.7'), args: arguments27 }),
  fc.record({ type: fc.constant('policy-add'), policy }),
  fc.record({ type: fc.constant('block-add'), size: int }),
  fc.record({ type: fc.constant('block-add-old'), size: int, compressed: fc.boolean(), data: orNull(bytes) }),
  fc.record({ type: fc.constant('block-set-old'), compressed: fc.boolean(), data: bytes }),
  fc.record({ type: fc.constantFrom('block-dump-old', 'block-dump'), level: int }),
  fc.record({ type: fc.constant('block-set'), compressed: fc.boolean() }),
) as fc.Arbitrary<Command>;

const infoBlock: fc.Arbitrary<InfoBlock> = fc.record({
  device: text,
  hostDevice: text,
  sectorSize: int,
  blockSize: int,
});
const infoNet: fc.Arbitrary<InfoNet> = fc.record({ netif: text, bridge: text, mac });
const infoBlocks = list(infoBlock).map((items) => derSorted(items, encInfoBlock));
const infoNets = list(infoNet).map((items) => derSorted(items, encInfoNet));
const infoCommon = { typ, failBehaviour, memory: int, digest: bytes, arguments: args };

const info27: fc.Arbitrary<UnikernelInfo> = fc.record({
  ...infoCommon,
  startup: orNull(int),
  cpuids: intSet(),
  blocks: infoBlocks,
  bridges: infoNets,
  started: time,
  cpus: int,
  linuxBootPartition: orNull(text),
});
const infoV5: fc.Arbitrary<UnikernelInfoV5> = fc.record({
  ...infoCommon,
  startup: orNull(int),
  cpuid: int,
  blocks: infoBlocks,
  bridges: infoNets,
  started: orNull(time),
});
const infoV3: fc.Arbitrary<UnikernelInfoV3> = fc.record({
  ...infoCommon,
  cpuid: int,
  blocks: blockSpecs,
  bridges: netSpecs,
  started: orNull(time),
});
const named = <T>(arb: fc.Arbitrary<T>): fc.Arbitrary<Named<T>[]> => list(fc.record({ name, info: arb }));
const drop =
  <K extends string>(key: K) =>
  <T extends Record<K, unknown>>(value: T): Omit<T, K> => {
    const { [key]: _, ...rest } = value;
    return rest;
  };

export const reply: fc.Arbitrary<Reply> = fc.oneof(
  fc.constant({ type: 'empty' }),
  fc.record({ type: fc.constant('string'), text }),
  fc.record({ type: fc.constant('policies'), entries: list(fc.record({ name, policy })) }),
  fc.record({ type: fc.constant('unikernels-old'), entries: list(fc.record({ name, config: configV2 })) }),
  fc.record({
    type: fc.constant('block-devices'),
    entries: list(fc.record({ name, size: int, active: fc.boolean() })),
  }),
  fc.record({ type: fc.constant('unikernel-info'), release: fc.constant('2.7'), entries: named(info27) }),
  fc.record({ type: fc.constant('unikernel-info'), release: fc.constant('2.6'), entries: named(infoV5) }),
  fc.record({
    type: fc.constant('unikernel-info'),
    release: fc.constant('2.4'),
    entries: named(infoV5.map(drop('startup'))),
  }),
  fc.record({ type: fc.constant('unikernel-info'), release: fc.constant('2.1'), entries: named(infoV3) }),
  fc.record({
    type: fc.constant('unikernel-info'),
    release: fc.constant('2.0'),
    entries: named(infoV3.map(drop('started'))),
  }),
  fc.record({
    type: fc.constantFrom('unikernel-image', 'block-image-old'),
    compressed: fc.boolean(),
    image: bytes,
  }),
  fc.record({ type: fc.constant('block-device-image'), compressed: fc.boolean() }),
  fc.record({ type: fc.constant('consoles'), names: list(name) }),
) as fc.Arbitrary<Reply>;

const timeval: fc.Arbitrary<Timeval> = fc.record({ seconds: int64, microseconds: int });
function counters<K extends string>(keys: readonly K[]): fc.Arbitrary<Record<K, bigint>> {
  return fc.tuple(...keys.map(() => int64)).map((values) => {
    const out: Partial<Record<K, bigint>> = {};
    keys.forEach((key, i) => {
      out[key] = values[i] as bigint;
    });
    return out as Record<K, bigint>;
  });
}

export const statsData: fc.Arbitrary<StatsData> = fc.record({
  rusage: fc
    .tuple(
      fc.record({ utime: timeval, stime: timeval }),
      counters(['maxrss', 'ixrss', 'idrss', 'isrss', 'minflt', 'majflt', 'nswap', 'inblock'] as const),
      counters(['outblock', 'msgsnd', 'msgrcv', 'nsignals', 'nvcsw', 'nivcsw'] as const),
    )
    .map(([a, b, c]) => ({ ...a, ...b, ...c })),
  ifdata: list(
    fc
      .tuple(
        fc.record({
          bridge: text,
          flags: int,
          sendLength: int,
          maxSendLength: int,
          sendDrops: int,
          mtu: int,
        }),
        counters([
          'baudrate',
          'inputPackets',
          'inputErrors',
          'outputPackets',
          'outputErrors',
          'collisions',
        ] as const),
        counters([
          'inputBytes',
          'outputBytes',
          'inputMcast',
          'outputMcast',
          'inputDropped',
          'outputDropped',
        ] as const),
      )
      .map(([a, b, c]) => ({ ...a, ...b, ...c })),
    2,
  ),
  vmmStats: orNull(list(fc.record({ key: text, value: int64 }))),
  kinfoMem: orNull(
    fc
      .tuple(
        counters(['vsize', 'rss', 'tsize', 'dsize', 'ssize', 'runtime'] as const),
        fc.record({ cow: int, start: timeval }),
      )
      .map(([a, b]) => ({ ...a, ...b })),
  ),
});

export const data: fc.Arbitrary<Data> = fc.oneof(
  fc.record({ type: fc.constant('console-old'), timestamp: utcTime, line: bytes }),
  fc.record({ type: fc.constant('statistics'), stats: statsData }),
  fc.record({ type: fc.constant('console'), timestamp: time, line: bytes }),
  fc.record({ type: fc.constant('block'), data: orNull(bytes) }),
) as fc.Arbitrary<Data>;

export const wire: fc.Arbitrary<Wire> = fc.record({
  header: fc.record({ version: fc.constant(5 as const), sequence: int64, name }),
  payload: fc.oneof(
    command.map((c) => ({ kind: 'command', command: c }) as const),
    reply.map((r) => ({ kind: 'reply', reply: r }) as const),
    text.map((message) => ({ kind: 'failure', message }) as const),
    data.map((d) => ({ kind: 'data', data: d }) as const),
  ),
});

/** A version 6 state with unique keys, in the pre-order encodeState writes. */
export const state: fc.Arbitrary<CurrentState> = fc
  .record({
    unikernels: fc.uniqueArray(fc.record({ name: name.filter((n) => n.label !== null), config }), {
      maxLength: 3,
      selector: (u) => [...u.name.path, u.name.label].join(':'),
    }),
    policies: fc.uniqueArray(fc.record({ path: list(label), policy }), {
      maxLength: 3,
      selector: (p) => p.path.join(':'),
    }),
  })
  .map(({ unikernels, policies }) => {
    const order = (a: readonly string[], b: readonly string[]) => {
      for (let i = 0; i < Math.min(a.length, b.length); i++)
        if (a[i] !== b[i]) return (a[i] as string) < (b[i] as string) ? -1 : 1;
      return a.length - b.length;
    };
    const key = (n: Name) => [...n.path, n.label as string];
    return {
      version: 6,
      unikernels: [...unikernels].sort((a, b) => order(key(a.name), key(b.name))),
      policies: [...policies].sort((a, b) => order(a.path, b.path)),
    };
  });

// State files: every version Albatross wrote decodes and upgrades to version 6 with the documented
// defaults, and encodes again (export writes 6, import tests write the others) in trie pre-order.

import { describe, expect, test } from 'vitest';
import { encConfig, encConfigV3, encConfigV4, encPolicy } from '../../src/wire/config.js';
import { type Der, enc, toBytes } from '../../src/wire/der.js';
import { decodeState, encodeState, upgradeState } from '../../src/wire/index.js';
import { encConfigV0, encConfigV1, encConfigV2 } from '../../src/wire/legacy.js';
import { encStatePolicies, sortStateNames, stateEntry, stateV6Head } from '../../src/wire/state.js';
import type {
  UnikernelConfig,
  UnikernelConfigV0,
  UnikernelConfigV1,
  UnikernelConfigV2,
  UnikernelConfigV3,
} from '../../src/wire/types.js';
import { ascii, hex, MINIMAL_CONFIG, name, ok, policy, tlv, toHex } from './helpers.js';

const entries = (items: [string, Der][]) =>
  enc.sequence(items.map(([key, value]) => enc.sequence([enc.utf8(key), value])));
const file = (version: number, body: Der) => toBytes(enc.explicit(version, body));
const ROOT_POLICY = policy({ cpuids: [0, 1], vms: 10, memory: 1024, block: 100, bridges: ['br0'] });

const V3: UnikernelConfigV3 = {
  typ: 'solo5',
  compressed: true,
  image: ascii('ZZ'),
  failBehaviour: { kind: 'restart', exitCodes: [] },
  cpuid: 1,
  memory: 32,
  blocks: [{ device: 'disk', hostDevice: null, sectorSize: null }],
  bridges: [{ netif: 'service', bridge: 'br0', mac: null }],
  arguments: ['forever'],
};
/** What every pre-2.6 shape upgrades to. */
const { cpuid: _cpuid, ...V3_REST } = V3;
const UPGRADED_V3: UnikernelConfig = {
  ...V3_REST,
  startup: null,
  addName: true,
  cpuids: [1],
  cpus: 1,
  linuxBootPartition: null,
};

describe('old versions decode and upgrade', () => {
  test('[3] as in the 2.1.0 state.bak: sub:ctl restarting on any exit', () => {
    const bytes = file(3, entries([['sub:ctl', encConfigV3(V3)]]));
    const state = ok(decodeState(bytes));
    expect(state).toEqual({ version: 3, unikernels: [{ name: name('sub:ctl'), config: V3 }] });
    expect(upgradeState(state)).toEqual({
      version: 6,
      unikernels: [{ name: name('sub:ctl'), config: UPGRADED_V3 }],
      policies: [],
    });
  });

  test('[4] and [5] carry policies; keys with or without the trailing colon are paths', () => {
    const v4 = file(
      4,
      enc.sequence([
        entries([[':a', encConfigV3(V3)]]),
        entries([
          [':', encPolicy(ROOT_POLICY)],
          ['user', encPolicy(ROOT_POLICY)],
        ]),
      ]),
    );
    const state = ok(decodeState(v4));
    expect(state.version === 4 && state.policies.map((p) => p.path)).toEqual([[], ['user']]);
    const { cpuid: _, ...rest } = V3;
    const configV4 = { ...rest, startup: 7, addName: false, cpuid: 3 };
    const v5 = ok(
      decodeState(file(5, enc.sequence([entries([['user:b', encConfigV4(configV4)]]), entries([])]))),
    );
    expect(upgradeState(v5).unikernels[0]?.config).toEqual({
      ...rest,
      startup: 7,
      addName: false,
      cpuids: [3],
      cpus: 1,
      linuxBootPartition: null,
    });
  });

  test('[2], [0] and [1] (1.x): block names, bridge names, the V0 image choice; dotted names are one label', () => {
    const v2: UnikernelConfigV2 = { ...V3, blocks: ['disk'], bridges: [{ netif: 'service', bridge: 'br0' }] };
    const s2 = ok(decodeState(file(2, entries([['foo.hello', encConfigV2(v2)]]))));
    expect(s2).toEqual({ version: 2, unikernels: [{ name: name(':foo.hello'), config: v2 }] });
    expect(upgradeState(s2).unikernels[0]?.config).toEqual(UPGRADED_V3);

    const v1: UnikernelConfigV1 = { ...V3, blocks: ['disk'], bridges: ['service'] };
    const s1 = ok(decodeState(file(0, entries([[':x', encConfigV1(v1)]]))));
    expect(upgradeState(s1).unikernels[0]?.config.bridges).toEqual([
      { netif: 'service', bridge: null, mac: null },
    ]);

    const v0: UnikernelConfigV0 = {
      cpuid: 2,
      memory: 64,
      block: 'disk',
      networks: ['net0'],
      arch: 'hvt-amd64-compressed',
      image: ascii('Z'),
      arguments: null,
    };
    const s0 = ok(decodeState(file(1, entries([[':y', encConfigV0(v0)]]))));
    expect(s0).toEqual({ version: 1, unikernels: [{ name: name(':y'), config: v0 }] });
    expect(upgradeState(s0).unikernels[0]?.config).toEqual({
      typ: 'solo5',
      compressed: true,
      image: ascii('Z'),
      startup: null,
      addName: true,
      failBehaviour: { kind: 'quit' },
      cpuids: [2],
      memory: 64,
      blocks: [{ device: 'disk', hostDevice: null, sectorSize: null }],
      bridges: [{ netif: 'net0', bridge: null, mac: null }],
      arguments: null,
      cpus: 1,
      linuxBootPartition: null,
    });
  });

  test('V0 hand-written: cpu, memory, no block, no networks, [1] arm64 image, arguments', () => {
    const bytes = hex(
      tlv(
        'a1',
        tlv(
          '30',
          tlv('30', '0c 02 3a 7a', tlv('30', '02 01 00 02 01 10 a1 03 04 01 41', tlv('30', '0c 01 2d'))),
        ),
      ),
    );
    expect(ok(decodeState(bytes))).toEqual({
      version: 1,
      unikernels: [
        {
          name: name(':z'),
          config: {
            cpuid: 0,
            memory: 16,
            block: null,
            networks: null,
            arch: 'hvt-arm64',
            image: ascii('A'),
            arguments: ['-'],
          },
        },
      ],
    });
  });
});

describe('writing version 6', () => {
  const at = (text: string) => ({ name: name(text), config: MINIMAL_CONFIG });
  const pol = (text: string) => ({
    path: name(text).label === null ? name(text).path : [...name(text).path, name(text).label as never],
    policy: ROOT_POLICY,
  });

  test('entries in trie pre-order: a node before its descendants, siblings ascending', () => {
    const state = {
      version: 6,
      unikernels: [at('beta:x'), at('alpha:beta:a'), at(':z'), at('alpha:a'), at(':b')],
      policies: [pol('beta:'), pol('alpha:beta:'), pol(':'), pol('alpha:')],
    } as const;
    const decoded = ok(decodeState(ok(encodeState(state))));
    expect(decoded.unikernels.map((u) => u.name)).toEqual(
      ['alpha:a', 'alpha:beta:a', ':b', 'beta:x', ':z'].map(name),
    );
    expect(decoded.version === 6 && decoded.policies.map((p) => p.path.join(':'))).toEqual([
      '',
      'alpha',
      'alpha:beta',
      'beta',
    ]);
  });

  test('equal states give equal bytes, and decoding gives the state back', () => {
    const state = { version: 6, unikernels: [at(':a'), at('u:b')], policies: [pol(':')] } as const;
    const bytes = ok(encodeState(state));
    expect(toHex(ok(encodeState({ ...state, unikernels: [...state.unikernels].reverse() })))).toBe(
      toHex(bytes),
    );
    expect(ok(decodeState(bytes))).toEqual(state);
  });
});

describe('writing every version (the import tests write Albatross files of any release)', () => {
  test('each version decodes back to itself; [3] as Albatross 2.1 writes it', () => {
    const { cpuid: _c, ...rest } = V3;
    const states = [
      { version: 3, unikernels: [{ name: name('sub:ctl'), config: V3 }] },
      {
        version: 4,
        unikernels: [{ name: name(':a'), config: V3 }],
        policies: [{ path: [], policy: ROOT_POLICY }],
      },
      {
        version: 5,
        unikernels: [{ name: name(':a'), config: { ...rest, startup: 3, addName: false, cpuid: 1 } }],
        policies: [],
      },
      { version: 2, unikernels: [{ name: name(':a'), config: { ...V3, blocks: ['d'], bridges: [] } }] },
      { version: 0, unikernels: [{ name: name(':a'), config: { ...V3, blocks: [], bridges: ['service'] } }] },
    ] as const;
    for (const state of states) expect(ok(decodeState(ok(encodeState(state))))).toEqual(state);
    // The hand-built [3] file of the first test above.
    expect(toHex(ok(encodeState(states[0])))).toBe(toHex(file(3, entries([['sub:ctl', encConfigV3(V3)]]))));
  });

  test('written piece by piece (head, entries, policies) it is the same file', () => {
    for (const imageSize of [0, 3, 200, 70_000]) {
      const unikernels = ['u:b', ':a', 'u:a'].map((n, i) => ({
        name: name(n),
        config: { ...MINIMAL_CONFIG, image: new Uint8Array(imageSize + i).fill(i) },
      }));
      const policies = [{ path: name('u:').path, policy: ROOT_POLICY }];
      const whole = ok(encodeState({ version: 6, unikernels, policies }));
      const entries = sortStateNames(unikernels).map((u) => toBytes(stateEntry(u.name, encConfig(u.config))));
      const tail = toBytes(encStatePolicies(policies));
      const head = ok(
        stateV6Head(
          entries.reduce((n, e) => n + e.length, 0),
          tail.length,
        ),
      );
      expect(Buffer.concat([head, ...entries, tail]).equals(Buffer.from(whole))).toBe(true);
    }
  });
});

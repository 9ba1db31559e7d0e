// Moving between releases: old commands to the 2.7 configuration with the documented defaults,
// 2.7 info to the shape each info tag expects.

import { describe, expect, test } from 'vitest';
import { consoleLine, createConfig, infoReply, restartArguments } from '../../src/wire/index.js';
import type { UnikernelInfo } from '../../src/wire/types.js';
import { ascii, hex, MINIMAL_CONFIG, name } from './helpers.js';

const { cpuids: _c, cpus: _p, linuxBootPartition: _l, ...v4Base } = MINIMAL_CONFIG;
const V4 = { ...v4Base, startup: 5, addName: false, cpuid: 3 };
const { startup: _s, addName: _a, ...V3 } = V4;

describe('old shapes to 2.7', () => {
  test('create [9]/[10]: no startup, add_name TRUE, cpuids {cpuid}, one vCPU', () => {
    expect(createConfig({ type: 'unikernel-create', force: true, release: '2.0', config: V3 })).toEqual({
      ...MINIMAL_CONFIG,
      cpuids: [3],
      startup: null,
      addName: true,
    });
  });

  test('create [16]/[17]: startup and add_name kept, cpuids {cpuid}', () => {
    expect(createConfig({ type: 'unikernel-create', force: false, release: '2.6', config: V4 })).toEqual({
      ...MINIMAL_CONFIG,
      cpuids: [3],
      startup: 5,
      addName: false,
    });
  });

  test('create [20] is already 2.7', () => {
    expect(
      createConfig({ type: 'unikernel-create', force: false, release: '2.7', config: MINIMAL_CONFIG }),
    ).toBe(MINIMAL_CONFIG);
  });

  test('restart: [12] and [14][0] keep the configuration; [14][1]/[2]/[3] replace it', () => {
    expect(restartArguments({ type: 'unikernel-restart', form: 'legacy' })).toBeNull();
    expect(restartArguments({ type: 'unikernel-restart', form: 'keep' })).toBeNull();
    const base = {
      failBehaviour: { kind: 'quit' },
      memory: 64,
      blocks: [],
      bridges: [],
      arguments: null,
    } as const;
    const full = { ...base, cpuids: [2], cpus: 1, linuxBootPartition: null };
    expect(restartArguments({ type: 'unikernel-restart', form: '2.4', args: { ...base, cpuid: 2 } })).toEqual(
      {
        ...full,
        startup: null,
        addName: true,
      },
    );
    expect(
      restartArguments({
        type: 'unikernel-restart',
        form: '2.6',
        args: { ...base, cpuid: 2, startup: 1, addName: false },
      }),
    ).toEqual({ ...full, startup: 1, addName: false });
    const current = { ...full, startup: null, addName: true, cpuids: [0, 1], cpus: 2 };
    expect(restartArguments({ type: 'unikernel-restart', form: '2.7', args: current })).toBe(current);
  });
});

describe('2.7 info to each request tag', () => {
  const info: UnikernelInfo = {
    typ: 'solo5',
    startup: 20,
    failBehaviour: { kind: 'quit' },
    cpuids: [3, 1, 2],
    memory: 32,
    digest: hex('aa×32'),
    blocks: [{ device: 'storage', hostDevice: 'disk', sectorSize: 512, blockSize: 10 }],
    bridges: [],
    arguments: ['-l'],
    started: new Date('2024-01-02T03:04:05Z'),
    cpus: 3,
    linuxBootPartition: null,
  };
  const entries = [{ name: name(':a'), info }];

  test('the single-cpuid shapes hold the lowest cpuid (where Albatross would fail)', () => {
    for (const release of ['2.0', '2.1', '2.4', '2.6'] as const) {
      const shaped = infoReply(release, entries);
      expect(shaped.release).toBe(release);
      expect(shaped.entries[0]?.info).toMatchObject({ cpuid: 1 });
    }
  });

  test('V5 keeps startup, V4 drops it; V3 carries block specs with every field; V2 has no start time', () => {
    expect(infoReply('2.6', entries).entries[0]?.info).toMatchObject({ startup: 20, started: info.started });
    expect(infoReply('2.4', entries).entries[0]?.info).not.toHaveProperty('startup');
    const v3 = infoReply('2.1', entries).entries[0]?.info;
    expect(v3).toMatchObject({
      blocks: [{ device: 'storage', hostDevice: 'disk', sectorSize: 512 }],
      started: info.started,
    });
    expect(infoReply('2.0', entries).entries[0]?.info).not.toHaveProperty('started');
    expect(infoReply('2.7', entries).entries).toBe(entries);
  });

  test('console lines: Data [0] for subscribe [1], Data [3] for subscribe [2]', () => {
    const t = new Date(0);
    expect(consoleLine('2.0', t, ascii('x')).type).toBe('console-old');
    expect(consoleLine('2.1', t, ascii('x')).type).toBe('console');
  });
});

// Moving between the shapes of different releases: old configurations up to the 2.7 one (with the
// defaults of albatross-wire.md §4.8), and 2.7 info down to the shape the request's tag expects.

import type {
  BlockSpec,
  CreateCommand,
  CurrentState,
  Data,
  InfoRelease,
  InfoReply,
  Named,
  NetSpec,
  RestartCommand,
  State,
  StateUnikernel,
  UnikernelArguments,
  UnikernelConfig,
  UnikernelConfigV0,
  UnikernelConfigV1,
  UnikernelConfigV2,
  UnikernelConfigV3,
  UnikernelConfigV4,
  UnikernelInfo,
  UnikernelInfoV3,
  UnikernelInfoV5,
} from './types.js';

/**
 * A 2.7 configuration for an uncompressed solo5 image with the defaults Albatross' client uses
 * (semantics §16.1: quit on exit, CPU 0, 32 MiB, one vCPU, `--name` prepended), changed by
 * `change`: how the boot canary, `fleet create` and tests build one.
 */
export function solo5Config(image: Uint8Array, change: Partial<UnikernelConfig> = {}): UnikernelConfig {
  return {
    typ: 'solo5',
    compressed: false,
    image,
    startup: null,
    addName: true,
    failBehaviour: { kind: 'quit' },
    cpuids: [0],
    memory: 32,
    blocks: [],
    bridges: [],
    arguments: null,
    cpus: 1,
    linuxBootPartition: null,
    ...change,
  };
}

/** What old shapes leave out: no startup priority, `--name` prepended, one vCPU, no boot partition. */
const OLD_DEFAULTS = { startup: null, addName: true, cpus: 1, linuxBootPartition: null } as const;

export function upgradeConfigV4(c: UnikernelConfigV4): UnikernelConfig {
  const { cpuid, ...rest } = c;
  return { ...rest, cpuids: [cpuid], cpus: 1, linuxBootPartition: null };
}

export function upgradeConfigV3(c: UnikernelConfigV3): UnikernelConfig {
  const { cpuid, ...rest } = c;
  return { ...rest, ...OLD_DEFAULTS, cpuids: [cpuid] };
}

const nameOnlyBlock = (device: string): BlockSpec => ({ device, hostDevice: null, sectorSize: null });

export function upgradeConfigV2(c: UnikernelConfigV2): UnikernelConfig {
  const { cpuid, blocks, bridges, ...rest } = c;
  return {
    ...rest,
    ...OLD_DEFAULTS,
    cpuids: [cpuid],
    blocks: blocks.map(nameOnlyBlock),
    bridges: bridges.map((b): NetSpec => ({ netif: b.netif, bridge: b.bridge, mac: null })),
  };
}

export function upgradeConfigV1(c: UnikernelConfigV1): UnikernelConfig {
  // A V1 bridge is a plain name, the interface's: V2's form with no bridge named.
  return upgradeConfigV2({ ...c, bridges: c.bridges.map((netif) => ({ netif, bridge: null })) });
}

export function upgradeConfigV0(c: UnikernelConfigV0): UnikernelConfig {
  return {
    typ: 'solo5',
    compressed: c.arch === 'hvt-amd64-compressed',
    image: c.image,
    ...OLD_DEFAULTS,
    failBehaviour: { kind: 'quit' },
    cpuids: [c.cpuid],
    memory: c.memory,
    blocks: c.block === null ? [] : [nameOnlyBlock(c.block)],
    bridges: (c.networks ?? []).map((netif): NetSpec => ({ netif, bridge: null, mac: null })),
    arguments: c.arguments,
  };
}

/** The 2.7 configuration of any create / force-create command. */
export function createConfig(command: CreateCommand): UnikernelConfig {
  if (command.release === '2.0') return upgradeConfigV3(command.config);
  if (command.release === '2.6') return upgradeConfigV4(command.config);
  return command.config;
}

/** The 2.7 arguments of a restart, or null when it keeps the running configuration. */
export function restartArguments(command: RestartCommand): UnikernelArguments | null {
  switch (command.form) {
    case 'legacy':
    case 'keep':
      return null;
    case '2.4': {
      const { cpuid, ...rest } = command.args;
      return { ...rest, ...OLD_DEFAULTS, cpuids: [cpuid] };
    }
    case '2.6': {
      const { cpuid, ...rest } = command.args;
      return { ...rest, cpuids: [cpuid], cpus: 1, linuxBootPartition: null };
    }
    case '2.7':
      return command.args;
  }
}

/** Any state file as version 6 (migration from Albatross). */
export function upgradeState(state: State): CurrentState {
  const each = <C>(list: readonly StateUnikernel<C>[], up: (c: C) => UnikernelConfig) =>
    list.map((u) => ({ name: u.name, config: up(u.config) }));
  switch (state.version) {
    case 0:
      return { version: 6, unikernels: each(state.unikernels, upgradeConfigV1), policies: [] };
    case 1:
      return { version: 6, unikernels: each(state.unikernels, upgradeConfigV0), policies: [] };
    case 2:
      return { version: 6, unikernels: each(state.unikernels, upgradeConfigV2), policies: [] };
    case 3:
      return { version: 6, unikernels: each(state.unikernels, upgradeConfigV3), policies: [] };
    case 4:
      return { version: 6, unikernels: each(state.unikernels, upgradeConfigV3), policies: state.policies };
    case 5:
      return { version: 6, unikernels: each(state.unikernels, upgradeConfigV4), policies: state.policies };
    case 6:
      return state;
  }
}

/**
 * The old shapes hold one cpuid; Albatross throws on a multi-CPU unikernel there, Petrel writes
 * the lowest (0 for an empty set, which admission never allows).
 */
const lowestCpu = (cpuids: readonly number[]): number => (cpuids.length === 0 ? 0 : Math.min(...cpuids));

export function infoV5(i: UnikernelInfo): UnikernelInfoV5 {
  const { cpuids, cpus: _cpus, linuxBootPartition: _lbp, ...rest } = i;
  return { ...rest, cpuid: lowestCpu(cpuids) };
}

/** V3/V2 entries write every optional field: host device, sector size and the MAC in use. */
export function infoV3(i: UnikernelInfo): UnikernelInfoV3 {
  return {
    typ: i.typ,
    failBehaviour: i.failBehaviour,
    cpuid: lowestCpu(i.cpuids),
    memory: i.memory,
    digest: i.digest,
    blocks: i.blocks.map((b) => ({ device: b.device, hostDevice: b.hostDevice, sectorSize: b.sectorSize })),
    bridges: i.bridges.map((n) => ({ netif: n.netif, bridge: n.bridge, mac: n.mac })),
    arguments: i.arguments,
    started: i.started,
  };
}

/** `value` without its field `key` (an older shape that never had it). */
function without<T extends object, K extends keyof T>(value: T, key: K): Omit<T, K> {
  const { [key]: _, ...rest } = value;
  return rest;
}

/** The unikernel-info reply for a request of `release`, from 2.7 entries. */
export function infoReply(release: InfoRelease, entries: readonly Named<UnikernelInfo>[]): InfoReply {
  const map = <T>(shape: (i: UnikernelInfo) => T) =>
    entries.map((e) => ({ name: e.name, info: shape(e.info) }));
  switch (release) {
    case '2.7':
      return { type: 'unikernel-info', release, entries };
    case '2.6':
      return { type: 'unikernel-info', release, entries: map(infoV5) };
    case '2.4':
      return { type: 'unikernel-info', release, entries: map((i) => without(infoV5(i), 'startup')) };
    case '2.1':
      return { type: 'unikernel-info', release, entries: map(infoV3) };
    case '2.0':
      return { type: 'unikernel-info', release, entries: map((i) => without(infoV3(i), 'started')) };
  }
}

/** A console line in the form the subscriber's command expects: Data [0] for [1], Data [3] for [2]. */
export function consoleLine(release: '2.0' | '2.1', timestamp: Date, line: Uint8Array): Data {
  return { type: release === '2.0' ? 'console-old' : 'console', timestamp, line };
}

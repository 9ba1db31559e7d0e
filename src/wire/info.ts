// Codecs for the five unikernel-info entry shapes (albatross-wire.md §4.10), from 2.0's
// UnikernelInfoV2 to 2.7's UnikernelInfo. Which one is used is chosen by the request's tag.

import {
  encBlockSpec,
  encFailBehaviour,
  encMac,
  encNetSpec,
  encTyp,
  pushArgumentList,
  pushOptionalSet,
  readArgumentList,
  readBlockSpec,
  readFailBehaviour,
  readMac,
  readNetSpec,
  readOptionalSet,
  readTyp,
} from './config.js';
import { type Der, enc, type Reader, TAG } from './der.js';
import type {
  InfoBlock,
  InfoNet,
  UnikernelInfo,
  UnikernelInfoV2,
  UnikernelInfoV3,
  UnikernelInfoV4,
  UnikernelInfoV5,
} from './types.js';

const EPOCH = 0;

function readInfoBlock(r: Reader): InfoBlock {
  return r.sequence((s) => ({
    device: s.utf8('unikernel-device'),
    hostDevice: s.utf8('host-device'),
    sectorSize: s.int('sector-size'),
    blockSize: s.int('block-size'),
  }));
}

export const encInfoBlock = (b: InfoBlock): Der =>
  enc.sequence([
    enc.utf8(b.device),
    enc.utf8(b.hostDevice),
    enc.integer(b.sectorSize),
    enc.integer(b.blockSize),
  ]);

function readInfoNet(r: Reader): InfoNet {
  return r.sequence((s) => ({
    netif: s.utf8('unikernel-device'),
    bridge: s.utf8('host-device'),
    mac: readMac(s),
  }));
}

export const encInfoNet = (n: InfoNet): Der =>
  enc.sequence([enc.utf8(n.netif), enc.utf8(n.bridge), encMac(n.mac)]);

const readStarted = (s: Reader): Date | null => s.optionalExplicit(3, (x) => x.generalizedTime('started'));
const readStartup = (s: Reader): number | null => (s.peek() === TAG.INTEGER ? s.int('startup') : null);

export const readInfo = (r: Reader): UnikernelInfo =>
  r.sequence((s) => ({
    typ: readTyp(s),
    startup: readStartup(s),
    failBehaviour: readFailBehaviour(s),
    cpuids: s.setOf((x) => x.int('cpuid')),
    memory: s.int('memory'),
    digest: s.octets('digest'),
    blocks: readOptionalSet(s, 0, readInfoBlock),
    bridges: readOptionalSet(s, 1, readInfoNet),
    arguments: readArgumentList(s),
    started: readStarted(s) ?? new Date(EPOCH),
    cpus: s.optionalExplicit(4, (x) => x.int('cpus')) ?? 1,
    linuxBootPartition: s.optionalExplicit(5, (x) => x.utf8('linux_boot_partition')),
  }));

export function encInfo(i: UnikernelInfo): Der {
  const fields = [encTyp(i.typ)];
  if (i.startup !== null) fields.push(enc.integer(i.startup));
  fields.push(encFailBehaviour(i.failBehaviour), enc.set(i.cpuids.map(enc.integer)), enc.integer(i.memory));
  fields.push(enc.octets(i.digest));
  pushOptionalSet(fields, 0, i.blocks, encInfoBlock);
  pushOptionalSet(fields, 1, i.bridges, encInfoNet);
  pushArgumentList(fields, i.arguments);
  fields.push(enc.explicit(3, enc.generalizedTime(i.started)), enc.explicit(4, enc.integer(i.cpus)));
  if (i.linuxBootPartition !== null) fields.push(enc.explicit(5, enc.utf8(i.linuxBootPartition)));
  return enc.sequence(fields);
}

/** The fields of V4 after its type, which V5 has after its startup. */
const readInfoRest = (s: Reader): Omit<UnikernelInfoV4, 'typ'> => ({
  failBehaviour: readFailBehaviour(s),
  cpuid: s.int('cpuid'),
  memory: s.int('memory'),
  digest: s.octets('digest'),
  blocks: readOptionalSet(s, 0, readInfoBlock),
  bridges: readOptionalSet(s, 1, readInfoNet),
  arguments: readArgumentList(s),
  started: readStarted(s),
});

export const readInfoV5 = (r: Reader): UnikernelInfoV5 =>
  r.sequence((s) => {
    const typ = readTyp(s);
    const startup = readStartup(s);
    return { typ, startup, ...readInfoRest(s) };
  });

export const readInfoV4 = (r: Reader): UnikernelInfoV4 =>
  r.sequence((s) => ({ typ: readTyp(s), ...readInfoRest(s) }));

/** V5 and V4 differ only by `startup`, which V4 never has. */
function encInfoV54(i: UnikernelInfoV4, startup: number | null): Der {
  const fields = [encTyp(i.typ)];
  if (startup !== null) fields.push(enc.integer(startup));
  fields.push(
    encFailBehaviour(i.failBehaviour),
    enc.integer(i.cpuid),
    enc.integer(i.memory),
    enc.octets(i.digest),
  );
  pushOptionalSet(fields, 0, i.blocks, encInfoBlock);
  pushOptionalSet(fields, 1, i.bridges, encInfoNet);
  pushArgumentList(fields, i.arguments);
  if (i.started !== null) fields.push(enc.explicit(3, enc.generalizedTime(i.started)));
  return enc.sequence(fields);
}

export const encInfoV5 = (i: UnikernelInfoV5): Der => encInfoV54(i, i.startup);
export const encInfoV4 = (i: UnikernelInfoV4): Der => encInfoV54(i, null);

function readInfoV3Body(s: Reader, withStart: boolean): UnikernelInfoV3 {
  return {
    typ: readTyp(s),
    failBehaviour: readFailBehaviour(s),
    cpuid: s.int('cpuid'),
    memory: s.int('memory'),
    digest: s.octets('digest'),
    blocks: readOptionalSet(s, 0, readBlockSpec),
    bridges: readOptionalSet(s, 1, readNetSpec),
    arguments: readArgumentList(s),
    started: withStart ? readStarted(s) : null,
  };
}

export const readInfoV3 = (r: Reader): UnikernelInfoV3 => r.sequence((s) => readInfoV3Body(s, true));

export const readInfoV2 = (r: Reader): UnikernelInfoV2 =>
  r.sequence((s) => {
    const { started: _, ...info } = readInfoV3Body(s, false);
    return info;
  });

/** V3 and V2 differ only by the start time, which V2 never has. */
function encInfoV32(i: UnikernelInfoV2, started: Date | null): Der {
  const fields = [
    encTyp(i.typ),
    encFailBehaviour(i.failBehaviour),
    enc.integer(i.cpuid),
    enc.integer(i.memory),
  ];
  fields.push(enc.octets(i.digest));
  pushOptionalSet(fields, 0, i.blocks, encBlockSpec);
  pushOptionalSet(fields, 1, i.bridges, encNetSpec);
  pushArgumentList(fields, i.arguments);
  if (started !== null) fields.push(enc.explicit(3, enc.generalizedTime(started)));
  return enc.sequence(fields);
}

export const encInfoV3 = (i: UnikernelInfoV3): Der => encInfoV32(i, i.started);
export const encInfoV2 = (i: UnikernelInfoV2): Der => encInfoV32(i, null);

// Codecs for the configuration types of albatross-wire.md §4.8: Policy, Typ, FailBehaviour, block
// and network specs, every UnikernelConfig / UnikernelArguments shape, and MAC addresses.

import { makePolicy, type Policy } from '../resources/policy.js';
import { compareBytes, ctx, type Der, enc, type Reader, TAG, unknownTag, utf8Bytes } from './der.js';
import { fault } from './errors.js';
import { encMac, readMac } from './mac.js';
import type {
  BlockSpec,
  FailBehaviour,
  NetSpec,
  Typ,
  UnikernelArguments,
  UnikernelArgumentsV0,
  UnikernelArgumentsV1,
  UnikernelConfig,
  UnikernelConfigV3,
  UnikernelConfigV4,
} from './types.js';

export { encMac, macFromBytes, parseMac, readMac } from './mac.js';

// --- small shared pieces --------------------------------------------------------------------

export function readTyp(r: Reader): Typ {
  return r.choice('typ', (n, inner) => {
    if (n > 1) unknownTag('typ', ctx(n), r.lastStart);
    inner.null();
    return n === 0 ? 'solo5' : 'bhyve';
  });
}

export function encTyp(typ: Typ): Der {
  if (typ !== 'solo5' && typ !== 'bhyve') fault('E_WIRE_ENCODE', `unknown typ ${String(typ)}`, null);
  return enc.explicit(typ === 'solo5' ? 0 : 1, enc.null());
}

export function readFailBehaviour(r: Reader): FailBehaviour {
  return r.choice('fail-behaviour', (n, inner): FailBehaviour => {
    if (n === 0) {
      inner.null();
      return { kind: 'quit' };
    }
    if (n === 1) return { kind: 'restart', exitCodes: inner.setOf((x) => x.int('exit code')) };
    return unknownTag('fail-behaviour', ctx(n), r.lastStart);
  });
}

export function encFailBehaviour(fail: FailBehaviour): Der {
  if (fail.kind === 'quit') return enc.explicit(0, enc.null());
  if (fail.kind === 'restart') return enc.explicit(1, enc.set(fail.exitCodes.map(enc.integer)));
  return fault('E_WIRE_ENCODE', 'unknown fail-behaviour', null);
}

export const readStrings = (r: Reader): string[] => r.listOf((x) => x.utf8());
export const encStrings = (items: readonly string[]): Der => enc.sequence(items.map(enc.utf8));

export function readBlockSpec(r: Reader): BlockSpec {
  return r.sequence((s) => ({
    device: s.utf8('block-name'),
    hostDevice: s.peek() === TAG.UTF8 ? s.utf8('block-device-name') : null,
    sectorSize: s.peek() === TAG.INTEGER ? s.int('block-sector-size') : null,
  }));
}

export function encBlockSpec(b: BlockSpec): Der {
  const fields = [enc.utf8(b.device)];
  if (b.hostDevice !== null) fields.push(enc.utf8(b.hostDevice));
  if (b.sectorSize !== null) fields.push(enc.integer(b.sectorSize));
  return enc.sequence(fields);
}

export function readNetSpec(r: Reader): NetSpec {
  return r.sequence((s) => ({
    netif: s.utf8('netif'),
    bridge: s.peek() === TAG.UTF8 ? s.utf8('bridge') : null,
    mac: s.peek() === TAG.OCTET_STRING ? readMac(s) : null,
  }));
}

export function encNetSpec(n: NetSpec): Der {
  const fields = [enc.utf8(n.netif)];
  if (n.bridge !== null) fields.push(enc.utf8(n.bridge));
  if (n.mac !== null) fields.push(encMac(n.mac));
  return enc.sequence(fields);
}

/** `[n] SET OF X OPTIONAL`, omitted when empty; an absent set decodes as []. */
export function readOptionalSet<T>(r: Reader, n: number, read: (r: Reader) => T): T[] {
  return r.optionalExplicit(n, (x) => x.setOf(read)) ?? [];
}

export function pushOptionalSet<T>(
  fields: Der[],
  n: number,
  items: readonly T[],
  write: (item: T) => Der,
): void {
  if (items.length > 0) fields.push(enc.explicit(n, enc.set(items.map(write))));
}

/** `[2] SEQUENCE OF UTF8String OPTIONAL`: absent (null) differs from empty. */
export const readArgumentList = (r: Reader): string[] | null => r.optionalExplicit(2, readStrings);

export function pushArgumentList(fields: Der[], args: readonly string[] | null): void {
  if (args !== null) fields.push(enc.explicit(2, encStrings(args)));
}

const readOptionalInt = (r: Reader, what: string): number | null =>
  r.peek() === TAG.INTEGER ? r.int(what) : null;

// --- Policy ---------------------------------------------------------------------------------

export function readPolicy(r: Reader): Policy {
  const at = r.offset;
  const input = r.sequence((s) => ({
    cpuids: s.listOf((x) => x.int('cpuid')),
    vms: s.bigint('unikernels'),
    memory: s.int('memory'),
    block: readOptionalInt(s, 'block'),
    bridges: readStrings(s),
  }));
  const policy = makePolicy(input);
  if (!policy.ok) return fault('E_WIRE_POLICY', policy.error.message, at);
  return policy.value;
}

export function encPolicy(p: Policy): Der {
  const bridges = p.bridges.map(utf8Bytes).sort(compareBytes).map(enc.utf8Bytes);
  const fields = [enc.sequence(p.cpuids.map(enc.integer)), enc.integer(p.vms), enc.integer(p.memory)];
  if (p.block !== null) fields.push(enc.integer(p.block));
  fields.push(enc.sequence(bridges));
  return enc.sequence(fields);
}

// --- unikernel arguments, and configurations = typ, compressed, image + the same fields -----
// One wrinkle: a configuration puts `startup` and `add_name` before `fail-behaviour`, the
// arguments of a restart put them after it. `inConfig` selects the order.

interface Head {
  readonly failBehaviour: FailBehaviour;
  readonly startup: number | null;
  readonly addName: boolean;
}

function readHead(s: Reader, inConfig: boolean): Head {
  if (inConfig) {
    const startup = readOptionalInt(s, 'startup');
    const addName = s.boolean('add_name');
    return { failBehaviour: readFailBehaviour(s), startup, addName };
  }
  const failBehaviour = readFailBehaviour(s);
  return { failBehaviour, startup: readOptionalInt(s, 'startup'), addName: s.boolean('add_name') };
}

function head(h: Head, inConfig: boolean): Der[] {
  const fields: Der[] = h.startup === null ? [] : [enc.integer(h.startup)];
  fields.push(enc.boolean(h.addName));
  return inConfig
    ? [...fields, encFailBehaviour(h.failBehaviour)]
    : [encFailBehaviour(h.failBehaviour), ...fields];
}

/** UnikernelArguments, or the UnikernelConfig fields after the image. */
function readArgumentsBody(s: Reader, inConfig: boolean): UnikernelArguments {
  return {
    ...readHead(s, inConfig),
    cpuids: s.setOf((x) => x.int('cpuid')),
    memory: s.int('memory'),
    blocks: readOptionalSet(s, 0, readBlockSpec),
    bridges: readOptionalSet(s, 1, readNetSpec),
    arguments: readArgumentList(s),
    cpus: s.optionalExplicit(3, (x) => x.int('cpus')) ?? 1,
    linuxBootPartition: s.optionalExplicit(4, (x) => x.utf8('linux_boot_partition')),
  };
}

function argumentsBody(a: UnikernelArguments, inConfig: boolean): Der[] {
  const fields = [...head(a, inConfig), enc.set(a.cpuids.map(enc.integer)), enc.integer(a.memory)];
  pushSpecs(fields, a);
  pushArgumentList(fields, a.arguments);
  fields.push(enc.explicit(3, enc.integer(a.cpus)));
  if (a.linuxBootPartition !== null) fields.push(enc.explicit(4, enc.utf8(a.linuxBootPartition)));
  return fields;
}

/** UnikernelArgumentsV1, or the UnikernelConfigV4 fields after the image. */
function readArgumentsV1Body(s: Reader, inConfig: boolean): UnikernelArgumentsV1 {
  return {
    ...readHead(s, inConfig),
    cpuid: s.int('cpuid'),
    memory: s.int('memory'),
    blocks: readOptionalSet(s, 0, readBlockSpec),
    bridges: readOptionalSet(s, 1, readNetSpec),
    arguments: readArgumentList(s),
  };
}

function argumentsV1Body(a: UnikernelArgumentsV1, inConfig: boolean): Der[] {
  const fields = [...head(a, inConfig), enc.integer(a.cpuid), enc.integer(a.memory)];
  pushSpecs(fields, a);
  pushArgumentList(fields, a.arguments);
  return fields;
}

/** UnikernelArgumentsV0, or the UnikernelConfigV3 fields after the image (same order in both). */
function readArgumentsV0Body(s: Reader): UnikernelArgumentsV0 {
  return {
    failBehaviour: readFailBehaviour(s),
    cpuid: s.int('cpuid'),
    memory: s.int('memory'),
    blocks: readOptionalSet(s, 0, readBlockSpec),
    bridges: readOptionalSet(s, 1, readNetSpec),
    arguments: readArgumentList(s),
  };
}

function argumentsV0Body(a: UnikernelArgumentsV0): Der[] {
  const fields = [encFailBehaviour(a.failBehaviour), enc.integer(a.cpuid), enc.integer(a.memory)];
  pushSpecs(fields, a);
  pushArgumentList(fields, a.arguments);
  return fields;
}

function pushSpecs(
  fields: Der[],
  a: { readonly blocks: readonly BlockSpec[]; readonly bridges: readonly NetSpec[] },
) {
  pushOptionalSet(fields, 0, a.blocks, encBlockSpec);
  pushOptionalSet(fields, 1, a.bridges, encNetSpec);
}

export const readArguments = (r: Reader): UnikernelArguments =>
  r.sequence((s) => readArgumentsBody(s, false));
export const readArgumentsV1 = (r: Reader): UnikernelArgumentsV1 =>
  r.sequence((s) => readArgumentsV1Body(s, false));
export const readArgumentsV0 = (r: Reader): UnikernelArgumentsV0 => r.sequence(readArgumentsV0Body);
export const encArguments = (a: UnikernelArguments): Der => enc.sequence(argumentsBody(a, false));
export const encArgumentsV1 = (a: UnikernelArgumentsV1): Der => enc.sequence(argumentsV1Body(a, false));
export const encArgumentsV0 = (a: UnikernelArgumentsV0): Der => enc.sequence(argumentsV0Body(a));

interface ImagePrefix {
  readonly typ: Typ;
  readonly compressed: boolean;
  readonly image: Uint8Array;
}

export function readImagePrefix(s: Reader): ImagePrefix {
  return { typ: readTyp(s), compressed: s.boolean('compressed'), image: s.octets('image') };
}

export const imagePrefix = (c: ImagePrefix): Der[] => [
  encTyp(c.typ),
  enc.boolean(c.compressed),
  enc.octets(c.image),
];

export const readConfig = (r: Reader): UnikernelConfig =>
  r.sequence((s) => ({ ...readImagePrefix(s), ...readArgumentsBody(s, true) }));
export const readConfigV4 = (r: Reader): UnikernelConfigV4 =>
  r.sequence((s) => ({ ...readImagePrefix(s), ...readArgumentsV1Body(s, true) }));
export const readConfigV3 = (r: Reader): UnikernelConfigV3 =>
  r.sequence((s) => ({ ...readImagePrefix(s), ...readArgumentsV0Body(s) }));

export const encConfig = (c: UnikernelConfig): Der => encConfigWithImage(c, enc.octets(c.image));
/**
 * A 2.7 configuration whose image is the given node: `enc.omitted` to size an entry whose image
 * is on disk, or an empty OCTET STRING in Petrel's state, which names the image by digest.
 */
export const encConfigWithImage = (c: Omit<UnikernelConfig, 'image'>, image: Der): Der =>
  enc.sequence([encTyp(c.typ), enc.boolean(c.compressed), image, ...argumentsBody(c, true)]);
export const encConfigV4 = (c: UnikernelConfigV4): Der =>
  enc.sequence([...imagePrefix(c), ...argumentsV1Body(c, true)]);
export const encConfigV3 = (c: UnikernelConfigV3): Der =>
  enc.sequence([...imagePrefix(c), ...argumentsV0Body(c)]);

// Configuration shapes found only in old state files (1.x and early 2.x) and in the pre-2.0
// reply [3] (albatross-wire.md §4.8): decoded so an Albatross host can be migrated, encoded so
// every decoded value can be written back.

import {
  encFailBehaviour,
  encStrings,
  imagePrefix,
  pushArgumentList,
  pushOptionalSet,
  readArgumentList,
  readFailBehaviour,
  readImagePrefix,
  readOptionalSet,
  readStrings,
} from './config.js';
import { ctx, type Der, enc, type Reader, TAG, unknownTag } from './der.js';
import { fault } from './errors.js';
import type { UnikernelConfigV0, UnikernelConfigV1, UnikernelConfigV2 } from './types.js';

/** What V1 and V2 configurations begin with, read: image, fail behaviour, CPU, memory, block devices. */
const readLegacyHead = (s: Reader): Omit<UnikernelConfigV1, 'bridges' | 'arguments'> => ({
  ...readImagePrefix(s),
  failBehaviour: readFailBehaviour(s),
  cpuid: s.int('cpuid'),
  memory: s.int('memory'),
  blocks: readOptionalSet(s, 0, (x) => x.utf8('block')),
});

export const readConfigV2 = (r: Reader): UnikernelConfigV2 =>
  r.sequence((s) => ({
    ...readLegacyHead(s),
    bridges:
      s.optionalExplicit(1, (x) =>
        x.listOf((e) =>
          e.sequence((p) => ({
            netif: p.utf8('netif'),
            bridge: p.peek() === TAG.UTF8 ? p.utf8('bridge') : null,
          })),
        ),
      ) ?? [],
    arguments: readArgumentList(s),
  }));

/** What V1 and V2 configurations begin with: image, fail behaviour, CPU, memory, block devices. */
function legacyHead(c: UnikernelConfigV1 | UnikernelConfigV2): Der[] {
  const fields = [
    ...imagePrefix(c),
    encFailBehaviour(c.failBehaviour),
    enc.integer(c.cpuid),
    enc.integer(c.memory),
  ];
  pushOptionalSet(fields, 0, c.blocks, enc.utf8);
  return fields;
}

export function encConfigV2(c: UnikernelConfigV2): Der {
  const fields = legacyHead(c);
  if (c.bridges.length > 0) {
    const pairs = c.bridges.map((b) =>
      enc.sequence(b.bridge === null ? [enc.utf8(b.netif)] : [enc.utf8(b.netif), enc.utf8(b.bridge)]),
    );
    fields.push(enc.explicit(1, enc.sequence(pairs)));
  }
  pushArgumentList(fields, c.arguments);
  return enc.sequence(fields);
}

export const readConfigV1 = (r: Reader): UnikernelConfigV1 =>
  r.sequence((s) => ({
    ...readLegacyHead(s),
    bridges: readOptionalSet(s, 1, (x) => x.utf8('bridge')),
    arguments: readArgumentList(s),
  }));

export function encConfigV1(c: UnikernelConfigV1): Der {
  const fields = legacyHead(c);
  pushOptionalSet(fields, 1, c.bridges, enc.utf8);
  pushArgumentList(fields, c.arguments);
  return enc.sequence(fields);
}

const ARCHES = ['hvt-amd64', 'hvt-arm64', 'hvt-amd64-compressed'] as const;

export const readConfigV0 = (r: Reader): UnikernelConfigV0 =>
  r.sequence((s) => {
    const cpuid = s.int('cpu');
    const memory = s.int('memory');
    const block = s.peek() === TAG.UTF8 ? s.utf8('block') : null;
    const networks = s.peek() === TAG.SEQUENCE ? readStrings(s) : null;
    const [arch, image] = s.choice('image', (n, inner) => {
      const found = ARCHES[n];
      if (found === undefined) return unknownTag('image', ctx(n), s.lastStart);
      return [found, inner.octets('image')] as const;
    });
    const args = s.peek() === TAG.SEQUENCE ? readStrings(s) : null;
    return { cpuid, memory, block, networks, arch, image, arguments: args };
  });

export function encConfigV0(c: UnikernelConfigV0): Der {
  const fields = [enc.integer(c.cpuid), enc.integer(c.memory)];
  if (c.block !== null) fields.push(enc.utf8(c.block));
  if (c.networks !== null) fields.push(encStrings(c.networks));
  const arch = ARCHES.indexOf(c.arch);
  if (arch < 0) fault('E_WIRE_ENCODE', `unknown image architecture ${String(c.arch)}`, null);
  fields.push(enc.explicit(arch, enc.octets(c.image)));
  if (c.arguments !== null) fields.push(encStrings(c.arguments));
  return enc.sequence(fields);
}

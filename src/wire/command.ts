// Codec for Command (albatross-wire.md §4.2–§4.7): every tag of 2.0–2.7 clients decodes to a
// value that remembers its tag, and every such value encodes back under that same tag.

import {
  encArguments,
  encArgumentsV0,
  encArgumentsV1,
  encConfig,
  encConfigV3,
  encConfigV4,
  encPolicy,
  readArguments,
  readArgumentsV0,
  readArgumentsV1,
  readConfig,
  readConfigV3,
  readConfigV4,
  readPolicy,
} from './config.js';
import { ctx, type Der, enc, type Reader, TAG, unknownTag } from './der.js';
import { fault } from './errors.js';
import { EXITS_TAG } from './exits.js';
import { encReplace, REPLACE_TAG, readReplace } from './replace.js';
import type {
  BlockCommand,
  Command,
  ConsoleCommand,
  ConsoleSelect,
  InfoRelease,
  PolicyCommand,
  StatsCommand,
  UnikernelCommand,
} from './types.js';

/** Unikernel info tag of each release, and back. */
export const INFO_TAG: Readonly<Record<InfoRelease, number>> = {
  '2.0': 7,
  '2.1': 13,
  '2.4': 15,
  '2.6': 18,
  '2.7': 19,
};
const INFO_BY_TAG = new Map(Object.entries(INFO_TAG).map(([release, tag]) => [tag, release as InfoRelease]));
const CREATE_TAG = { '2.0': 9, '2.6': 16, '2.7': 20 } as const;
/** Pre-2.0 unikernel tags: never decoded, never reused. */
const RESERVED_UNIKERNEL = new Set([0, 1, 2, 4, 5, 6, 8]);

export function readCommand(r: Reader): Command {
  return r.choice('command', (n, inner): Command => {
    switch (n) {
      case 0:
        return readConsole(inner);
      case 1:
        return readStats(inner);
      case 2:
        return fault('E_WIRE_UNSUPPORTED', 'support for log dropped', r.lastStart);
      case 3:
        return readUnikernel(inner);
      case 4:
        return readPolicyCommand(inner);
      case 5:
        return readBlock(inner);
      default:
        return unknownTag('command', ctx(n), r.lastStart);
    }
  });
}

function readConsole(r: Reader): ConsoleCommand {
  return r.choice('console command', (n, inner): ConsoleCommand => {
    switch (n) {
      case 0:
        return {
          type: 'console-add',
          limit: inner.peek() === TAG.NULL ? inner.null() : inner.bigint('limit'),
        };
      case 1:
      case 2:
        return {
          type: 'console-subscribe',
          release: n === 1 ? '2.0' : '2.1',
          select: readSelect(inner, n === 1),
        };
      case 3:
        inner.null();
        return { type: 'console-list-inactive' };
      default:
        return unknownTag('console command', ctx(n), r.lastStart);
    }
  });
}

function readSelect(r: Reader, utc: boolean): ConsoleSelect {
  return r.choice('console subscription', (n, inner): ConsoleSelect => {
    if (n === 0)
      return { kind: 'since', since: utc ? inner.utcTime('since') : inner.generalizedTime('since') };
    if (n === 1) return { kind: 'count', count: inner.int('count') };
    return unknownTag('console subscription', ctx(n), r.lastStart);
  });
}

function readStats(r: Reader): StatsCommand {
  return r.choice('statistics command', (n, inner): StatsCommand => {
    if (n === 0) {
      return inner.sequence((s) => ({
        type: 'stats-add',
        vmmdev: s.utf8('vmmdev'),
        pid: s.int('pid'),
        network: s.listOf((e) => e.sequence((p) => ({ bridge: p.utf8('bridge'), tap: p.utf8('tap') }))),
      }));
    }
    const type = (['stats-remove', 'stats-subscribe', 'stats-initial'] as const)[n - 1];
    if (type === undefined) return unknownTag('statistics command', ctx(n), r.lastStart);
    inner.null();
    return { type };
  });
}

function readUnikernel(r: Reader): UnikernelCommand {
  return r.choice('unikernel command', (n, inner): UnikernelCommand => {
    const info = INFO_BY_TAG.get(n);
    if (info !== undefined) {
      inner.null();
      return { type: 'unikernel-info', release: info };
    }
    if (RESERVED_UNIKERNEL.has(n)) {
      return fault('E_WIRE_UNSUPPORTED', `reserved (pre-2.0) unikernel command tag [${n}]`, r.lastStart);
    }
    switch (n) {
      case 3:
        inner.null();
        return { type: 'unikernel-destroy' };
      case 9:
      case 10:
        return { type: 'unikernel-create', force: n === 10, release: '2.0', config: readConfigV3(inner) };
      case 16:
      case 17:
        return { type: 'unikernel-create', force: n === 17, release: '2.6', config: readConfigV4(inner) };
      case 20:
      case 21:
        return { type: 'unikernel-create', force: n === 21, release: '2.7', config: readConfig(inner) };
      case 11:
        return { type: 'unikernel-get', level: inner.int('compression level') };
      case 12:
        inner.null();
        return { type: 'unikernel-restart', form: 'legacy' };
      case 14:
        return readRestart(inner);
      case EXITS_TAG:
        inner.null();
        return { type: 'unikernel-exits' };
      case REPLACE_TAG:
        return readReplace(inner);
      default:
        return unknownTag('unikernel command', ctx(n), r.lastStart);
    }
  });
}

function readRestart(r: Reader): UnikernelCommand {
  return r.choice('restart arguments', (n, inner): UnikernelCommand => {
    switch (n) {
      case 0:
        inner.null();
        return { type: 'unikernel-restart', form: 'keep' };
      case 1:
        return { type: 'unikernel-restart', form: '2.4', args: readArgumentsV0(inner) };
      case 2:
        return { type: 'unikernel-restart', form: '2.6', args: readArgumentsV1(inner) };
      case 3:
        return { type: 'unikernel-restart', form: '2.7', args: readArguments(inner) };
      default:
        return unknownTag('restart arguments', ctx(n), r.lastStart);
    }
  });
}

function readPolicyCommand(r: Reader): PolicyCommand {
  return r.choice('policy command', (n, inner): PolicyCommand => {
    if (n === 1) return { type: 'policy-add', policy: readPolicy(inner) };
    if (n !== 0 && n !== 2) return unknownTag('policy command', ctx(n), r.lastStart);
    inner.null();
    return { type: n === 0 ? 'policy-info' : 'policy-remove' };
  });
}

function readBlock(r: Reader): BlockCommand {
  return r.choice('block command', (n, inner): BlockCommand => {
    switch (n) {
      case 0:
      case 2:
        inner.null();
        return { type: n === 0 ? 'block-info' : 'block-remove' };
      case 1:
        return { type: 'block-add', size: inner.int('size') };
      case 3:
        return inner.sequence((s) => ({
          type: 'block-add-old',
          size: s.int('size'),
          compressed: s.boolean('compressed'),
          data: s.peek() === TAG.OCTET_STRING ? s.octets('data') : null,
        }));
      case 4:
        return inner.sequence((s) => ({
          type: 'block-set-old',
          compressed: s.boolean('compressed'),
          data: s.octets('data'),
        }));
      case 5:
      case 6:
        return { type: n === 5 ? 'block-dump-old' : 'block-dump', level: inner.int('compression level') };
      case 7:
        return { type: 'block-set', compressed: inner.boolean('compressed') };
      default:
        return unknownTag('block command', ctx(n), r.lastStart);
    }
  });
}

// --- encoding -------------------------------------------------------------------------------

const NULL = enc.null();
/** `[group] [n] value`: a command is two explicit tags deep. */
const tagged = (group: number, n: number, value: Der): Der => enc.explicit(group, enc.explicit(n, value));

export function encCommand(c: Command): Der {
  switch (c.type) {
    case 'console-add':
      return tagged(0, 0, c.limit === null ? NULL : enc.integer(c.limit));
    case 'console-subscribe': {
      const old = c.release === '2.0';
      const select =
        c.select.kind === 'since'
          ? enc.explicit(0, old ? enc.utcTime(c.select.since) : enc.generalizedTime(c.select.since))
          : enc.explicit(1, enc.integer(c.select.count));
      return tagged(0, old ? 1 : 2, select);
    }
    case 'console-list-inactive':
      return tagged(0, 3, NULL);
    case 'stats-add': {
      const network = c.network.map((e) => enc.sequence([enc.utf8(e.bridge), enc.utf8(e.tap)]));
      return tagged(1, 0, enc.sequence([enc.utf8(c.vmmdev), enc.integer(c.pid), enc.sequence(network)]));
    }
    case 'stats-remove':
      return tagged(1, 1, NULL);
    case 'stats-subscribe':
      return tagged(1, 2, NULL);
    case 'stats-initial':
      return tagged(1, 3, NULL);
    case 'unikernel-destroy':
      return tagged(3, 3, NULL);
    case 'unikernel-info':
      return tagged(3, infoTag(c.release), NULL);
    case 'unikernel-exits':
      return tagged(3, EXITS_TAG, NULL);
    case 'unikernel-create': {
      if (c.check !== undefined) {
        if (c.release !== '2.7' || !c.force) return unencodable(c);
        return tagged(3, REPLACE_TAG, encReplace(c, c.check));
      }
      const base: number | undefined = CREATE_TAG[c.release];
      if (base === undefined) return unencodable(c);
      const tag = base + (c.force ? 1 : 0);
      if (c.release === '2.0') return tagged(3, tag, encConfigV3(c.config));
      if (c.release === '2.6') return tagged(3, tag, encConfigV4(c.config));
      return tagged(3, tag, encConfig(c.config));
    }
    case 'unikernel-get':
      return tagged(3, 11, enc.integer(c.level));
    case 'unikernel-restart':
      switch (c.form) {
        case 'legacy':
          return tagged(3, 12, NULL);
        case 'keep':
          return tagged(3, 14, enc.explicit(0, NULL));
        case '2.4':
          return tagged(3, 14, enc.explicit(1, encArgumentsV0(c.args)));
        case '2.6':
          return tagged(3, 14, enc.explicit(2, encArgumentsV1(c.args)));
        case '2.7':
          return tagged(3, 14, enc.explicit(3, encArguments(c.args)));
      }
      return unencodable(c);
    case 'policy-info':
      return tagged(4, 0, NULL);
    case 'policy-add':
      return tagged(4, 1, encPolicy(c.policy));
    case 'policy-remove':
      return tagged(4, 2, NULL);
    case 'block-info':
      return tagged(5, 0, NULL);
    case 'block-add':
      return tagged(5, 1, enc.integer(c.size));
    case 'block-remove':
      return tagged(5, 2, NULL);
    case 'block-add-old': {
      const fields = [enc.integer(c.size), enc.boolean(c.compressed)];
      if (c.data !== null) fields.push(enc.octets(c.data));
      return tagged(5, 3, enc.sequence(fields));
    }
    case 'block-set-old':
      return tagged(5, 4, enc.sequence([enc.boolean(c.compressed), enc.octets(c.data)]));
    case 'block-dump-old':
      return tagged(5, 5, enc.integer(c.level));
    case 'block-dump':
      return tagged(5, 6, enc.integer(c.level));
    case 'block-set':
      return tagged(5, 7, enc.boolean(c.compressed));
  }
  return unencodable(c);
}

function infoTag(release: InfoRelease): number {
  const tag = INFO_TAG[release];
  return tag ?? fault('E_WIRE_ENCODE', `unknown unikernel info release ${String(release)}`, null);
}

function unencodable(value: unknown): never {
  const shown = (value as { type?: unknown; form?: unknown }) ?? {};
  return fault(
    'E_WIRE_ENCODE',
    `cannot encode command ${String(shown.type)} ${String(shown.form ?? '')}`,
    null,
  );
}

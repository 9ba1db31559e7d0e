// Albatross' state file (albatross-wire.md §5): every version Albatross ever wrote decodes and
// encodes ([0]–[6]), entries in trie pre-order so equal states give equal bytes. Petrel's own
// state is not this file (petrel-state.ts); it imports and exports it.

import { nameAsPath, parseName, pathName, printName } from '../resources/name.js';
import {
  encConfig,
  encConfigV3,
  encConfigV4,
  encPolicy,
  readConfig,
  readConfigV3,
  readConfigV4,
  readPolicy,
} from './config.js';
import { ctx, type Der, derHeader, enc, type Reader, TAG, toBytes, unknownTag } from './der.js';
import { fault, guard, type WireResult } from './errors.js';
import { encConfigV0, encConfigV1, encConfigV2, readConfigV0, readConfigV1, readConfigV2 } from './legacy.js';
import { decodeWhole } from './message.js';
import type { Name, Path, State, StatePolicy, StateUnikernel } from './types.js';

export function decodeState(bytes: Uint8Array): WireResult<State> {
  return decodeWhole(bytes, readState);
}

/**
 * Writes a state file of the state's own version (choice [n]), unikernels and policies sorted
 * into trie pre-order. Petrel exports [6]; the older versions serve tests of the import.
 */
export function encodeState(state: State): WireResult<Uint8Array> {
  return guard(() => {
    const unikernels = (list: readonly StateUnikernel<unknown>[], write: (c: never) => Der): Der => {
      const sorted = [...list].sort((a, b) => preOrder(nameKey(a.name), nameKey(b.name)));
      checkUnique(sorted.map((u) => printName(u.name)));
      return enc.sequence(sorted.map((u) => stateEntry(u.name, write(u.config as never))));
    };
    const body = (list: readonly StateUnikernel<unknown>[], write: (c: never) => Der): Der => {
      if (!('policies' in state)) return unikernels(list, write);
      return enc.sequence([unikernels(list, write), encStatePolicies(state.policies)]);
    };
    const version = state.version;
    if (!Number.isInteger(version) || version < 0 || version > 6)
      fault('E_WIRE_ENCODE', `no state version ${String(version)}`, null);
    const writers = [encConfigV1, encConfigV0, encConfigV2, encConfigV3, encConfigV3, encConfigV4, encConfig];
    return toBytes(enc.explicit(version, body(state.unikernels, writers[version] as (c: never) => Der)));
  });
}

/** The policies of a state file, in trie pre-order. */
export function encStatePolicies(policies: readonly StatePolicy[]): Der {
  const sorted = [...policies].sort((a, b) => preOrder(a.path, b.path));
  checkUnique(sorted.map((p) => printName(pathName(p.path))));
  return enc.sequence(sorted.map((p) => entry(printName(pathName(p.path)), encPolicy(p.policy))));
}

/** One unikernel entry of a state file: its name and its configuration. */
export const stateEntry = (name: Name, config: Der): Der => entry(printName(name), config);

/**
 * The bytes of State [6] before its first unikernel entry, for a file written piece by piece
 * (an export holds every image, too much to build in memory): the caller writes this head, the
 * entries (`stateEntry`, in `sortStateNames` order), then `encStatePolicies` as the tail.
 */
export function stateV6Head(entriesSize: number, tailSize: number): WireResult<Uint8Array> {
  return guard(() => {
    const unikernels = derHeader(TAG.SEQUENCE, entriesSize);
    const outerLength = unikernels.length + entriesSize + tailSize;
    const outer = derHeader(TAG.SEQUENCE, outerLength);
    const choice = derHeader(ctx(6), outer.length + outerLength);
    return Buffer.concat([choice, outer, unikernels]);
  });
}

/** Names sorted into the trie pre-order of state files. */
export function sortStateNames<T extends { readonly name: Name }>(list: readonly T[]): T[] {
  return [...list].sort((a, b) => preOrder(nameKey(a.name), nameKey(b.name)));
}

const entry = (key: string, value: Der): Der => enc.sequence([enc.utf8(key), value]);
const nameKey = (name: Name): readonly string[] =>
  name.label === null ? name.path : [...name.path, name.label];

/** A node before its descendants; siblings in ascending bytewise order (labels are ASCII). */
export function preOrder(a: readonly string[], b: readonly string[]): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a[i] as string;
    const y = b[i] as string;
    if (x !== y) return x < y ? -1 : 1;
  }
  return a.length - b.length;
}

function checkUnique(keys: readonly string[]): void {
  for (let i = 1; i < keys.length; i++) {
    if (keys[i] === keys[i - 1]) fault('E_WIRE_DUPLICATE', `duplicate state entry ${keys[i]}`, null);
  }
}

function readState(r: Reader): State {
  return r.choice('state', (n, inner): State => {
    switch (n) {
      case 0:
        return { version: 0, unikernels: readUnikernels(inner, readConfigV1) };
      case 1:
        return { version: 1, unikernels: readUnikernels(inner, readConfigV0) };
      case 2:
        return { version: 2, unikernels: readUnikernels(inner, readConfigV2) };
      case 3:
        return { version: 3, unikernels: readUnikernels(inner, readConfigV3) };
      case 4:
        return inner.sequence((s) => ({
          version: 4,
          unikernels: readUnikernels(s, readConfigV3),
          policies: readPolicies(s),
        }));
      case 5:
        return inner.sequence((s) => ({
          version: 5,
          unikernels: readUnikernels(s, readConfigV4),
          policies: readPolicies(s),
        }));
      case 6:
        return inner.sequence((s) => ({
          version: 6,
          unikernels: readUnikernels(s, readConfig),
          policies: readPolicies(s),
        }));
      case 7:
        return fault('E_WIRE_UNSUPPORTED', 'state version [7] not yet implemented', r.lastStart);
      default:
        return unknownTag('state', ctx(n), r.lastStart);
    }
  });
}

/** Reads a name key; `.`-joined 1.x names simply parse as one root-level label. */
function readKey(r: Reader): { readonly name: Name; readonly at: number } {
  const at = r.offset;
  const parsed = parseName(r.utf8('name'));
  if (!parsed.ok) fault('E_WIRE_NAME', `invalid state key: ${parsed.error.message}`, at);
  return { name: parsed.value, at };
}

function readUnikernels<C>(r: Reader, readConfigShape: (r: Reader) => C): StateUnikernel<C>[] {
  const seen = new Set<string>();
  return r.listOf((e) =>
    e.sequence((s) => {
      const { name, at } = readKey(s);
      const key = printName(name);
      if (seen.has(key)) fault('E_WIRE_DUPLICATE', `duplicate unikernel ${key} in state`, at);
      seen.add(key);
      return { name, config: readConfigShape(s) };
    }),
  );
}

/** Policy keys are paths (`:`, `user:`); a key with a label stands for the path it denotes. */
function readPolicies(r: Reader): StatePolicy[] {
  const seen = new Set<string>();
  return r.listOf((e) =>
    e.sequence((s) => {
      const { name, at } = readKey(s);
      const path: Path = nameAsPath(name);
      const key = printName(pathName(path));
      if (seen.has(key)) fault('E_WIRE_DUPLICATE', `duplicate policy ${key} in state`, at);
      seen.add(key);
      return { path, policy: readPolicy(s) };
    }),
  );
}

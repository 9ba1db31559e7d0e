// The persistent state file (albatross-wire.md §5): every version Albatross ever wrote decodes
// ([0]–[6]); Petrel writes [6], entries in trie pre-order so equal states give equal bytes.

import { nameAsPath, parseName, pathName, printName } from '../resources/name.js';
import { encConfig, encPolicy, readConfig, readConfigV3, readConfigV4, readPolicy } from './config.js';
import { ctx, type Der, enc, Reader, toBytes, unknownTag } from './der.js';
import { fault, guard, type WireResult } from './errors.js';
import { readConfigV0, readConfigV1, readConfigV2 } from './legacy.js';
import { plain } from './message.js';
import type { CurrentState, Name, Path, State, StatePolicy, StateUnikernel } from './types.js';

export function decodeState(bytes: Uint8Array): WireResult<State> {
  return guard(() => {
    const r = new Reader(plain(bytes));
    const state = readState(r);
    r.done();
    return state;
  });
}

/** Writes choice [6]; unikernels and policies sorted into trie pre-order. */
export function encodeState(state: CurrentState): WireResult<Uint8Array> {
  return guard(() => {
    if (state.version !== 6)
      fault('E_WIRE_ENCODE', `Petrel writes state version 6, not ${String(state.version)}`, null);
    const unikernels = [...state.unikernels].sort((a, b) => preOrder(nameKey(a.name), nameKey(b.name)));
    const policies = [...state.policies].sort((a, b) => preOrder(a.path, b.path));
    checkUnique(unikernels.map((u) => printName(u.name)));
    checkUnique(policies.map((p) => printName(pathName(p.path))));
    const body = enc.sequence([
      enc.sequence(unikernels.map((u) => entry(printName(u.name), encConfig(u.config)))),
      enc.sequence(policies.map((p) => entry(printName(pathName(p.path)), encPolicy(p.policy)))),
    ]);
    return toBytes(enc.explicit(6, body));
  });
}

const entry = (key: string, value: Der): Der => enc.sequence([enc.utf8(key), value]);
const nameKey = (name: Name): readonly string[] =>
  name.label === null ? name.path : [...name.path, name.label];

/** A node before its descendants; siblings in ascending bytewise order (labels are ASCII). */
function preOrder(a: readonly string[], b: readonly string[]): number {
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

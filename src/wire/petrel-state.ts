// Petrel's own state (petrel-differences.md (j)): every unikernel names its image by SHA-256
// digest, size and compression flag (the image lives in the store), so a record is a few hundred
// bytes. A snapshot holds the whole state; a journal appends one checksummed entry per committed
// transaction with just its changes, so a command writes what it changed, not the whole state.
//
//   Snapshot ::= [16] SEQUENCE { version INTEGER (1 | 2), unikernels SEQUENCE OF Unikernel,
//                                policies SEQUENCE OF SEQUENCE { UTF8String, Policy },
//                                imported SEQUENCE OF OCTET STRING,   -- imported files' SHA-256
//                                replacements SEQUENCE OF Replacement OPTIONAL } -- version 2 only
//   Replacement ::= SEQUENCE { previous Unikernel, passed BOOLEAN } -- a replace being checked
//   Unikernel ::= SEQUENCE { name UTF8String, digest OCTET STRING (32), size INTEGER,
//                            config UnikernelConfig }                 -- its image field empty
//   Entry    ::= SEQUENCE OF Change
//   Change   ::= CHOICE { [0] Unikernel, [1] UTF8String (unikernel removed),
//                         [2] SEQUENCE { UTF8String, Policy }, [3] UTF8String (policy removed),
//                         [4] Replacement (put), [5] UTF8String (replacement resolved) }
// Version 1 is written whenever no replacement is pending, so such a state reads the same in a
// Petrel from before replace; a journal entry with [4]/[5] ends the journal for such a Petrel.
// In the journal file each Entry is framed as: 4-byte big-endian length n, the first 8 bytes of
// the SHA-256 of the n bytes, the n bytes. A torn or damaged entry ends the journal.

import { createHash } from 'node:crypto';
import { ok } from '../resources/errors.js';
import { nameAsPath, parseName, pathName, printName } from '../resources/name.js';
import { encConfigWithImage, encPolicy, readConfig, readPolicy } from './config.js';
import { ctx, type Der, enc, Reader, toBytes, unknownTag } from './der.js';
import { fault, guard, type WireResult } from './errors.js';
import { decodeWhole, plain } from './message.js';
import { preOrder, sortStateNames } from './state.js';
import type { Name, Path, Policy, StatePolicy, UnikernelConfig } from './types.js';

/** A unikernel's configuration as Petrel keeps it: everything but the image bytes. */
export type KeptConfig = Omit<UnikernelConfig, 'image'>;

/** An image in the store: SHA-256 of the inflated image (64 lower-case hex digits), its size. */
export interface ImageRef {
  readonly digest: string;
  readonly size: number;
}

export interface UnikernelRecord {
  readonly name: Name;
  /** `compressed` says how the client sent the image (get and export keep the form). */
  readonly config: KeptConfig;
  readonly image: ImageRef;
}

/**
 * A replace whose liveness check is not over (Petrel (m)): the unikernel it replaced, kept so a
 * start after a crash can bring it back (its image stays in the store), and whether the check
 * had passed (then the replacement stays).
 */
export interface PendingReplacement {
  readonly name: Name;
  readonly previous: { readonly config: KeptConfig; readonly image: ImageRef };
  readonly passed: boolean;
}

export interface PetrelState {
  readonly unikernels: readonly UnikernelRecord[];
  readonly policies: readonly StatePolicy[];
  /** SHA-256 (hex) of the Albatross state files imported so far, so none is imported twice. */
  readonly imported: readonly string[];
  /** Replacements being checked; absent when there are none (a version 1 snapshot). */
  readonly replacements?: readonly PendingReplacement[];
}

export type StateChange =
  | { readonly kind: 'put-unikernel'; readonly record: UnikernelRecord }
  | { readonly kind: 'remove-unikernel'; readonly name: Name }
  | { readonly kind: 'put-policy'; readonly path: Path; readonly policy: Policy }
  | { readonly kind: 'remove-policy'; readonly path: Path }
  | { readonly kind: 'put-replacement'; readonly replacement: PendingReplacement }
  | { readonly kind: 'remove-replacement'; readonly name: Name };

export const EMPTY_STATE: PetrelState = Object.freeze({ unikernels: [], policies: [], imported: [] });

const SNAPSHOT_TAG = 16;
const SNAPSHOT_VERSION = 1;
/** With the replacements field. */
const SNAPSHOT_VERSION_REPLACING = 2;
const DIGEST_BYTES = 32;
/** Bytes before an entry's body in the journal: its length and its checksum. */
export const ENTRY_OVERHEAD = 12;
const NO_IMAGE = new Uint8Array(0);

export function encodeSnapshot(state: PetrelState): WireResult<Uint8Array> {
  return guard(() => {
    const unikernels = sortStateNames(state.unikernels);
    checkUnique(
      unikernels.map((u) => printName(u.name)),
      'unikernel',
    );
    const policies = [...state.policies].sort((a, b) => preOrder(a.path, b.path));
    checkUnique(
      policies.map((p) => printName(pathName(p.path))),
      'policy',
    );
    const replacements = sortStateNames(state.replacements ?? []);
    checkUnique(
      replacements.map((r) => printName(r.name)),
      'replacement',
    );
    const body = enc.sequence([
      enc.integer(replacements.length === 0 ? SNAPSHOT_VERSION : SNAPSHOT_VERSION_REPLACING),
      enc.sequence(unikernels.map(encRecord)),
      enc.sequence(policies.map((p) => encPolicyEntry(p.path, p.policy))),
      enc.sequence(state.imported.map((digest) => enc.octets(digestBytes(digest)))),
      ...(replacements.length === 0 ? [] : [enc.sequence(replacements.map(encReplacement))]),
    ]);
    return toBytes(enc.explicit(SNAPSHOT_TAG, body));
  });
}

export function decodeSnapshot(bytes: Uint8Array): WireResult<PetrelState> {
  return decodeWhole(bytes, (r) =>
    r.explicit(SNAPSHOT_TAG, (x) =>
      x.sequence((s) => {
        const at = s.offset;
        const version = s.int('version');
        if (version !== SNAPSHOT_VERSION && version !== SNAPSHOT_VERSION_REPLACING)
          fault('E_WIRE_VERSION', `unknown Petrel state version ${version}`, at);
        const unikernels = s.listOf(readRecord);
        const policies = s.listOf(readPolicyEntry);
        const imported = s.listOf((i) => digestHex(i));
        const replacements = version === SNAPSHOT_VERSION_REPLACING ? s.listOf(readReplacement) : [];
        checkUnique(
          replacements.map((r) => printName(r.name)),
          'replacement',
        );
        checkUnique(
          unikernels.map((u) => printName(u.name)),
          'unikernel',
        );
        checkUnique(
          policies.map((p) => printName(pathName(p.path))),
          'policy',
        );
        return { unikernels, policies, imported, ...(replacements.length === 0 ? {} : { replacements }) };
      }),
    ),
  );
}

/** One journal entry, framed and checksummed, ready to append. */
export function encodeEntry(changes: readonly StateChange[]): WireResult<Uint8Array> {
  return guard(() => {
    const body = toBytes(enc.sequence(changes.map(encChange)));
    const out = new Uint8Array(ENTRY_OVERHEAD + body.length);
    new DataView(out.buffer).setUint32(0, body.length);
    out.set(checksum(body), 4);
    out.set(body, ENTRY_OVERHEAD);
    return out;
  });
}

export interface Journal {
  /** The committed transactions, oldest first. */
  readonly entries: readonly (readonly StateChange[])[];
  /** Bytes of whole, intact entries from the start (what the file should be cut back to). */
  readonly validBytes: number;
}

/**
 * The entries of a journal file up to the first one that is cut short or damaged: a crash in
 * the middle of an append leaves such a tail, and the transaction it held was never answered.
 */
export function readJournal(bytes: Uint8Array): Journal {
  const entries: StateChange[][] = [];
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 0;
  while (at + ENTRY_OVERHEAD <= bytes.length) {
    const length = view.getUint32(at);
    const end = at + ENTRY_OVERHEAD + length;
    if (end > bytes.length) break;
    const body = bytes.subarray(at + ENTRY_OVERHEAD, end);
    if (!sameBytes(checksum(body), bytes.subarray(at + 4, at + ENTRY_OVERHEAD))) break;
    const changes = decodeChanges(body);
    if (!changes.ok) break;
    entries.push(changes.value);
    at = end;
  }
  return { entries, validBytes: at };
}

function decodeChanges(body: Uint8Array): WireResult<StateChange[]> {
  return guard(() => {
    const r = new Reader(plain(body));
    const changes = r.listOf((x) =>
      x.choice('state change', (n, inner): StateChange => {
        switch (n) {
          case 0:
            return { kind: 'put-unikernel', record: readRecord(inner) };
          case 1:
            return { kind: 'remove-unikernel', name: readKey(inner) };
          case 2: {
            const { path, policy } = readPolicyEntry(inner);
            return { kind: 'put-policy', path, policy };
          }
          case 3:
            return { kind: 'remove-policy', path: nameAsPath(readKey(inner)) };
          case 4:
            return { kind: 'put-replacement', replacement: readReplacement(inner) };
          case 5:
            return { kind: 'remove-replacement', name: readKey(inner) };
          default:
            return unknownTag('state change', ctx(n), x.lastStart);
        }
      }),
    );
    r.done();
    return changes;
  });
}

/**
 * The committed state from the stored files: the snapshot (null = empty) with the journal's
 * intact entries replayed over it. `journalBytes` is how much of the journal was intact.
 */
export function loadPetrelState(
  snapshot: Uint8Array | null,
  journal: Uint8Array | null,
): WireResult<{ readonly state: PetrelState; readonly journalBytes: number }> {
  const base = snapshot === null ? ok(EMPTY_STATE) : decodeSnapshot(snapshot);
  if (!base.ok) return base;
  const unikernels = new Map(base.value.unikernels.map((u) => [printName(u.name), u] as const));
  const policies = new Map(base.value.policies.map((p) => [printName(pathName(p.path)), p] as const));
  const replacements = new Map((base.value.replacements ?? []).map((r) => [printName(r.name), r] as const));
  const replayed = readJournal(journal ?? new Uint8Array(0));
  for (const entry of replayed.entries) applyChanges(unikernels, policies, entry, replacements);
  return ok({
    state: {
      unikernels: [...unikernels.values()],
      policies: [...policies.values()],
      imported: base.value.imported,
      ...(replacements.size === 0 ? {} : { replacements: [...replacements.values()] }),
    },
    journalBytes: replayed.validBytes,
  });
}

/** The state after `changes`, applied in order to maps keyed by printed name (mutated). */
export function applyChanges(
  unikernels: Map<string, UnikernelRecord>,
  policies: Map<string, StatePolicy>,
  changes: readonly StateChange[],
  replacements: Map<string, PendingReplacement> = new Map(),
): void {
  for (const change of changes) {
    switch (change.kind) {
      case 'put-unikernel':
        unikernels.set(printName(change.record.name), change.record);
        break;
      case 'remove-unikernel':
        unikernels.delete(printName(change.name));
        break;
      case 'put-policy':
        policies.set(printName(pathName(change.path)), { path: change.path, policy: change.policy });
        break;
      case 'remove-policy':
        policies.delete(printName(pathName(change.path)));
        break;
      case 'put-replacement':
        replacements.set(printName(change.replacement.name), change.replacement);
        break;
      case 'remove-replacement':
        replacements.delete(printName(change.name));
        break;
    }
  }
}

function encChange(change: StateChange): Der {
  switch (change.kind) {
    case 'put-unikernel':
      return enc.explicit(0, encRecord(change.record));
    case 'remove-unikernel':
      return enc.explicit(1, enc.utf8(printName(change.name)));
    case 'put-policy':
      return enc.explicit(2, encPolicyEntry(change.path, change.policy));
    case 'remove-policy':
      return enc.explicit(3, enc.utf8(printName(pathName(change.path))));
    case 'put-replacement':
      return enc.explicit(4, encReplacement(change.replacement));
    case 'remove-replacement':
      return enc.explicit(5, enc.utf8(printName(change.name)));
  }
  return fault('E_WIRE_ENCODE', 'unknown state change', null);
}

function encRecord(record: UnikernelRecord): Der {
  return enc.sequence([
    enc.utf8(printName(record.name)),
    enc.octets(digestBytes(record.image.digest)),
    enc.integer(record.image.size),
    encConfigWithImage(record.config, enc.octets(NO_IMAGE)),
  ]);
}

function readRecord(r: Reader): UnikernelRecord {
  return r.sequence((s) => {
    const name = readKey(s);
    const digest = digestHex(s);
    const at = s.offset;
    const size = s.int('image size');
    if (size < 0) fault('E_WIRE_INT_RANGE', `negative image size ${size}`, at);
    const { image, ...config } = readConfig(s);
    if (image.length !== 0) fault('E_WIRE_TAG', 'an image inside a Petrel state record', at);
    return { name, config, image: { digest, size } };
  });
}

function encReplacement(r: PendingReplacement): Der {
  return enc.sequence([encRecord({ name: r.name, ...r.previous }), enc.boolean(r.passed)]);
}

function readReplacement(r: Reader): PendingReplacement {
  return r.sequence((s) => {
    const { name, config, image } = readRecord(s);
    return { name, previous: { config, image }, passed: s.boolean('passed') };
  });
}

const encPolicyEntry = (path: Path, policy: Policy): Der =>
  enc.sequence([enc.utf8(printName(pathName(path))), encPolicy(policy)]);

function readPolicyEntry(r: Reader): StatePolicy {
  return r.sequence((s) => ({ path: nameAsPath(readKey(s)), policy: readPolicy(s) }));
}

function readKey(r: Reader): Name {
  const at = r.offset;
  const parsed = parseName(r.utf8('name'));
  if (!parsed.ok) fault('E_WIRE_NAME', `invalid state key: ${parsed.error.message}`, at);
  return parsed.value;
}

function digestHex(r: Reader): string {
  const at = r.offset;
  const bytes = r.octets('digest');
  if (bytes.length !== DIGEST_BYTES) fault('E_WIRE_LENGTH', `a digest of ${bytes.length} bytes`, at);
  return Buffer.from(bytes).toString('hex');
}

function digestBytes(hex: string): Uint8Array {
  if (!/^[0-9a-f]{64}$/u.test(hex)) fault('E_WIRE_ENCODE', `not a SHA-256 digest: ${hex}`, null);
  return Buffer.from(hex, 'hex');
}

function checksum(body: Uint8Array): Uint8Array {
  return createHash('sha256').update(body).digest().subarray(0, 8);
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function checkUnique(keys: readonly string[], what: string): void {
  const sorted = [...keys].sort();
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i] === sorted[i - 1])
      fault('E_WIRE_DUPLICATE', `duplicate ${what} ${sorted[i]} in state`, null);
  }
}

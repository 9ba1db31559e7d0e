// The committed state (petrel-differences.md (j)): what the last committed transaction left on
// disk, mirrored in memory. A commit appends one journal entry with its changes (fdatasync) —
// a write the size of the change — and once the journal outgrows the snapshot the whole state
// is written as a new snapshot and the journal emptied. A crash at any byte of either write
// reads back as the last committed transaction: a torn entry ends the journal, and a journal
// replayed over a snapshot that already holds it yields the same state.

import type { Logger } from 'pino';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import { pathName, printName } from '../resources/name.js';
import {
  applyChanges,
  encodeEntry,
  encodeSnapshot,
  loadPetrelState,
  type PendingReplacement,
  type PetrelState,
  type StateChange,
  type UnikernelRecord,
} from '../wire/petrel-state.js';
import type { StatePolicy } from '../wire/types.js';
import { publishStep } from './events.js';
import type { EngineHost } from './host-types.js';

/** The journal is compacted once it holds more than this, or more than the snapshot. */
export const DEFAULT_COMPACT_BYTES = 64 * 1024;

/** The name state-wide steps are published under (crash tests: `:@compacted`). */
export const STATE_STEP_NAME = ':';

export interface LoadedState {
  readonly state: PetrelState;
  /** False when neither a snapshot nor a journal exists (a first start, or an older Petrel's). */
  readonly found: boolean;
  /** Bytes of a torn or damaged journal tail that were ignored. */
  readonly ignoredBytes: number;
}

export class StateBook {
  readonly #host: EngineHost;
  readonly #log: Logger;
  readonly #compactBytes: number;
  #unikernels = new Map<string, UnikernelRecord>();
  #policies = new Map<string, StatePolicy>();
  /** Replacements being checked (Petrel (m)): their previous images count as named. */
  #replacements = new Map<string, PendingReplacement>();
  #imported: readonly string[] = [];
  /** Committed records per image digest; and images the start-up copy names (kept a run longer). */
  #images = new Map<string, number>();
  #kept = new Set<string>();
  /** Digests the committed state stopped naming since `takeReleased` was last called. */
  #released = new Set<string>();
  #journalBytes = 0;
  #snapshotBytes = 0;
  /** Set when a write failed: the next commit writes the whole state as a snapshot. */
  #mustCompact = false;
  /** The reserve is given up (or not made yet): made whole again when space allows. */
  #reserveSpent = true;

  constructor(host: EngineHost, log: Logger, compactBytes = DEFAULT_COMPACT_BYTES) {
    this.#host = host;
    this.#log = log;
    this.#compactBytes = compactBytes;
  }

  /** Reads the snapshot and replays the journal over it; makes that the committed state. */
  async load(): Promise<Result<LoadedState, PetrelError>> {
    const stored = await this.#host.readState();
    if (!stored.ok) return stored;
    const { snapshot, journal } = stored.value;
    const loaded = loadPetrelState(snapshot, journal);
    if (!loaded.ok)
      return err('E_STATE_READ', `bailing out: the state snapshot: ${loaded.error.message}`, {
        cause: loaded.error,
      });
    this.#set(loaded.value.state);
    this.#snapshotBytes = snapshot?.length ?? 0;
    this.#journalBytes = loaded.value.journalBytes;
    const ignoredBytes = (journal?.length ?? 0) - loaded.value.journalBytes;
    this.#mustCompact = ignoredBytes > 0;
    return ok({ state: loaded.value.state, found: snapshot !== null || journal !== null, ignoredBytes });
  }

  get unikernels(): IterableIterator<UnikernelRecord> {
    return this.#unikernels.values();
  }

  unikernel(key: string): UnikernelRecord | undefined {
    return this.#unikernels.get(key);
  }

  replacement(key: string): PendingReplacement | undefined {
    return this.#replacements.get(key);
  }

  policy(key: string): StatePolicy | undefined {
    return this.#policies.get(key);
  }

  get policies(): readonly StatePolicy[] {
    return [...this.#policies.values()];
  }

  /** Images the committed state stopped naming since the last call (candidates for removal). */
  takeReleased(): string[] {
    const released = [...this.#released];
    this.#released = new Set();
    return released;
  }

  get imported(): readonly string[] {
    return this.#imported;
  }

  /** Whether the committed state, or the copy kept at start-up, names this image. */
  refersTo(digest: string): boolean {
    return this.#images.has(digest) || this.#kept.has(digest);
  }

  /** Images named by the state at start-up stay until the next start (see `keepStartedCopy`). */
  keep(digests: Iterable<string>): void {
    this.#kept = new Set(digests);
  }

  /**
   * Commits one transaction's changes durably; on failure the committed state is unchanged.
   * `current` is the whole state as it should be now: written as a snapshot when the journal is
   * due for compaction, and after a failed write (whose changes the engine has made all the
   * same, so the next write must carry them too).
   */
  async commit(
    changes: readonly StateChange[],
    current: () => Omit<PetrelState, 'imported'>,
  ): Promise<Result<void, PetrelError>> {
    if (changes.length === 0 && !this.#mustCompact) return ok(undefined);
    const entry = encodeEntry(changes);
    if (!entry.ok) return entry;
    const limit = Math.max(this.#compactBytes, this.#snapshotBytes);
    const freeing = changes.every(
      (c) => c.kind === 'remove-unikernel' || c.kind === 'remove-policy' || c.kind === 'remove-replacement',
    );
    if (this.#mustCompact || this.#journalBytes + entry.value.length > limit) {
      return this.replace({ ...current(), imported: this.#imported }, { freeing });
    }
    const appended = await this.#withReserve(freeing, () => this.#host.appendJournal(entry.value));
    if (!appended.ok) {
      this.#mustCompact = true;
      return appended;
    }
    this.#journalBytes += entry.value.length;
    for (const change of changes) {
      if (change.kind === 'put-unikernel' || change.kind === 'remove-unikernel') {
        const name = change.kind === 'put-unikernel' ? change.record.name : change.name;
        const before = this.#unikernels.get(printName(name));
        if (before !== undefined) this.#count(before.image.digest, -1);
        if (change.kind === 'put-unikernel') this.#count(change.record.image.digest, 1);
      }
      if (change.kind === 'put-replacement' || change.kind === 'remove-replacement') {
        const name = change.kind === 'put-replacement' ? change.replacement.name : change.name;
        const before = this.#replacements.get(printName(name));
        if (change.kind === 'put-replacement') this.#count(change.replacement.previous.image.digest, 1);
        if (before !== undefined) this.#count(before.previous.image.digest, -1);
      }
      applyChanges(this.#unikernels, this.#policies, [change], this.#replacements);
    }
    return ok(undefined);
  }

  /**
   * Commits `state` whole: a new snapshot (atomic replace), then an empty journal. A crash
   * between the two replays the old journal over the new snapshot, which changes nothing.
   */
  async replace(
    state: PetrelState,
    options: { readonly freeing?: boolean } = {},
  ): Promise<Result<void, PetrelError>> {
    const bytes = encodeSnapshot(state);
    if (!bytes.ok) return bytes;
    const written = await this.#withReserve(options.freeing ?? false, () =>
      this.#host.writeSnapshot(bytes.value),
    );
    if (!written.ok) {
      this.#mustCompact = true;
      return written;
    }
    this.#set(state);
    this.#snapshotBytes = bytes.value.length;
    publishStep(STATE_STEP_NAME, 'compacted');
    const reset = await this.#host.resetJournal();
    if (reset.ok) {
      this.#journalBytes = 0;
      this.#mustCompact = false;
    } else {
      // Committed all the same: the old entries replay to this state. Try again next time.
      this.#log.warn({ problem: reset.error.message }, 'could not empty the state journal');
      this.#mustCompact = true;
    }
    return ok(undefined);
  }

  /**
   * A write that frees space (it only removes) and failed for a full disk (ENOSPC, EDQUOT) is
   * tried once more after the reserve is given up: a destroy commits on a full disk. The failed
   * try left nothing (an append is cut back, a snapshot's temporary removed).
   */
  async #withReserve(
    freeing: boolean,
    write: () => Promise<Result<void, PetrelError>>,
  ): Promise<Result<void, PetrelError>> {
    const first = await write();
    if (first.ok || !freeing || !noSpace(first.error)) return first;
    if (!(await this.#host.releaseReserve())) return first;
    this.#reserveSpent = true;
    this.#log.warn(
      { problem: first.error.message },
      'state directory full: the reserve is given up for a freeing command',
    );
    return write();
  }

  /** Makes the reserve whole again if it was given up and space allows (after images went). */
  async refillReserve(): Promise<void> {
    if (!this.#reserveSpent) return;
    if (await this.#host.refillReserve()) this.#reserveSpent = false;
  }

  /**
   * Whether `state` must be written: it differs from the committed state, or the journal is
   * torn (the next append must not follow its tail) or due for compaction.
   */
  needsWrite(state: PetrelState): boolean {
    if (this.#mustCompact || this.#journalBytes > Math.max(this.#compactBytes, this.#snapshotBytes))
      return true;
    const a = encodeSnapshot(canonical(state));
    const b = encodeSnapshot(canonical(this.snapshot()));
    return !a.ok || !b.ok || Buffer.compare(a.value, b.value) !== 0;
  }

  /** The committed state as one value (start-up copy, export). */
  snapshot(): PetrelState {
    const replacements = [...this.#replacements.values()];
    return {
      unikernels: [...this.#unikernels.values()],
      policies: this.policies,
      imported: this.#imported,
      ...(replacements.length === 0 ? {} : { replacements }),
    };
  }

  #set(state: PetrelState): void {
    this.#unikernels = new Map(state.unikernels.map((u) => [printName(u.name), u] as const));
    this.#policies = new Map(state.policies.map((p) => [printName(pathName(p.path)), p] as const));
    this.#replacements = new Map((state.replacements ?? []).map((r) => [printName(r.name), r] as const));
    this.#imported = state.imported;
    this.#recount();
  }

  #count(digest: string, by: number): void {
    const count = (this.#images.get(digest) ?? 0) + by;
    if (count > 0) {
      this.#images.set(digest, count);
      return;
    }
    this.#images.delete(digest);
    this.#released.add(digest);
  }

  #recount(): void {
    const before = this.#images;
    this.#images = new Map();
    for (const record of this.#unikernels.values()) this.#count(record.image.digest, 1);
    for (const r of this.#replacements.values()) this.#count(r.previous.image.digest, 1);
    for (const digest of before.keys()) if (!this.#images.has(digest)) this.#released.add(digest);
  }
}

/** A write refused by a full file system or an exhausted quota. */
export function noSpace(error: PetrelError): boolean {
  if (error.code === 'E_HOST_NOSPACE') return true;
  const errno = error.details?.errno;
  return errno === 'ENOSPC' || errno === 'EDQUOT';
}

/** The state with its unikernels and policies in name order: equal states encode alike. */
function canonical(state: PetrelState): PetrelState {
  const byKey =
    <T>(key: (t: T) => string) =>
    (x: T, y: T) =>
      key(x) < key(y) ? -1 : key(x) > key(y) ? 1 : 0;
  return {
    ...state,
    unikernels: [...state.unikernels].sort(byKey((u: UnikernelRecord) => printName(u.name))),
    policies: [...state.policies].sort(byKey((p: StatePolicy) => printName(pathName(p.path)))),
    imported: [...state.imported].sort(),
    ...(state.replacements === undefined || state.replacements.length === 0
      ? {}
      : { replacements: [...state.replacements].sort(byKey((r) => printName(r.name))) }),
  };
}

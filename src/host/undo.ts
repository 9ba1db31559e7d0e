// The undo stack of one engine transaction: every host step pushes how to take itself back,
// and rollback runs them all in reverse, collecting failures instead of stopping at the first.

import type { PetrelError } from '../resources/errors.js';

/** Takes one host step back. May reject; the stack records the failure and goes on. */
export type Undo = () => Promise<void>;

/** What a host step hands back: where the artefact is, and how to remove it again. */
export interface Undoable<T> {
  readonly value: T;
  readonly undo: Undo;
  /**
   * Work that may only happen once the transaction is committed (for example deleting the
   * data of a removed block device, kept aside so that undo can restore it). Absent = none.
   */
  readonly commit?: () => Promise<void>;
}

interface Entry {
  readonly label: string;
  readonly undo: Undo;
  readonly commit: (() => Promise<void>) | undefined;
}

function failure(phase: 'undo' | 'commit', label: string, cause: unknown): PetrelError {
  const text = cause instanceof Error ? cause.message : String(cause);
  return { code: 'E_HOST_UNDO', message: `${phase} of ${label} failed: ${text}`, details: { label, phase } };
}

/**
 * A stack used once: push steps while acting, then either `rollback()` (failure) or `commit()`
 * (success). Both empty the stack, so a second call does nothing.
 */
export class UndoStack {
  #entries: Entry[] = [];

  /** Records `undo` (and optionally a commit-time action) under a label used in errors. */
  push(label: string, undo: Undo, commit?: () => Promise<void>): void {
    this.#entries.push({ label, undo, commit });
  }

  /** Pushes the undo (and commit action) of a step's result and returns its value. */
  add<T>(label: string, step: Undoable<T>): T {
    this.push(label, step.undo, step.commit);
    return step.value;
  }

  get size(): number {
    return this.#entries.length;
  }

  /** Runs every undo, newest first; returns the failures (empty when all went well). */
  async rollback(): Promise<readonly PetrelError[]> {
    const entries = this.#entries.reverse();
    this.#entries = [];
    const errors: PetrelError[] = [];
    for (const entry of entries) {
      try {
        await entry.undo();
      } catch (cause) {
        errors.push(failure('undo', entry.label, cause));
      }
    }
    return errors;
  }

  /** Forgets the undos and runs the commit-time actions, oldest first; returns the failures. */
  async commit(): Promise<readonly PetrelError[]> {
    const entries = this.#entries;
    this.#entries = [];
    const errors: PetrelError[] = [];
    for (const entry of entries) {
      if (entry.commit === undefined) continue;
      try {
        await entry.commit();
      } catch (cause) {
        errors.push(failure('commit', entry.label, cause));
      }
    }
    return errors;
  }
}

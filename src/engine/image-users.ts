// Who uses each stored image right now: running unikernels (the boot canary too), restarts
// waiting for their back-off, transactions under way. An image is removed from the store only
// when nothing here holds it and the committed state does not name it (sweepStore).

import type { Logger } from 'pino';
import type { EngineHost } from './host-types.js';
import type { StateBook } from './state-book.js';

export class ImageUsers {
  readonly #counts = new Map<string, number>();
  /** Digests whose count fell to zero since `takeReleased` was last called. */
  #released = new Set<string>();

  hold(digest: string): void {
    this.#counts.set(digest, (this.#counts.get(digest) ?? 0) + 1);
  }

  drop(digest: string): void {
    const count = (this.#counts.get(digest) ?? 0) - 1;
    if (count > 0) {
      this.#counts.set(digest, count);
      return;
    }
    this.#counts.delete(digest);
    this.#released.add(digest);
  }

  holds(digest: string): boolean {
    return this.#counts.has(digest);
  }

  /** The digests released since the last call (candidates for removal), forgotten here. */
  takeReleased(): string[] {
    const released = [...this.#released];
    this.#released = new Set();
    return released;
  }
}

/**
 * After each task of the engine's queue: removes from the store the images it released that
 * nothing uses and the committed state does not name (a crash in between leaves an image
 * start-up removes, never a state naming a missing one).
 */
export async function sweepStore(
  users: ImageUsers,
  book: StateBook,
  host: EngineHost,
  log: Logger,
): Promise<void> {
  for (const digest of new Set([...users.takeReleased(), ...book.takeReleased()])) {
    if (users.holds(digest) || book.refersTo(digest)) continue;
    const removed = await host.removeStoredImage(digest);
    if (removed.ok) log.debug({ digest }, 'image removed from the store');
    else log.error({ digest, problem: removed.error.message }, 'could not remove an image from the store');
  }
}

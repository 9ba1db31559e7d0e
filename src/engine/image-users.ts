// Who uses each stored image right now: running unikernels (the boot canary too), restarts
// waiting for their back-off, transactions under way. An image is removed from the store only
// when nothing here holds it and the committed state does not name it (engine.ts, #sweep).

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

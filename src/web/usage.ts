// How often each web API token was used, and when last: kept in memory by petreld and written to
// `<stateDir>/web-token-usage.json` at most once a minute (and when it stops), read back at
// start, so counts survive restarts; `petrel ca token --list` prints the file.

import { readFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import { writeFileAtomic } from '../host/files.js';
import { printPath } from '../resources/name.js';
import type { VerifiedToken } from '../tls/token.js';
import { parseUsage, printUsage, type TokenUse } from '../tls/token-usage.js';

export class TokenUsage {
  /** null: counts are kept in memory only. */
  readonly #file: string | null;
  readonly #log: Logger;
  readonly #everyMs: number;
  #tokens = new Map<string, TokenUse>();
  #timer: NodeJS.Timeout | null = null;
  #lastWrite = 0;
  #writing: Promise<void> = Promise.resolve();

  constructor(file: string | null, log: Logger, everyMs = 60_000) {
    this.#file = file;
    this.#log = log;
    this.#everyMs = everyMs;
  }

  /** What the file held at start (counts go on from there). */
  async load(): Promise<void> {
    if (this.#file === null) return;
    try {
      this.#tokens = parseUsage(await readFile(this.#file, 'utf8'));
    } catch {
      // No file yet (or unreadable): counts start from nothing; the next write replaces it.
    }
  }

  used(token: VerifiedToken, now: Date): void {
    const before = this.#tokens.get(token.id);
    this.#tokens.set(token.id, {
      name: token.name,
      delegation: printPath(token.path),
      expires: token.expires.toISOString(),
      uses: (before?.uses ?? 0) + 1,
      lastUsed: now.toISOString(),
    });
    if (this.#timer !== null || this.#file === null) return;
    const wait = Math.max(0, this.#lastWrite + this.#everyMs - Date.now());
    this.#timer = setTimeout(() => void this.flush(), wait);
    this.#timer.unref();
  }

  get(id: string): TokenUse | undefined {
    return this.#tokens.get(id);
  }

  /** Writes the counts now (a timer due is cancelled). */
  flush(): Promise<void> {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    this.#lastWrite = Date.now();
    const file = this.#file;
    if (file === null) return this.#writing;
    const bytes = Buffer.from(printUsage(this.#tokens));
    this.#writing = this.#writing.then(async () => {
      const written = await writeFileAtomic(file, bytes, { mode: 0o600, durable: false });
      if (!written.ok)
        this.#log.warn({ event: 'web.usage', problem: written.error.message }, 'token usage not written');
    });
    return this.#writing;
  }
}

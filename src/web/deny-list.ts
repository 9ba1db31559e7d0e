// petreld's deny-list of web API tokens and delegations (`<stateDir>/web-deny-list`, appended by
// `petrel ca revoke`): read again whenever the file changes, checked on every request.

import { readFile, stat } from 'node:fs/promises';
import type { Logger } from 'pino';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import { parseDenyList } from '../tls/token.js';

const EMPTY: ReadonlySet<string> = new Set();

export class DenyList {
  readonly #file: string;
  readonly #log: Logger;
  /** What the ids were read from: inode, size and modification time (ns) of the file. */
  #seen = '';
  #ids: ReadonlySet<string> = EMPTY;
  /** A read under way: requests arriving meanwhile wait for it rather than read again. */
  #reading: Promise<Result<ReadonlySet<string>, PetrelError>> | null = null;

  constructor(file: string, log: Logger) {
    this.#file = file;
    this.#log = log;
  }

  /**
   * The ids denied now. A missing file is an empty list; a file that cannot be read is an
   * error, so every token is refused rather than a revoked one let through.
   */
  current(): Promise<Result<ReadonlySet<string>, PetrelError>> {
    this.#reading ??= this.#read().finally(() => {
      this.#reading = null;
    });
    return this.#reading;
  }

  async #read(): Promise<Result<ReadonlySet<string>, PetrelError>> {
    try {
      const info = await stat(this.#file, { bigint: true });
      const seen = `${info.ino}:${info.size}:${info.mtimeNs}`;
      if (seen === this.#seen) return ok(this.#ids);
      const parsed = parseDenyList(await readFile(this.#file, 'utf8'));
      if (parsed.invalid.length > 0) {
        this.#log.warn(
          { event: 'web.deny-list', lines: parsed.invalid },
          'deny-list lines that are not an id are ignored',
        );
      }
      this.#seen = seen;
      this.#ids = parsed.ids;
      return ok(this.#ids);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') {
        this.#seen = '';
        this.#ids = EMPTY;
        return ok(EMPTY);
      }
      this.#log.error(
        { event: 'web.deny-list', code },
        'the deny-list cannot be read: every token is refused',
      );
      return err(
        'E_TOKEN_DENY_LIST',
        `the deny-list cannot be read (${code ?? 'error'}): tokens are refused`,
      );
    }
  }
}

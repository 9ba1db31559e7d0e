// The web listener's `web.refused` lines (a handshake, a token, a preflight, a limit): at most
// ten a second, so a peer that is refused in a loop cannot fill petreld's log.

import type { Logger } from 'pino';

/** `web.refused` lines a second at most. */
const REFUSALS_LOGGED = 10;

export class RefusalLog {
  readonly #log: Logger;
  #refusedAt = 0;
  #refusedInSecond = 0;

  constructor(log: Logger) {
    this.#log = log;
  }

  note(fields: Record<string, unknown>): void {
    const now = Date.now();
    if (now - this.#refusedAt >= 1000) {
      this.#refusedAt = now;
      this.#refusedInSecond = 0;
    }
    if (this.#refusedInSecond++ < REFUSALS_LOGGED)
      this.#log.warn({ event: 'web.refused', ...fields }, 'refused');
  }
}

// The sign of life of a long transfer: one line on a terminal's stderr, redrawn as the bytes
// move (so far, of how many when known, and the rate), fed by the transport's byte counts.

import type { CliIo } from '../command.js';
import type { TransferMeter } from './transport.js';

/** Transfers up to this many bytes (1 MB) end too soon to need a sign of life. */
export const PROGRESS_ABOVE = 1_000_000;
/** At most ten redraws a second: a terminal need not see every 64 KiB. */
const REDRAW_MS = 100;
const MiB = 1024 * 1024;

/** Which of a connection's bytes are the transfer: what we send (create, set) or receive. */
export type Direction = 'sent' | 'received';

const mib = (bytes: number): string => `${(bytes / MiB).toFixed(1)} MiB`;

/**
 * Counts one direction's bytes and draws `label: 12.0 MiB of 30.0 MiB (40%), 95.3 MiB/s` once
 * more than PROGRESS_ABOVE have moved; finish() draws the last figures and ends the line.
 */
export class ProgressLine implements TransferMeter {
  readonly #io: CliIo;
  readonly #label: string;
  readonly #direction: Direction;
  readonly #total: number | null;
  #bytes = 0;
  #firstAt: number | null = null;
  #drawnAt: number | null = null;

  constructor(io: CliIo, label: string, direction: Direction, total: number | null) {
    this.#io = io;
    this.#label = label;
    this.#direction = direction;
    this.#total = total;
  }

  sent(bytes: number): void {
    if (this.#direction === 'sent') this.#count(bytes);
  }

  received(bytes: number): void {
    if (this.#direction === 'received') this.#count(bytes);
  }

  /** Draws the final figures and ends the line, when the transfer was large enough to show. */
  finish(): void {
    if (this.#bytes <= PROGRESS_ABOVE) return;
    this.#draw(performance.now());
    this.#io.stderr('\n');
  }

  #count(bytes: number): void {
    const now = performance.now();
    this.#firstAt ??= now;
    this.#bytes += bytes;
    if (this.#bytes <= PROGRESS_ABOVE) return;
    if (this.#drawnAt === null || now - this.#drawnAt >= REDRAW_MS) this.#draw(now);
  }

  #draw(now: number): void {
    this.#drawnAt = now;
    const total = this.#total;
    // The frames' length prefixes count too, so the bytes may pass the payload's size a little.
    const of =
      total === null || total === 0
        ? ''
        : ` of ${mib(total)} (${Math.min(100, Math.floor((this.#bytes * 100) / total))}%)`;
    const seconds = Math.max(now - (this.#firstAt ?? now), 1) / 1000;
    this.#io.stderr(`\r${this.#label}: ${mib(this.#bytes)}${of}, ${mib(this.#bytes / seconds)}/s\x1b[K`);
  }
}

// Failed authentications counted per peer address (IPv4, or IPv6 per /64, as admission keys
// them), so one peer guessing or replaying bad tokens is refused without a signature check
// once it has failed `max` times in a window. Pure: the caller passes the clock.

import { addressKey } from './admission.js';

export interface FailureLimits {
  /** Failures of one address within `windowMs` after which it is refused until the window ends. */
  readonly max: number;
  readonly windowMs: number;
  /** Addresses remembered at most; the oldest window is forgotten first. */
  readonly maxAddresses: number;
}

export const FAILURE_DEFAULTS: FailureLimits = { max: 30, windowMs: 60_000, maxAddresses: 10_000 };

interface Window {
  readonly start: number;
  count: number;
}

export class FailureTable {
  readonly #limits: FailureLimits;
  /** In the order windows began: the first is the oldest. */
  readonly #windows = new Map<string, Window>();

  constructor(limits: FailureLimits = FAILURE_DEFAULTS) {
    this.#limits = limits;
  }

  /** Milliseconds until `address` may try again; 0 when it may now. */
  refusedFor(address: string, now: number): number {
    const window = this.#current(addressKey(address), now);
    if (window === undefined || window.count < this.#limits.max) return 0;
    return window.start + this.#limits.windowMs - now;
  }

  /** One more failure of `address`. */
  failed(address: string, now: number): void {
    const key = addressKey(address);
    const window = this.#current(key, now);
    if (window !== undefined) {
      window.count++;
      return;
    }
    this.#windows.set(key, { start: now, count: 1 });
    if (this.#windows.size > this.#limits.maxAddresses) {
      this.#windows.delete(this.#windows.keys().next().value as string);
    }
  }

  get size(): number {
    return this.#windows.size;
  }

  #current(key: string, now: number): Window | undefined {
    const window = this.#windows.get(key);
    if (window === undefined || now - window.start < this.#limits.windowMs) return window;
    this.#windows.delete(key);
    return undefined;
  }
}

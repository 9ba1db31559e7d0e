// Admission on petreld's local sockets: a cap on connections, and idleness (a connection is
// idle until it has sent a complete request) closed after a timeout or when the cap is
// reached, oldest first. A subscription is never idle. Counted like the network gates.

import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { type GateCounts, openGates } from '../net/gate.js';

export interface LocalAdmissionOptions {
  readonly maxConnections: number;
  readonly idleTimeoutMs: number;
  readonly log: Logger;
}

const SWEEP_MS = 1000;

export class LocalAdmission {
  readonly #options: LocalAdmissionOptions;
  readonly #open = new Set<Duplex>();
  /** Idle connections and since when, oldest first (a Map keeps insertion order). */
  readonly #idle = new Map<Duplex, number>();
  readonly #refused: Record<string, number> = {};
  readonly #evicted: Record<string, number> = {};
  readonly #timer: NodeJS.Timeout;
  #loggedAt = 0;
  #unlogged = 0;

  constructor(options: LocalAdmissionOptions) {
    this.#options = options;
    this.#timer = setInterval(() => this.#sweep(), SWEEP_MS).unref();
    openGates.add(this);
  }

  get open(): ReadonlySet<Duplex> {
    return this.#open;
  }

  /** A new connection; false when it was refused (and destroyed). It starts idle. */
  admit(socket: Duplex): boolean {
    if (this.#open.size >= this.#options.maxConnections) {
      const oldest = this.#idle.keys().next();
      if (oldest.done === true) {
        this.#count(this.#refused, 'local-cap');
        socket.destroy();
        return false;
      }
      this.#count(this.#evicted, 'idle');
      this.#close(oldest.value);
    }
    this.#open.add(socket);
    this.#idle.set(socket, performance.now());
    socket.once('close', () => {
      this.#open.delete(socket);
      this.#idle.delete(socket);
    });
    return true;
  }

  /** It sent a complete request: busy until `idle` says otherwise. */
  busy(socket: Duplex): void {
    this.#idle.delete(socket);
  }

  /** It waits for its next request (a policy add's connection). */
  idle(socket: Duplex): void {
    if (!this.#open.has(socket) || socket.destroyed) return;
    this.#idle.delete(socket);
    this.#idle.set(socket, performance.now());
  }

  counts(): GateCounts {
    return {
      listener: 'local',
      pending: this.#idle.size,
      pendingBytes: 0,
      peakPendingBytes: 0,
      refused: { ...this.#refused },
      evicted: { ...this.#evicted },
    };
  }

  close(): void {
    clearInterval(this.#timer);
    openGates.delete(this);
  }

  #close(socket: Duplex): void {
    this.#idle.delete(socket);
    socket.destroy();
  }

  #sweep(): void {
    const oldest = performance.now() - this.#options.idleTimeoutMs;
    for (const [socket, since] of this.#idle) {
      if (since > oldest) break;
      this.#count(this.#evicted, 'idle');
      this.#close(socket);
    }
  }

  #count(counter: Record<string, number>, reason: string): void {
    counter[reason] = (counter[reason] ?? 0) + 1;
    this.#unlogged++;
    const now = Date.now();
    if (now - this.#loggedAt < 1000) return;
    this.#loggedAt = now;
    this.#options.log.warn(
      { event: 'admission.shed', listener: 'local', closed: this.#unlogged, open: this.#open.size },
      'local connections refused or closed',
    );
    this.#unlogged = 0;
  }
}

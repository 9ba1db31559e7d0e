// The shell of admission (src/resources/admission.ts) for any listener of petreld: tickets for
// pending sockets, the sweep that runs the table's decisions, counters for /metrics and a log
// of refusals and evictions at most once a second. The listener says when bytes arrive and
// when a connection is settled; the gate pauses, resumes and destroys.

import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import {
  type AdmissionLimits,
  AdmissionTable,
  addressKey,
  type EvictReason,
} from '../resources/admission.js';

export interface TicketHooks {
  /** The connection must go now (its socket destroyed by the hook). */
  readonly evict: (reason: EvictReason) => void;
  /** Stop reading it (held for a byte reservation), and start again. */
  readonly hold?: () => void;
  readonly resume?: () => void;
  /**
   * Bytes read so far, for a listener that cannot report each read (node:http parses in C++):
   * sampled at every sweep.
   */
  readonly sample?: () => number;
}

export interface Ticket {
  /** `total` bytes read from the socket in all; `helloDone` once the first record is in. */
  read(total: number, helloDone: boolean): void;
  /** No longer pending (authenticated, refused by the listener, or closed). Idempotent. */
  settle(): void;
}

export interface GateCounts {
  readonly listener: string;
  readonly pending: number;
  readonly pendingBytes: number;
  /** The most bytes pending connections had read at once, since the gate opened. */
  readonly peakPendingBytes: number;
  readonly refused: Readonly<Record<string, number>>;
  readonly evicted: Readonly<Record<string, number>>;
}

/** A listener petreld serves behind a gate (the TLS endpoint, the web API), as the daemon drives it. */
export interface GatedListener {
  /** Starts listening; resolves with the bound address. */
  listen(): Promise<AddressInfo>;
  /** Stops listening and closes every connection, pending or served. */
  close(): Promise<void>;
  /** Admission counters (for /metrics and the separate endpoint's minute log). */
  counts(): GateCounts;
}

/** Every gate open in this process (network and local), for /metrics. */
export const openGates = new Set<{ counts(): GateCounts }>();

const SWEEP_MS = 250;

export class Gate {
  readonly #name: string;
  readonly #table: AdmissionTable;
  readonly #log: Logger;
  readonly #hooks = new Map<number, TicketHooks>();
  readonly #refused: Record<string, number> = {};
  readonly #evicted: Record<string, number> = {};
  readonly #timer: NodeJS.Timeout;
  #next = 0;
  #peak = 0;
  /** What happened since the last log line, and when that was. */
  #unlogged: Record<string, number> = {};
  #lastRemote: string | null = null;
  #loggedAt = 0;
  #flush: NodeJS.Timeout | null = null;

  readonly #minute: NodeJS.Timeout | null;

  /** `countersEveryMs`: also log the counters this often, when they changed. */
  constructor(name: string, limits: AdmissionLimits, log: Logger, countersEveryMs?: number) {
    this.#name = name;
    this.#table = new AdmissionTable(limits);
    this.#log = log;
    this.#timer = setInterval(() => this.#sweep(), SWEEP_MS).unref();
    let last = '';
    this.#minute =
      countersEveryMs === undefined
        ? null
        : setInterval(() => {
            const counts = this.counts();
            const text = JSON.stringify([counts.refused, counts.evicted]);
            if (text === last) return;
            last = text;
            this.#log.info({ event: 'admission.counters', ...counts }, 'admission counters');
          }, countersEveryMs).unref();
    openGates.add(this);
  }

  /** A new socket from `remote`: its ticket, or null when refused (the caller destroys it). */
  admit(remote: string | undefined, hooks: TicketHooks): Ticket | null {
    const id = this.#next++;
    const key = addressKey(remote ?? 'unknown');
    const decision = this.#table.admit(id, key, performance.now());
    if (!decision.admitted) {
      this.#refused[decision.reason] = (this.#refused[decision.reason] ?? 0) + 1;
      this.#note(`refused:${decision.reason}`, remote);
      return null;
    }
    for (const victim of decision.evict) this.#evict(victim.id, victim.reason);
    this.#hooks.set(id, hooks);
    let settled = false;
    return {
      read: (total, helloDone) => {
        if (settled) return;
        const decision = this.#table.read(id, total, helloDone, performance.now());
        if (this.#table.bytes > this.#peak) this.#peak = this.#table.bytes;
        for (const victim of decision.evict) this.#evict(victim.id, victim.reason);
        if (decision.hold) hooks.hold?.();
      },
      settle: () => {
        if (settled) return;
        settled = true;
        this.#drop(id);
      },
    };
  }

  /** Something the listener refused on its own (a bad first byte, a failed handshake). */
  refused(reason: string, remote: string | undefined, details?: Record<string, unknown>): void {
    this.#refused[reason] = (this.#refused[reason] ?? 0) + 1;
    this.#note(`refused:${reason}`, remote, details);
  }

  counts(): GateCounts {
    return {
      listener: this.#name,
      pending: this.#table.pending,
      pendingBytes: this.#table.bytes,
      peakPendingBytes: this.#peak,
      refused: { ...this.#refused },
      evicted: { ...this.#evicted },
    };
  }

  close(): void {
    clearInterval(this.#timer);
    if (this.#minute !== null) clearInterval(this.#minute);
    if (this.#flush !== null) clearTimeout(this.#flush);
    this.#flush = null;
    this.#logNow();
    openGates.delete(this);
  }

  #drop(id: number): void {
    if (!this.#table.has(id)) return;
    this.#table.remove(id);
    this.#hooks.delete(id);
    for (const resumed of this.#table.resumable(performance.now())) this.#hooks.get(resumed)?.resume?.();
  }

  #evict(id: number, reason: EvictReason): void {
    const hooks = this.#hooks.get(id);
    this.#table.remove(id);
    this.#hooks.delete(id);
    this.#evicted[reason] = (this.#evicted[reason] ?? 0) + 1;
    this.#note(`evicted:${reason}`, undefined);
    hooks?.evict(reason);
  }

  #sweep(): void {
    const now = performance.now();
    for (const [id, hooks] of this.#hooks) {
      if (hooks.sample === undefined) continue;
      const decision = this.#table.read(id, hooks.sample(), true, now);
      for (const victim of decision.evict) this.#evict(victim.id, victim.reason);
    }
    const { evict } = this.#table.tick(now);
    for (const victim of evict) {
      const hooks = this.#hooks.get(victim.id);
      this.#hooks.delete(victim.id);
      this.#evicted[victim.reason] = (this.#evicted[victim.reason] ?? 0) + 1;
      this.#note(`evicted:${victim.reason}`, undefined);
      hooks?.evict(victim.reason);
    }
    if (evict.length > 0) for (const id of this.#table.resumable(now)) this.#hooks.get(id)?.resume?.();
  }

  /** Counts an event; logs at most one line a second, with what happened since the last. */
  #note(what: string, remote: string | undefined, details?: Record<string, unknown>): void {
    this.#unlogged[what] = (this.#unlogged[what] ?? 0) + 1;
    if (remote !== undefined) this.#lastRemote = remote;
    const now = Date.now();
    if (now - this.#loggedAt >= 1000) {
      this.#logNow(details);
      return;
    }
    if (this.#flush === null) {
      this.#flush = setTimeout(
        () => {
          this.#flush = null;
          this.#logNow();
        },
        1000 - (now - this.#loggedAt),
      ).unref();
    }
  }

  #logNow(details?: Record<string, unknown>): void {
    if (Object.keys(this.#unlogged).length === 0) return;
    this.#loggedAt = Date.now();
    this.#log.warn(
      {
        event: 'admission.shed',
        listener: this.#name,
        ...this.#unlogged,
        ...(this.#lastRemote === null ? {} : { remote: this.#lastRemote }),
        pending: this.#table.pending,
        pendingBytes: this.#table.bytes,
        ...details,
      },
      'connections refused or evicted',
    );
    this.#unlogged = {};
    this.#lastRemote = null;
  }
}

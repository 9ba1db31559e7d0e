// The fleet registry's deny-list of web API tokens and delegations (migration 004): `petrel ca
// revoke --registry URL` adds an id, and every node's web API polls for the ids added since it
// last looked, every `fleetRevocationPoll`, so one revocation holds on every node within that.
//
// Failure: a node that has never read the registry's list since it started refuses every token
// (as an unreadable local list does: a revoked token must not pass for want of a read). Once it
// has, a registry it cannot reach leaves it with the last list it read, with a warning, since
// rows are only ever added: what it misses is what was revoked during the outage.

import type { Logger } from 'pino';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import { type DbError, dbError, type Queryable } from './db.js';

/** Adds `id` to the registry's list; false when it was there already. */
export async function addRevocation(
  db: Queryable,
  id: string,
  label: string,
): Promise<Result<boolean, DbError>> {
  try {
    const added = await db.query(
      'INSERT INTO revocations (id, label) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING RETURNING seq',
      [id, label],
    );
    return ok(added.rowCount === 1);
  } catch (e) {
    return { ok: false, error: dbError(e, 'adding a revocation') };
  }
}

/** The ids added after `seq`, in order, and the last seq read. */
export async function revocationsAfter(
  db: Queryable,
  seq: bigint,
): Promise<Result<{ ids: string[]; last: bigint }, DbError>> {
  try {
    const rows = await db.query<{ seq: string; id: string }>(
      'SELECT seq, id FROM revocations WHERE seq > $1 ORDER BY seq',
      [seq.toString()],
    );
    const last = rows.rows.length === 0 ? seq : BigInt((rows.rows.at(-1) as { seq: string }).seq);
    return ok({ ids: rows.rows.map((r) => r.id), last });
  } catch (e) {
    return { ok: false, error: dbError(e, 'reading revocations') };
  }
}

/** How often a failing registry is mentioned again. */
const WARN_EVERY_MS = 60_000;

/** The registry's list as a node's web API checks it (src/web/server.ts `revocations`). */
export class RevocationPoller {
  readonly #db: Queryable & { end?(): Promise<void> };
  readonly #pollMs: number;
  readonly #log: Logger;
  readonly #ids = new Set<string>();
  #seq = 0n;
  #read = false;
  #failingSince: number | null = null;
  #warnedAt = 0;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  #polling: Promise<void> | null = null;

  constructor(db: Queryable & { end?(): Promise<void> }, pollMs: number, log: Logger) {
    this.#db = db;
    this.#pollMs = pollMs;
    this.#log = log;
  }

  /** Reads the list once (awaited), then every poll interval. */
  async start(): Promise<void> {
    await this.#poll();
    this.#schedule();
  }

  /** The ids revoked in the registry, or an error while it has never been read. */
  current(): Result<ReadonlySet<string>, PetrelError> {
    if (this.#read) return ok(this.#ids);
    return err(
      'E_TOKEN_DENY_LIST',
      "the fleet registry's deny-list has not been read since petreld started: tokens are refused until it is",
    );
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#polling;
    await this.#db.end?.();
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#poll().then(() => this.#schedule());
    }, this.#pollMs);
    this.#timer.unref();
  }

  #poll(): Promise<void> {
    this.#polling = this.#once().finally(() => {
      this.#polling = null;
    });
    return this.#polling;
  }

  async #once(): Promise<void> {
    const read = await revocationsAfter(this.#db, this.#seq);
    const now = Date.now();
    if (!read.ok) {
      this.#failingSince ??= now;
      if (now - this.#warnedAt >= WARN_EVERY_MS) {
        this.#warnedAt = now;
        this.#log.warn(
          {
            event: 'web.registry-deny-list',
            reason: read.error.message,
            kept: this.#read ? this.#ids.size : null,
          },
          this.#read
            ? "the fleet registry's deny-list cannot be read: the last one read is kept"
            : "the fleet registry's deny-list cannot be read: every token is refused until it is",
        );
      }
      return;
    }
    if (this.#failingSince !== null) {
      this.#log.info(
        { event: 'web.registry-deny-list', failedMs: now - this.#failingSince },
        "the fleet registry's deny-list is read again",
      );
      this.#failingSince = null;
      this.#warnedAt = 0;
    }
    for (const id of read.value.ids) this.#ids.add(id);
    this.#seq = read.value.last;
    this.#read = true;
  }
}

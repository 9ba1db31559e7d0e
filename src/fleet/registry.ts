// The node registry in PostgreSQL: nodes write their reports, the placement step reads rows,
// reserves capacity on the node it chose and records where unikernels went. Every result is a
// value; nothing here throws.
//
// Freshness uses one clock, the database's: a report stamps last_seen with now(), and every read
// returns now() beside the rows, so hosts with skewed clocks are judged alike.
//
// Reservations (what placements hold on a node that its report does not show yet):
//   1. reserve() decides and inserts the reservation in ONE transaction holding an advisory
//      lock, so concurrent placements decide one after another, each seeing the reservations of
//      those before it: two placements never both take the last room on a node.
//   2. A reservation counts until it expires or a report lists its unikernel: that report
//      deletes it in the same statement that writes the new free figures, and reserve() makes
//      none for a unikernel its node lists already. Either the report's free figures or the
//      reservation count a unikernel, never both. (A reservation is committed before the create
//      is sent, so it exists before any report can list its unikernel.)
//   3. A create that fails releases its reservation at once; one whose creator died expires.

import type pg from 'pg';
import { err, ok, type Result } from '../resources/errors.js';
import {
  NO_CAPABILITIES,
  NO_RESOURCES,
  type NodeCapacity,
  type NodeReport,
  parseCapacity,
  parseNodeReport,
  type ReportError,
  storedCapabilities,
  storedResources,
  wholeHost,
} from './capabilities.js';
import { type DbError, dbError, inTransaction, type Queryable } from './db.js';
import {
  containmentFor,
  type NodeRow,
  type Placement,
  type PlacementError,
  type PlacementOptions,
  place,
  type Requirements,
  spreadKey,
} from './placement.js';

/** What the registry needs of its database: queries, and a connection for a transaction. */
export interface Database extends Queryable {
  connect(): Promise<pg.PoolClient>;
}

/** Rows and the database clock they were read at. */
export interface Snapshot {
  readonly now: Date;
  readonly nodes: readonly NodeRow[];
}

export interface PlacementRecord {
  readonly vm: string;
  readonly node: string;
  readonly at: Date;
  readonly by: string;
}

export interface ReservationRecord {
  readonly id: string;
  readonly node: string;
  readonly vm: string;
  readonly memoryMiB: number;
  readonly at: Date;
  readonly expiresAt: Date;
}

/** A placement and the reservation that holds its room until the node reports the unikernel. */
export interface Reservation extends Placement {
  /** Its id; '' when none was needed (the node already reports the unikernel). */
  readonly reservation: string;
}

export interface PlaceOptions {
  readonly freshMs: number;
  /** `--node ID`: only there, if it qualifies. */
  readonly node?: string;
  /** The unikernel's name as the node will know it: the tie-break key, and what ends the reservation. */
  readonly vm?: string;
  /** Nodes that refused this create already, with their answer. */
  readonly refused?: ReadonlyMap<string, string>;
}

/** How long a reservation holds at most (the create plus the node's next report). */
export const DEFAULT_RESERVATION_MS = 120_000;

/** How many prefiltered rows the placement query returns (the best by the choice rule first). */
const PREFILTER_LIMIT = 8;
/** Key of the advisory lock placements decide under (arbitrary, fixed: "petrelpl"); deployments'
 * assignments are written under it too (deployments.ts). */
export const PLACEMENT_LOCK = 0x706574726c706cn;

// A quantity of the resources column as the pure code reads it: a number, else 0 (never a cast
// error on a hand-written row).
const quantity = (key: string) =>
  `(CASE jsonb_typeof(n.resources->'${key}') WHEN 'number' THEN (n.resources->'${key}')::numeric ELSE 0 END)`;
const AVAILABLE_MEMORY = `(${quantity('memoryMiB')} - coalesce(held.memory, 0))`;
const AVAILABLE_VMS = `(${quantity('vms')} - coalesce(held.vms, 0))`;

/** Live (unexpired) reservations per node. A report that lists a reservation's unikernel
 * deletes it, and none is made for a unikernel its node lists already: see 2. above. */
const HELD = `held AS (
  SELECT node, sum(memory_mib)::bigint AS memory, count(*)::bigint AS vms
  FROM reservations WHERE expires_at > now() GROUP BY node
)`;

const NODE_COLUMNS = `n.id, n.address, n.last_seen, n.capabilities, n.resources, n.spread,
  cardinality(n.unikernels) AS running, coalesce(held.memory, 0) AS reserved_memory, coalesce(held.vms, 0) AS reserved_vms, now() AS db_now`;
const NODES_WITH_HELD = `WITH ${HELD} SELECT ${NODE_COLUMNS} FROM nodes n LEFT JOIN held ON held.node = n.id`;

/**
 * The placement prefilter. `capabilities @> $1` is answered by the GIN index; freshness, the
 * capacity floors net of reservations and the nodes that refused already filter the bitmap's
 * rows; the order is the choice rule (most free memory after reservations, then the tie key
 * `spread # seed`, then id in code-unit order, hence COLLATE "C").
 */
export const PREFILTER_SQL = `${NODES_WITH_HELD}
WHERE n.capabilities @> $1::jsonb
  AND n.last_seen >= now() - $2::double precision * interval '1 millisecond'
  AND ${AVAILABLE_MEMORY} >= $3
  AND ${AVAILABLE_VMS} >= 1
  AND ${quantity('cpus')} >= $4
  AND n.id <> ALL ($5::text[])
ORDER BY ${AVAILABLE_MEMORY} DESC, (n.spread # $6::integer), n.id COLLATE "C"
LIMIT ${PREFILTER_LIMIT}`;

/** The parameters of PREFILTER_SQL for a workload. */
export function prefilterParams(
  req: Requirements,
  freshMs: number,
  options: Omit<PlaceOptions, 'freshMs'> = {},
): unknown[] {
  return [
    JSON.stringify(containmentFor(req)),
    freshMs,
    req.memoryMiB,
    req.cpus,
    [...(options.refused?.keys() ?? [])],
    spreadKey(options.vm ?? ''),
  ];
}

/** Writes the report and ends the reservations whose unikernels it lists, in one statement. */
const REPORT_SQL = `WITH up AS (
  INSERT INTO nodes (id, address, last_seen, capabilities, resources, unikernels, spread, web_origin)
  VALUES ($1, $2, now(), $3::jsonb, $4::jsonb, $5::text[], $6, $7)
  ON CONFLICT (id) DO UPDATE SET address = EXCLUDED.address, last_seen = EXCLUDED.last_seen,
    capabilities = EXCLUDED.capabilities, resources = EXCLUDED.resources,
    unikernels = EXCLUDED.unikernels, spread = EXCLUDED.spread, web_origin = EXCLUDED.web_origin
  RETURNING id, unikernels
)
DELETE FROM reservations r USING up WHERE r.node = up.id AND r.vm = ANY (up.unikernels)`;

const CAPACITY_SQL = `WITH up AS (
  UPDATE nodes SET last_seen = now(), resources = $2::jsonb, unikernels = $3::text[]
  WHERE id = $1 RETURNING id, unikernels
), ended AS (
  DELETE FROM reservations r USING up WHERE r.node = up.id AND r.vm = ANY (up.unikernels) RETURNING r.id
)
SELECT (SELECT count(*) FROM up)::int AS updated, (SELECT count(*) FROM ended)::int AS ended`;

/** A node as the dashboard's fleet view lists it (migration 005). */
export interface WebNode {
  readonly id: string;
  /** `https://HOST:PORT`, '' when the node reports no web API. */
  readonly webOrigin: string;
  readonly lastSeen: Date;
}

export class Registry {
  readonly #db: Database;
  readonly #reservationMs: number;

  /** `db`: a pool (the registry holds a connection only for the length of one reservation). */
  constructor(db: Database, options: { readonly reservationMs?: number } = {}) {
    this.#db = db;
    this.#reservationMs = options.reservationMs ?? DEFAULT_RESERVATION_MS;
  }

  /**
   * Stores `report` as the node's whole report, REPLACING the previous one (a capability or
   * runtime the node lost disappears), with its capacity (default: the probed totals, nothing
   * running) and last_seen = now(). Ends the reservations of the unikernels it lists.
   * `webOrigin`: where browsers reach its web API ('' for none).
   */
  async report(
    node: string,
    address: string,
    report: NodeReport,
    capacity?: NodeCapacity,
    webOrigin = '',
  ): Promise<Result<void, DbError | ReportError>> {
    const checked = parseNodeReport(report);
    if (!checked.ok) return checked;
    const cap = parseCapacity(capacity ?? wholeHost(checked.value));
    if (!cap.ok) return cap;
    const caps = storedCapabilities(checked.value);
    return this.#upsert(node, address, caps, cap.value, 'writing the report', webOrigin);
  }

  /**
   * Re-sends only the capacity (after a committed change on the node, without probing): free
   * resources, running unikernels, last_seen. False when the node has no row yet (its first
   * full report has not been written).
   */
  async updateCapacity(
    node: string,
    capacity: NodeCapacity,
  ): Promise<Result<boolean, DbError | ReportError>> {
    const cap = parseCapacity(capacity);
    if (!cap.ok) return cap;
    try {
      const result = await this.#db.query<{ updated: number }>(CAPACITY_SQL, [
        node,
        JSON.stringify(storedResources(cap.value)),
        cap.value.unikernels,
      ]);
      return ok((result.rows[0]?.updated ?? 0) > 0);
    } catch (e) {
      return { ok: false, error: dbError(e, `writing the capacity of node ${node}`) };
    }
  }

  /** Stores an empty report: the node stays listed but qualifies for nothing (clean shutdown,
   * failed probe). */
  async withdraw(node: string, address: string, webOrigin = ''): Promise<Result<void, DbError>> {
    const none = { free: NO_RESOURCES, total: { memoryMiB: 0, vms: 0, blockStorageMiB: 0 }, unikernels: [] };
    return this.#upsert(node, address, NO_CAPABILITIES, none, 'withdrawing the report', webOrigin);
  }

  /** The nodes seen within `freshMs` (the database's clock), with their web origins, in id order. */
  async webNodes(freshMs: number): Promise<Result<WebNode[], DbError>> {
    try {
      const result = await this.#db.query<{ id: string; web_origin: string; last_seen: Date }>(
        `SELECT id, web_origin, last_seen FROM nodes
         WHERE last_seen >= now() - $1::double precision * interval '1 millisecond' ORDER BY id COLLATE "C"`,
        [freshMs],
      );
      return ok(result.rows.map((r) => ({ id: r.id, webOrigin: r.web_origin, lastSeen: r.last_seen })));
    } catch (e) {
      return { ok: false, error: dbError(e, 'listing the web origins of nodes') };
    }
  }

  async #upsert(
    node: string,
    address: string,
    capabilities: unknown,
    capacity: NodeCapacity,
    doing: string,
    webOrigin: string,
  ): Promise<Result<void, DbError>> {
    try {
      await this.#db.query(REPORT_SQL, [
        node,
        address,
        JSON.stringify(capabilities),
        JSON.stringify(storedResources(capacity)),
        capacity.unikernels,
        spreadKey(node),
        webOrigin,
      ]);
      return ok(undefined);
    } catch (e) {
      return { ok: false, error: dbError(e, `${doing} of node ${node}`) };
    }
  }

  /** Every node with its live reservations, in id order. */
  async nodes(): Promise<Result<Snapshot, DbError>> {
    return select(this.#db, `${NODES_WITH_HELD} ORDER BY n.id COLLATE "C"`, [], 'listing nodes');
  }

  /** The rows PREFILTER_SQL keeps for `req` (at most PREFILTER_LIMIT, best first). */
  async candidates(req: Requirements, options: PlaceOptions): Promise<Result<Snapshot, DbError>> {
    return select(
      this.#db,
      PREFILTER_SQL,
      prefilterParams(req, options.freshMs, options),
      'prefiltering nodes',
    );
  }

  /** The decision alone, reserving nothing (explain, tests). */
  async place(
    req: Requirements,
    options: PlaceOptions,
  ): Promise<Result<Placement, PlacementError | DbError>> {
    return decide(this.#db, req, options);
  }

  /**
   * Decides and reserves the room on the chosen node, atomically with respect to every other
   * reserve(): see 1. above. Release the reservation when the create fails.
   */
  async reserve(
    req: Requirements,
    options: PlaceOptions,
  ): Promise<Result<Reservation, PlacementError | DbError>> {
    // One round trip: begin, wait for the placements before this one, drop what expired.
    const begin = `BEGIN; SELECT pg_advisory_xact_lock(${PLACEMENT_LOCK}); DELETE FROM reservations WHERE expires_at <= now()`;
    return inTransaction(
      this.#db,
      'reserving a node',
      async (client): Promise<Result<Reservation, PlacementError | DbError>> => {
        const decided = await decide(client, req, options);
        if (!decided.ok) return decided;
        // Nothing to hold for a unikernel the node reports already (its create will be refused).
        const inserted = await client.query<{ id: string }>(
          `INSERT INTO reservations (node, vm, memory_mib, expires_at)
           SELECT $1, $2, $3, now() + $4::double precision * interval '1 millisecond'
           WHERE NOT EXISTS (SELECT 1 FROM nodes WHERE id = $1 AND $2 = ANY (unikernels))
           RETURNING id`,
          [decided.value.node, options.vm ?? '', req.memoryMiB, this.#reservationMs],
        );
        return ok({ ...decided.value, reservation: String(inserted.rows[0]?.id ?? '') });
      },
      begin,
    );
  }

  /** Ends a reservation whose create failed (a no-op when it has ended already, or when none was
   * made: reservation ''). */
  async release(reservation: string): Promise<Result<void, DbError>> {
    if (reservation === '') return ok(undefined);
    try {
      await this.#db.query('DELETE FROM reservations WHERE id = $1', [reservation]);
      return ok(undefined);
    } catch (e) {
      return { ok: false, error: dbError(e, `releasing reservation ${reservation}`) };
    }
  }

  /** Live reservations (not expired; a report listing the unikernel has deleted it), oldest
   * first; only `node`'s when given. */
  async reservations(node?: string): Promise<Result<ReservationRecord[], DbError>> {
    try {
      const result = await this.#db.query<{
        id: string;
        node: string;
        vm: string;
        memory_mib: string;
        at: Date;
        expires_at: Date;
      }>(
        `SELECT id, node, vm, memory_mib, at, expires_at FROM reservations
         WHERE expires_at > now() AND ($1::text IS NULL OR node = $1) ORDER BY id`,
        [node ?? null],
      );
      return ok(
        result.rows.map((r) => ({
          id: String(r.id),
          node: r.node,
          vm: r.vm,
          memoryMiB: Number(r.memory_mib),
          at: r.at,
          expiresAt: r.expires_at,
        })),
      );
    } catch (e) {
      return { ok: false, error: dbError(e, 'reading reservations') };
    }
  }

  /** Appends to the audit trail. `by`: who placed it (user or certificate name). */
  async recordPlacement(vm: string, node: string, by: string): Promise<Result<void, DbError>> {
    try {
      await this.#db.query('INSERT INTO placements (vm, node, by) VALUES ($1, $2, $3)', [vm, node, by]);
      return ok(undefined);
    } catch (e) {
      return { ok: false, error: dbError(e, `recording the placement of ${vm} on ${node}`) };
    }
  }

  /** The audit trail, newest first; only `vm`'s when given. */
  async placements(vm?: string): Promise<Result<PlacementRecord[], DbError>> {
    try {
      const result = await this.#db.query<{ vm: string; node: string; at: Date; by: string }>(
        `SELECT vm, node, at, by FROM placements WHERE $1::text IS NULL OR vm = $1 ORDER BY at DESC, id DESC`,
        [vm ?? null],
      );
      return ok(result.rows.map(({ vm, node, at, by }) => ({ vm, node, at, by })));
    } catch (e) {
      return { ok: false, error: dbError(e, 'reading placements') };
    }
  }
}

/**
 * Places `req`: the pure placement over the prefiltered rows, or over one requested node; when
 * the prefilter leaves no qualifying node, over every row, so the failure names a reason for
 * each node (and a row the prefilter misjudged is still found).
 */
async function decide(
  db: Queryable,
  req: Requirements,
  options: PlaceOptions,
): Promise<Result<Placement, PlacementError | DbError>> {
  const pure = (now: Date): PlacementOptions => ({
    now,
    freshMs: options.freshMs,
    ...(options.node === undefined ? {} : { node: options.node }),
    ...(options.vm === undefined ? {} : { vm: options.vm }),
    ...(options.refused === undefined ? {} : { refused: options.refused }),
  });
  if (options.node !== undefined) {
    const one = await select(
      db,
      `${NODES_WITH_HELD} WHERE n.id = $1`,
      [options.node],
      `reading node ${options.node}`,
    );
    if (!one.ok) return one;
    return place(one.value.nodes, req, pure(one.value.now));
  }
  const candidates = await select(
    db,
    PREFILTER_SQL,
    prefilterParams(req, options.freshMs, options),
    'prefiltering nodes',
  );
  if (!candidates.ok) return candidates;
  const first = place(candidates.value.nodes, req, pure(candidates.value.now));
  if (first.ok) return first;
  const all = await select(db, `${NODES_WITH_HELD} ORDER BY n.id COLLATE "C"`, [], 'listing nodes');
  if (!all.ok) return all;
  return place(all.value.nodes, req, pure(all.value.now));
}

const toNumber = (v: unknown): number => (typeof v === 'number' ? v : Number(v ?? 0));

async function select(
  db: Queryable,
  text: string,
  values: unknown[],
  doing: string,
): Promise<Result<Snapshot, DbError>> {
  let rows: Record<string, unknown>[];
  try {
    rows = (await db.query(text, values)).rows;
  } catch (e) {
    return { ok: false, error: dbError(e, doing) };
  }
  const nodes: NodeRow[] = [];
  for (const row of rows) {
    const {
      id,
      address,
      last_seen,
      capabilities,
      resources,
      spread,
      running,
      reserved_memory,
      reserved_vms,
    } = row;
    if (typeof id !== 'string' || typeof address !== 'string' || !(last_seen instanceof Date)) {
      return err('E_FLEET_DB', `fleet registry: ${doing}: unexpected row ${JSON.stringify(row)}`);
    }
    nodes.push({
      id,
      address,
      lastSeen: last_seen,
      capabilities,
      resources,
      spread: toNumber(spread),
      running: toNumber(running),
      reserved: { memoryMiB: toNumber(reserved_memory), vms: toNumber(reserved_vms) },
    });
  }
  const now = rows[0]?.db_now;
  // With no rows there is no clock to read and nothing to judge by it.
  return ok({ now: now instanceof Date ? now : new Date(), nodes });
}

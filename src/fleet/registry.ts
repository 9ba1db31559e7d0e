// The node registry in PostgreSQL: nodes write their reports, the placement step reads rows and
// records where unikernels went. Every result is a value; nothing here throws.
//
// Freshness uses one clock, the database's: a report stamps last_seen with now(), and every read
// returns now() beside the rows, so hosts with skewed clocks are judged alike.

import { err, ok, type Result } from '../resources/errors.js';
import {
  type CapabilityReport,
  type FreeResources,
  NO_CAPABILITIES,
  NO_RESOURCES,
  parseCapabilityReport,
  type ReportError,
  storedCapabilities,
} from './capabilities.js';
import { type DbError, dbError, type Queryable } from './db.js';
import {
  containmentFor,
  type NodeRow,
  type Placement,
  type PlacementError,
  place,
  type Requirements,
} from './placement.js';

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

/** How many prefiltered rows the placement query returns (the best by the choice rule first). */
const PREFILTER_LIMIT = 8;

// A quantity of the resources column as the pure code reads it: a number, else 0 (never a cast
// error on a hand-written row).
const quantity = (key: string) =>
  `(CASE jsonb_typeof(resources->'${key}') WHEN 'number' THEN (resources->'${key}')::numeric ELSE 0 END)`;
const FREE_MEMORY = quantity('memoryMiB');
const FREE_CPUS = quantity('cpus');

const NODE_COLUMNS = 'id, address, last_seen, capabilities, resources, now() AS db_now';

/**
 * The placement prefilter. `capabilities @> $1` is answered by the GIN index; freshness and the
 * resource floors filter the bitmap's rows; the order is the choice rule (most free memory, then
 * id in code-unit order, hence COLLATE "C").
 */
export const PREFILTER_SQL = `SELECT ${NODE_COLUMNS}
FROM nodes
WHERE capabilities @> $1::jsonb
  AND last_seen >= now() - $2::double precision * interval '1 millisecond'
  AND ${FREE_MEMORY} >= $3
  AND ${FREE_CPUS} >= $4
ORDER BY ${FREE_MEMORY} DESC, id COLLATE "C"
LIMIT ${PREFILTER_LIMIT}`;

/** The parameters of PREFILTER_SQL for a workload. */
export function prefilterParams(req: Requirements, freshMs: number): unknown[] {
  return [JSON.stringify(containmentFor(req)), freshMs, req.memoryMiB, req.cpus];
}

export class Registry {
  readonly #db: Queryable;

  /** `db`: a pool (the registry never holds a connection between calls). */
  constructor(db: Queryable) {
    this.#db = db;
  }

  /**
   * Stores `report` as the node's whole capability report, REPLACING the previous one (a
   * capability the node lost disappears), with its free resources (default: the probed totals)
   * and last_seen = now().
   */
  async report(
    node: string,
    address: string,
    report: CapabilityReport,
    free?: FreeResources,
  ): Promise<Result<void, DbError | ReportError>> {
    const checked = parseCapabilityReport(report);
    if (!checked.ok) return checked;
    const r = checked.value;
    const resources = free ?? { cpus: r.cpus, memoryMiB: r.memoryMiB, blockStorageMiB: r.blockStorageMiB };
    return this.#upsert(node, address, storedCapabilities(r), resources, 'writing the report');
  }

  /** Stores an empty report: the node stays listed but qualifies for nothing (clean shutdown,
   * failed probe). */
  async withdraw(node: string, address: string): Promise<Result<void, DbError>> {
    return this.#upsert(node, address, NO_CAPABILITIES, NO_RESOURCES, 'withdrawing the report');
  }

  async #upsert(
    node: string,
    address: string,
    capabilities: unknown,
    resources: FreeResources,
    doing: string,
  ): Promise<Result<void, DbError>> {
    try {
      await this.#db.query(
        `INSERT INTO nodes (id, address, last_seen, capabilities, resources)
         VALUES ($1, $2, now(), $3::jsonb, $4::jsonb)
         ON CONFLICT (id) DO UPDATE SET address = EXCLUDED.address, last_seen = EXCLUDED.last_seen,
           capabilities = EXCLUDED.capabilities, resources = EXCLUDED.resources`,
        [node, address, JSON.stringify(capabilities), JSON.stringify(resources)],
      );
      return ok(undefined);
    } catch (e) {
      return { ok: false, error: dbError(e, `${doing} of node ${node}`) };
    }
  }

  /** Every node, in id order. */
  async nodes(): Promise<Result<Snapshot, DbError>> {
    return this.#select(`SELECT ${NODE_COLUMNS} FROM nodes ORDER BY id COLLATE "C"`, [], 'listing nodes');
  }

  /** The rows PREFILTER_SQL keeps for `req` (at most PREFILTER_LIMIT, best first). */
  async candidates(req: Requirements, freshMs: number): Promise<Result<Snapshot, DbError>> {
    return this.#select(PREFILTER_SQL, prefilterParams(req, freshMs), 'prefiltering nodes');
  }

  /**
   * Places `req`: the pure placement over the prefiltered rows, or over one requested node;
   * when the prefilter leaves no qualifying node, over every row, so the failure names a reason
   * for each node (and a row the prefilter misjudged is still found).
   */
  async place(
    req: Requirements,
    options: { readonly freshMs: number; readonly node?: string },
  ): Promise<Result<Placement, PlacementError | DbError>> {
    if (options.node !== undefined) {
      const one = await this.#select(
        `SELECT ${NODE_COLUMNS} FROM nodes WHERE id = $1`,
        [options.node],
        `reading node ${options.node}`,
      );
      if (!one.ok) return one;
      return place(one.value.nodes, req, {
        now: one.value.now,
        freshMs: options.freshMs,
        node: options.node,
      });
    }
    const candidates = await this.candidates(req, options.freshMs);
    if (!candidates.ok) return candidates;
    const first = place(candidates.value.nodes, req, { now: candidates.value.now, freshMs: options.freshMs });
    if (first.ok) return first;
    const all = await this.nodes();
    if (!all.ok) return all;
    return place(all.value.nodes, req, { now: all.value.now, freshMs: options.freshMs });
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

  async #select(text: string, values: unknown[], doing: string): Promise<Result<Snapshot, DbError>> {
    let rows: Record<string, unknown>[];
    try {
      rows = (await this.#db.query(text, values)).rows;
    } catch (e) {
      return { ok: false, error: dbError(e, doing) };
    }
    const nodes: NodeRow[] = [];
    for (const row of rows) {
      const { id, address, last_seen, capabilities, resources } = row;
      if (typeof id !== 'string' || typeof address !== 'string' || !(last_seen instanceof Date)) {
        return err('E_FLEET_DB', `fleet registry: ${doing}: unexpected row ${JSON.stringify(row)}`);
      }
      nodes.push({ id, address, lastSeen: last_seen, capabilities, resources });
    }
    const now = rows[0]?.db_now;
    // With no rows there is no clock to read and nothing to judge by it.
    return ok({ now: now instanceof Date ? now : new Date(), nodes });
  }
}

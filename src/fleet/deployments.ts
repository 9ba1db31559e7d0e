// The registry's deployment tables (migration 006): images stored once under their SHA-256,
// deployments with their proofs, each replica's assignment, and leases. Every result is a value.
//
// The registry holds no authority: it stores a proof's bytes and returns them, and every node
// verifies them against its own CA. What the tables keep true is coordination, not trust:
//   1. An image row is worth its key: its bytes hash to it (checked here and by the table).
//   2. An assignment's generation only rises. A place decision names the generation it writes,
//      which must be higher than the stored one; every other decision names the generation it
//      was decided from, which must still be the stored one. Of two deciders that read the same
//      row, exactly one wins; the other is refused and reads again.
//   3. A batch of decisions is written whole or not at all, under the placement lock
//      (registry.ts), so assignments and reservations are decided one placement after another.
//   4. A deployment's replicas are on distinct nodes (a constraint checked at commit).
//   5. A lease has one holder at a time and ends by the database's clock, never by a connection.

import { createHash } from 'node:crypto';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import { type Path, parseName, printName, printPath } from '../resources/name.js';
import { type DbError, dbError, inTransaction, type Queryable } from './db.js';
import type { Assignment, DeploymentRequest, ImageDigest, ReplicaKey, ReplicaState } from './deployment.js';
import type { Requirements } from './placement.js';
import { type Database, PLACEMENT_LOCK } from './registry.js';

export type DeploymentError = PetrelError<
  | 'E_FLEET_IMAGE_DIGEST'
  | 'E_FLEET_IMAGE_UNKNOWN'
  | 'E_FLEET_DEPLOYMENT_INVALID'
  | 'E_FLEET_DEPLOYMENT_UNKNOWN'
  | 'E_FLEET_ASSIGNMENT_REFUSED'
  | 'E_FLEET_LEASE_INVALID'
  | 'E_FLEET_LEASE_CONTENDED'
>;

export interface StoredImage {
  readonly sha256: ImageDigest;
  readonly size: number;
  readonly bytes: Uint8Array;
}

/** A deployment as recorded: the request's fields as copied from its proof, and the proof. */
export interface Deployment {
  readonly request: DeploymentRequest;
  /** The delegation's DER certificate chain, leaf first, exactly as recorded. */
  readonly proof: Uint8Array;
  /** When this request was recorded (a replacing request records a new time). */
  readonly createdAt: Date;
  /** The removal's proof and when it was recorded; null while the deployment stands. */
  readonly removal: { readonly proof: Uint8Array; readonly at: Date } | null;
}

/**
 * What a decider writes for a replica (see 2. above for `generation`):
 *   place     assign it to `node` (state placing): a (re-)placement, `generation` the new one;
 *   unplaced  no node qualifies (`reason` per node): its node is cleared;
 *   wait      its node is lost and it may not move (pinned, block devices): it keeps its node;
 *   retire    its deployment no longer asks for it (removed, or fewer replicas): the row goes;
 *   expire    its delegation expired or was revoked: stopped where it is, never placed again.
 */
export type Decision = ReplicaKey &
  (
    | { readonly kind: 'place'; readonly node: string; readonly generation: number }
    | { readonly kind: 'unplaced'; readonly generation: number; readonly reason: string }
    | { readonly kind: 'wait'; readonly generation: number; readonly reason: string }
    | { readonly kind: 'retire'; readonly generation: number }
    | { readonly kind: 'expire'; readonly generation: number; readonly reason: string }
  );

/** What a node reports of a replica it holds. */
export type ReplicaOutcome =
  | { readonly state: 'running' }
  | { readonly state: 'exited'; readonly status: string };

export type LeaseOutcome =
  | { readonly held: true; readonly expiresAt: Date }
  | { readonly held: false; readonly holder: string; readonly expiresAt: Date };

const sha256Hex = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/** `body`'s result, or what it threw as a DbError about `doing`. */
async function attempt<T, E extends PetrelError = never>(
  doing: string,
  body: () => Promise<Result<T, E | DbError>>,
): Promise<Result<T, E | DbError>> {
  try {
    return await body();
  } catch (e) {
    return { ok: false, error: dbError(e, doing) };
  }
}

/**
 * Stores `bytes` under `sha256` unless it is there already (then nothing is sent but the
 * digest). True when this call stored it. Refuses bytes that do not hash to `sha256`.
 */
export async function storeImage(
  db: Queryable,
  sha256: ImageDigest,
  bytes: Uint8Array,
): Promise<Result<boolean, DeploymentError | DbError>> {
  const actual = sha256Hex(bytes);
  if (actual !== sha256) {
    return err('E_FLEET_IMAGE_DIGEST', `image ${sha256}: its ${bytes.length} bytes have SHA-256 ${actual}`, {
      expected: sha256,
      actual,
    });
  }
  return attempt(`storing image ${sha256}`, async () => {
    const there = await db.query('SELECT 1 FROM images WHERE sha256 = $1', [sha256]);
    if ((there.rowCount ?? 0) > 0) return ok(false);
    // ON CONFLICT: another storer may have stored it since.
    const stored = await db.query(
      'INSERT INTO images (sha256, size, bytes) VALUES ($1, $2, $3) ON CONFLICT (sha256) DO NOTHING',
      [sha256, bytes.length, bytes],
    );
    return ok(stored.rowCount === 1);
  });
}

/** The image stored under `sha256`, or null. */
export async function readImage(
  db: Queryable,
  sha256: ImageDigest,
): Promise<Result<StoredImage | null, DbError>> {
  return attempt(`reading image ${sha256}`, async () => {
    const rows = await db.query<{ size: string; bytes: Buffer }>(
      'SELECT size, bytes FROM images WHERE sha256 = $1',
      [sha256],
    );
    const row = rows.rows[0];
    return ok(
      row === undefined ? null : { sha256, size: Number(row.size), bytes: new Uint8Array(row.bytes) },
    );
  });
}

/** The canonical name of a deployment (`alice:web`, `:hello`), or why `text` is none. */
function deploymentName(text: string): Result<string, DeploymentError> {
  const name = parseName(text);
  if (!name.ok || name.value.label === null) {
    const why = name.ok ? 'a path, not a unikernel' : name.error.message;
    return err('E_FLEET_DEPLOYMENT_INVALID', `deployment ${JSON.stringify(text)}: ${why}`, { name: text });
  }
  return ok(printName(name.value));
}

function checkRequest(request: DeploymentRequest): Result<string, DeploymentError> {
  const name = deploymentName(request.name);
  if (!name.ok) return name;
  const count = (n: number, min: number) => Number.isSafeInteger(n) && n >= min;
  const wrong = !count(request.replicas, 1)
    ? `replicas must be a whole number ≥ 1, not ${request.replicas}`
    : !count(request.blockDevices, 0)
      ? `block devices must be a whole number ≥ 0, not ${request.blockDevices}`
      : null;
  return wrong === null ? name : err('E_FLEET_DEPLOYMENT_INVALID', `deployment ${name.value}: ${wrong}`);
}

const UPSERT_DEPLOYMENT = `INSERT INTO deployments
  (name, replicas, image, command, requirements, block_devices, node, proof)
VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, $8)
ON CONFLICT (name) DO UPDATE SET replicas = EXCLUDED.replicas, image = EXCLUDED.image,
  command = EXCLUDED.command, requirements = EXCLUDED.requirements,
  block_devices = EXCLUDED.block_devices, node = EXCLUDED.node, proof = EXCLUDED.proof,
  created_at = now(), removal_proof = NULL, removed_at = NULL`;

/**
 * Records `request` with its `proof`, replacing the deployment of that name (a removed one stands
 * again). Each replica it asks for that has no assignment gets one, unplaced at generation 0; an
 * existing assignment keeps its node and generation (a replacement moves nothing by itself, and a
 * generation never goes back), and those beyond the new count are left for a decider to retire.
 * The image must be stored already, with the request's size.
 */
export async function recordDeployment(
  db: Database,
  request: DeploymentRequest,
  proof: Uint8Array,
): Promise<Result<void, DeploymentError | DbError>> {
  const checked = checkRequest(request);
  if (!checked.ok) return checked;
  const name = checked.value;
  const { sha256, size } = request.image;
  return inTransaction(db, `recording deployment ${name}`, async (client) => {
    const image = await client.query<{ size: string }>('SELECT size FROM images WHERE sha256 = $1', [sha256]);
    const stored = image.rows[0];
    if (stored === undefined || Number(stored.size) !== size) {
      const why = stored === undefined ? 'is not stored' : `has ${stored.size} bytes, not ${size}`;
      return err('E_FLEET_IMAGE_UNKNOWN', `deployment ${name}: image ${sha256} ${why}; store it first`, {
        sha256,
      });
    }
    await client.query(UPSERT_DEPLOYMENT, [
      name,
      request.replicas,
      sha256,
      request.command,
      JSON.stringify(request.requirements),
      request.blockDevices,
      request.node,
      proof,
    ]);
    await client.query(
      `INSERT INTO assignments (name, index, state) SELECT $1, i, 'unplaced' FROM generate_series(0, $2 - 1) AS i
       ON CONFLICT (name, index) DO NOTHING`,
      [name, request.replicas],
    );
    return ok(undefined);
  });
}

interface DeploymentRow {
  name: string;
  replicas: number;
  image: string;
  size: string;
  command: Buffer;
  requirements: Requirements;
  block_devices: number;
  node: string | null;
  proof: Buffer;
  created_at: Date;
  removal_proof: Buffer | null;
  removed_at: Date | null;
}

/**
 * Every deployment (removed ones too, with their removal), in name order; with `under`, only
 * those named under that delegation path: `alice` holds `alice:web` and `alice:team:db`, never
 * `alice2:web`. The web API scopes its listings by it.
 */
export async function listDeployments(
  db: Queryable,
  options: { readonly under?: Path } = {},
): Promise<Result<Deployment[], DbError>> {
  // A canonical name under a non-root path P starts with `P:`; the colon is the label boundary.
  const prefix =
    options.under === undefined || options.under.length === 0 ? null : `${printPath(options.under)}:`;
  return attempt('listing deployments', async () => {
    const rows = await db.query<DeploymentRow>(
      `SELECT d.name, d.replicas, d.image, i.size, d.command, d.requirements, d.block_devices, d.node,
         d.proof, d.created_at, d.removal_proof, d.removed_at
       FROM deployments d JOIN images i ON i.sha256 = d.image
       WHERE $1::text IS NULL OR starts_with(d.name, $1) ORDER BY d.name COLLATE "C"`,
      [prefix],
    );
    return ok(rows.rows.map(toDeployment));
  });
}

function toDeployment(r: DeploymentRow): Deployment {
  return {
    request: {
      name: r.name,
      replicas: r.replicas,
      image: { sha256: r.image, size: Number(r.size) },
      command: new Uint8Array(r.command),
      requirements: r.requirements,
      blockDevices: r.block_devices,
      node: r.node,
    },
    proof: new Uint8Array(r.proof),
    createdAt: r.created_at,
    removal:
      r.removal_proof === null || r.removed_at === null
        ? null
        : { proof: new Uint8Array(r.removal_proof), at: r.removed_at },
  };
}

/**
 * Marks deployment `name` removed with the removal's `proof`. Its assignments stay until a
 * decider retires them, so each node still sees what it must destroy. False when it was removed
 * already (the first removal is kept).
 */
export async function removeDeployment(
  db: Queryable,
  name: string,
  proof: Uint8Array,
): Promise<Result<boolean, DeploymentError | DbError>> {
  const canonical = deploymentName(name);
  if (!canonical.ok) return canonical;
  return attempt(`removing deployment ${canonical.value}`, async () => {
    const marked = await db.query<{ removed: boolean }>(
      `WITH marked AS (
         UPDATE deployments SET removal_proof = $2, removed_at = now()
         WHERE name = $1 AND removal_proof IS NULL RETURNING name
       )
       SELECT EXISTS (SELECT 1 FROM marked) AS removed FROM deployments WHERE name = $1`,
      [canonical.value, proof],
    );
    const row = marked.rows[0];
    if (row === undefined) {
      return err('E_FLEET_DEPLOYMENT_UNKNOWN', `no deployment ${canonical.value}`, { name: canonical.value });
    }
    return ok(row.removed);
  });
}

interface AssignmentRow {
  name: string;
  index: number;
  node: string | null;
  generation: number;
  state: ReplicaState;
  since: Date;
  reason: string | null;
}

/** Every assignment, or only those assigned to `node`, in (name, index) order. */
export async function readAssignments(db: Queryable, node?: string): Promise<Result<Assignment[], DbError>> {
  return attempt('reading assignments', async () => {
    const rows = await db.query<AssignmentRow>(
      `SELECT name, index, node, generation, state, since, reason FROM assignments
       WHERE $1::text IS NULL OR node = $1 ORDER BY name COLLATE "C", index`,
      [node ?? null],
    );
    return ok(rows.rows);
  });
}

// `since` moves only when the state changes.
const since = (state: string) => `since = CASE WHEN a.state = ${state} THEN a.since ELSE now() END`;
const MOVABLE = `a.state NOT IN ('refused', 'expired')`;

/** Each decision's statement: $1 name, $2 index, $3 generation, $4 node (place) or reason
 * (unplaced, wait, expire). A row it returns is a write done; none, a refusal (explained by `refusal`). */
const DECISION_SQL: Readonly<Record<Decision['kind'], string>> = {
  place: `UPDATE assignments a SET node = $4, generation = $3, state = 'placing', since = now(), reason = NULL
    FROM deployments d
    WHERE a.name = $1 AND a.index = $2 AND d.name = a.name AND a.generation < $3 AND ${MOVABLE}
      AND d.removal_proof IS NULL AND a.index < d.replicas AND (d.node IS NULL OR d.node = $4)
      AND (d.block_devices = 0 OR a.node IS NULL OR a.node = $4)
    RETURNING a.index`,
  unplaced: `UPDATE assignments a SET node = NULL, state = 'unplaced', ${since(`'unplaced'`)}, reason = $4
    WHERE a.name = $1 AND a.index = $2 AND a.generation = $3 AND ${MOVABLE} RETURNING a.index`,
  wait: `UPDATE assignments a SET state = 'waiting', ${since(`'waiting'`)}, reason = $4
    WHERE a.name = $1 AND a.index = $2 AND a.generation = $3 AND ${MOVABLE} AND a.node IS NOT NULL
    RETURNING a.index`,
  expire: `UPDATE assignments a SET state = 'expired', ${since(`'expired'`)}, reason = $4
    WHERE a.name = $1 AND a.index = $2 AND a.generation = $3 AND a.state <> 'refused' RETURNING a.index`,
  retire: `DELETE FROM assignments a USING deployments d
    WHERE a.name = $1 AND a.index = $2 AND a.generation = $3 AND d.name = a.name
      AND (d.removal_proof IS NOT NULL OR a.index >= d.replicas)
    RETURNING a.index`,
};

interface StoredReplica {
  generation: number;
  state: ReplicaState;
  node: string | null;
  replicas: number;
  removed: boolean;
  pin: string | null;
  block_devices: number;
}

/** Why DECISION_SQL wrote nothing for `d`, given the row as it is now (undefined: none). */
function refusal(d: Decision, s: StoredReplica | undefined): string {
  if (s === undefined) return 'it has no assignment';
  if (s.state === 'refused' || (s.state === 'expired' && d.kind !== 'expire'))
    return `it is ${s.state}, which is final`;
  if (d.kind === 'place') {
    if (s.removed) return 'its deployment is removed';
    if (d.index >= s.replicas) return `its deployment has ${s.replicas} replicas`;
    if (s.pin !== null && s.pin !== d.node) return `it is pinned to node ${s.pin}`;
    if (s.block_devices > 0 && s.node !== null && s.node !== d.node)
      return `it has block devices and stays on node ${s.node}`;
    return `generation ${d.generation} is not higher than the registry's ${s.generation}`;
  }
  if (d.generation !== s.generation)
    return `it was decided at generation ${d.generation}, and the registry's is ${s.generation} now`;
  if (d.kind === 'wait') return 'it has no node to wait for';
  return 'its deployment still asks for it';
}

const byReplica = (a: ReplicaKey, b: ReplicaKey): number =>
  a.name < b.name ? -1 : a.name > b.name ? 1 : a.index - b.index;

/**
 * Writes `decisions` whole or not at all (see 2.–4. above). Refused when any one is refused,
 * with the reason of each, or when two name the same replica; nothing is written then, and the
 * decider reads the assignments again.
 */
export async function applyAssignments(
  db: Database,
  decisions: readonly Decision[],
): Promise<Result<void, DeploymentError | DbError>> {
  // One order for every batch: two batches never wait for each other's rows in a cycle.
  const sorted = [...decisions].sort(byReplica);
  const twice = sorted.find((d, i) => i > 0 && byReplica(sorted[i - 1] as Decision, d) === 0);
  if (twice !== undefined) {
    return err(
      'E_FLEET_ASSIGNMENT_REFUSED',
      `replica ${twice.name}/${twice.index} is decided twice in one batch`,
    );
  }
  const begin = `BEGIN; SELECT pg_advisory_xact_lock(${PLACEMENT_LOCK})`;
  return inTransaction(
    db,
    'writing assignments',
    async (client): Promise<Result<void, DeploymentError | DbError>> => {
      const refused: { name: string; index: number; reason: string }[] = [];
      for (const d of sorted) {
        const key = [d.name, d.index, d.generation];
        const params = d.kind === 'place' ? [...key, d.node] : d.kind === 'retire' ? key : [...key, d.reason];
        const done = await client.query(DECISION_SQL[d.kind], params);
        if ((done.rowCount ?? 0) > 0) continue;
        const now = await client.query<StoredReplica>(
          `SELECT a.generation, a.state, a.node, d.replicas, d.removal_proof IS NOT NULL AS removed,
             d.node AS pin, d.block_devices
           FROM assignments a JOIN deployments d ON d.name = a.name WHERE a.name = $1 AND a.index = $2`,
          [d.name, d.index],
        );
        refused.push({ name: d.name, index: d.index, reason: refusal(d, now.rows[0]) });
      }
      if (refused.length > 0) {
        const list = refused.map((r) => `${r.name}/${r.index} (${r.reason})`).join(', ');
        return err('E_FLEET_ASSIGNMENT_REFUSED', `assignments refused, none written: ${list}`, { refused });
      }
      return distinctNodes(client);
    },
    begin,
  );
}

/** Checks 4. above now rather than at COMMIT, so that a breach is a refusal rather than a DbError. */
async function distinctNodes(client: Queryable): Promise<Result<void, DeploymentError>> {
  try {
    await client.query('SET CONSTRAINTS assignments_distinct_nodes IMMEDIATE');
    return ok(undefined);
  } catch (e) {
    if (typeof e !== 'object' || e === null || !('code' in e) || e.code !== '23505') throw e;
    const detail = 'detail' in e ? String(e.detail) : '';
    return err(
      'E_FLEET_ASSIGNMENT_REFUSED',
      `assignments refused, none written: two replicas of one deployment on one node ${detail}`.trim(),
    );
  }
}

/**
 * A node's report of a replica it holds at `generation`. Written only while the registry still
 * assigns that replica to that node at that generation (a waiting replica whose node is back
 * becomes running); false otherwise: the node's copy is stale and it destroys it.
 */
export async function markReplicaState(
  db: Queryable,
  held: ReplicaKey & { readonly node: string; readonly generation: number },
  outcome: ReplicaOutcome,
): Promise<Result<boolean, DbError>> {
  const reason = outcome.state === 'exited' ? outcome.status : null;
  return attempt(`marking replica ${held.name}/${held.index} ${outcome.state}`, async () => {
    const marked = await db.query(
      `UPDATE assignments a SET state = $5, ${since('$5')}, reason = $6
       WHERE a.name = $1 AND a.index = $2 AND a.node = $3 AND a.generation = $4
         AND a.state IN ('placing', 'running', 'waiting', 'exited')`,
      [held.name, held.index, held.node, held.generation, outcome.state, reason],
    );
    return ok((marked.rowCount ?? 0) > 0);
  });
}

/** Takes the lease, or renews it when it is ours already; one statement, so two takers never both win. */
const TAKE_LEASE = `WITH taken AS (
  INSERT INTO leases (key, holder, expires_at) VALUES ($1, $2, now() + $3::double precision * interval '1 millisecond')
  ON CONFLICT (key) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
  WHERE leases.holder = EXCLUDED.holder OR leases.expires_at <= now()
  RETURNING holder, expires_at
)
SELECT holder, expires_at, true AS held FROM taken
UNION ALL SELECT holder, expires_at, false FROM leases WHERE key = $1 AND NOT EXISTS (SELECT 1 FROM taken)`;

/**
 * Takes lease `key` for `holder` for `ttlMs` by the database's clock when it is free, expired or
 * `holder`'s already (renewed); otherwise says who holds it until when. A holder should count
 * its lease from before it asked, by its own monotonic clock, so that it stops acting as the
 * holder before the registry lets another take over.
 */
export async function takeLease(
  db: Queryable,
  key: string,
  holder: string,
  ttlMs: number,
): Promise<Result<LeaseOutcome, DeploymentError | DbError>> {
  if (key === '' || holder === '' || !Number.isFinite(ttlMs) || ttlMs <= 0) {
    return err(
      'E_FLEET_LEASE_INVALID',
      `lease ${JSON.stringify(key)} for ${JSON.stringify(holder)}: a key, a holder and a positive duration are needed, not ${ttlMs} ms`,
    );
  }
  return attempt(`taking lease ${key}`, async () => {
    // The row can change between the statement's snapshot and its insert (a holder committed or
    // released just then), leaving nothing to report: that is asked again.
    for (let tries = 0; tries < 3; tries++) {
      const rows = await db.query<{ holder: string; expires_at: Date; held: boolean }>(TAKE_LEASE, [
        key,
        holder,
        ttlMs,
      ]);
      const row = rows.rows[0];
      if (row === undefined) continue;
      return ok(
        row.held
          ? { held: true, expiresAt: row.expires_at }
          : { held: false, holder: row.holder, expiresAt: row.expires_at },
      );
    }
    return err('E_FLEET_LEASE_CONTENDED', `lease ${key}: changed hands three times while being taken`);
  });
}

/** Ends `holder`'s lease `key` at once; false when `holder` did not hold it. */
export async function releaseLease(
  db: Queryable,
  key: string,
  holder: string,
): Promise<Result<boolean, DbError>> {
  return attempt(`releasing lease ${key}`, async () => {
    const released = await db.query('DELETE FROM leases WHERE key = $1 AND holder = $2', [key, holder]);
    return ok((released.rowCount ?? 0) > 0);
  });
}

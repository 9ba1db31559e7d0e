// The connection to the fleet registry (a PostgreSQL URL), transactions on it, and the one error
// every database failure becomes, with a hint when the schema is missing.

import pg from 'pg';
import type { PetrelError, Result } from '../resources/errors.js';

/** What registry code needs of a connection: a pg.Pool, a pg.Client or a checked-out client. */
export interface Queryable {
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    values?: readonly unknown[],
  ): Promise<pg.QueryResult<R>>;
}

export type DbError = PetrelError<'E_FLEET_DB'>;

export interface OpenOptions {
  /** Connections kept by the pool. Default 4 (the CLI needs one, the reporter one at a time). */
  readonly max?: number;
  /** `application_name` seen in pg_stat_activity. Default `petrel`. */
  readonly applicationName?: string;
  /** How long a connection may take to open before the query fails. Default: no limit. */
  readonly connectTimeoutMs?: number;
}

/**
 * A pool for `url`. Errors of idle connections (server restart, network loss) are swallowed
 * here because the next query reports them as a value; unhandled they would kill the process.
 * Release: `await pool.end()`.
 */
export function openDb(url: string, options: OpenOptions = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 4,
    application_name: options.applicationName ?? 'petrel',
    ...(options.connectTimeoutMs === undefined ? {} : { connectionTimeoutMillis: options.connectTimeoutMs }),
  });
  pool.on('error', () => {});
  return pool;
}

/** Wraps anything a query threw. Undefined table (42P01) means `fleet migrate` was not run. */
export function dbError(e: unknown, doing: string): DbError {
  const message = e instanceof Error ? e.message : String(e);
  const code = typeof e === 'object' && e !== null && 'code' in e ? String(e.code) : undefined;
  const hint = code === '42P01' ? ' (the registry has no schema: run `petrel fleet migrate --db URL`)' : '';
  return {
    code: 'E_FLEET_DB',
    message: `fleet registry: ${doing}: ${message}${hint}`,
    details: code === undefined ? { doing } : { doing, sqlstate: code },
  };
}

/**
 * Runs `body` in one transaction on a connection of its own: committed when it returns ok,
 * rolled back when it returns an error or throws (what it threw becomes a DbError about
 * `doing`). `begin` may carry more statements to run in the same round trip as BEGIN.
 */
export async function inTransaction<T, E extends PetrelError>(
  pool: { connect(): Promise<pg.PoolClient> },
  doing: string,
  body: (client: pg.PoolClient) => Promise<Result<T, E>>,
  begin = 'BEGIN',
): Promise<Result<T, E | DbError>> {
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (e) {
    return { ok: false, error: dbError(e, 'connecting') };
  }
  let broken: Error | undefined;
  try {
    await client.query(begin);
    const outcome = await body(client);
    await client.query(outcome.ok ? 'COMMIT' : 'ROLLBACK');
    return outcome;
  } catch (e) {
    await client.query('ROLLBACK').catch((rollback: unknown) => {
      // A connection that cannot even roll back is not given back to the pool.
      broken = rollback instanceof Error ? rollback : new Error(String(rollback));
    });
    return { ok: false, error: dbError(e, doing) };
  } finally {
    client.release(broken);
  }
}

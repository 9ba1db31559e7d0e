// Schema migrations: `migrations/NNN_name.sql` applied in number order, each recorded with the
// checksum of its text in `petrel_migrations`, so applying again is a no-op.
//
// All pending migrations run in ONE transaction that first takes an advisory lock: concurrent
// migrators serialise, and a failing migration leaves the schema exactly as it was (DDL is
// transactional in PostgreSQL). An applied migration whose file has changed, or an applied
// version this build does not know, stops the migration instead of guessing.

import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import { inTransaction } from './db.js';

export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
  /** sha256 of the file's text, hex. */
  readonly checksum: string;
}

export interface MigrationOutcome {
  /** Migrations this run applied, in order. */
  readonly applied: readonly Migration[];
  /** How many were already recorded. */
  readonly alreadyApplied: number;
}

export type MigrationError = PetrelError<
  'E_FLEET_DB' | 'E_FLEET_MIGRATIONS_INVALID' | 'E_FLEET_MIGRATION_CHANGED' | 'E_FLEET_SCHEMA_NEWER'
>;

const FILE_PATTERN = /^(\d{3})_([a-z0-9_]+)\.sql$/u;
/** Key of the advisory lock held while migrating (arbitrary, fixed: "petrelmg"). */
const LOCK_KEY = 0x706574726c6d67n;

/**
 * `src/fleet/migrations`: beside this module when it runs from source; from the compiled
 * `dist/src/fleet/`, the package's own `src/fleet/migrations` (tsc does not copy .sql files).
 */
export function migrationsDir(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  const beside = path.join(dir, 'migrations');
  if (existsSync(beside)) return beside;
  for (;;) {
    const candidate = path.join(dir, 'src', 'fleet', 'migrations');
    if (existsSync(candidate)) return candidate;
    const parent = path.dirname(dir);
    if (parent === dir) return beside;
    dir = parent;
  }
}

/** Reads and orders the migration files; names must be `NNN_name.sql` with unique numbers. */
export async function loadMigrations(dir = migrationsDir()): Promise<Result<Migration[], MigrationError>> {
  let files: string[];
  try {
    files = (await readdir(dir)).filter((f) => f.endsWith('.sql'));
  } catch (e) {
    return err('E_FLEET_MIGRATIONS_INVALID', `cannot read migrations in ${dir}: ${String(e)}`);
  }
  const migrations: Migration[] = [];
  for (const file of files) {
    const match = FILE_PATTERN.exec(file);
    if (match === null) {
      return err('E_FLEET_MIGRATIONS_INVALID', `migration ${file} is not named NNN_name.sql`, { file });
    }
    const sql = await readFile(path.join(dir, file), 'utf8');
    migrations.push({
      version: Number(match[1]),
      name: match[2] as string,
      sql,
      checksum: createHash('sha256').update(sql).digest('hex'),
    });
  }
  migrations.sort((a, b) => a.version - b.version);
  for (const [i, m] of migrations.entries()) {
    if (i > 0 && migrations[i - 1]?.version === m.version) {
      return err('E_FLEET_MIGRATIONS_INVALID', `two migrations numbered ${m.version}`, {
        version: m.version,
      });
    }
  }
  return ok(migrations);
}

/** Applies what is pending of `migrations` on the database `pool` reaches. */
export async function migrate(
  pool: pg.Pool,
  migrations: readonly Migration[],
): Promise<Result<MigrationOutcome, MigrationError>> {
  return inTransaction(pool, 'migrating', (client) => applyPending(client, migrations));
}

async function applyPending(
  client: pg.PoolClient,
  migrations: readonly Migration[],
): Promise<Result<MigrationOutcome, MigrationError>> {
  await client.query('SELECT pg_advisory_xact_lock($1)', [LOCK_KEY.toString()]);
  await client.query(`CREATE TABLE IF NOT EXISTS petrel_migrations (
    version integer PRIMARY KEY,
    name text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
  )`);
  const recorded = await client.query<{ version: number; name: string; checksum: string }>(
    'SELECT version, name, checksum FROM petrel_migrations ORDER BY version',
  );
  const known = new Map(migrations.map((m) => [m.version, m]));
  for (const row of recorded.rows) {
    const m = known.get(row.version);
    if (m === undefined) {
      return err(
        'E_FLEET_SCHEMA_NEWER',
        `the registry has migration ${row.version} (${row.name}), which this Petrel does not know; upgrade Petrel`,
        { version: row.version },
      );
    }
    if (m.checksum !== row.checksum) {
      return err(
        'E_FLEET_MIGRATION_CHANGED',
        `migration ${row.version} (${row.name}) was applied from a different text; restore the file or migrate a new database`,
        { version: row.version },
      );
    }
  }
  const done = new Set(recorded.rows.map((r) => r.version));
  const applied: Migration[] = [];
  for (const m of migrations) {
    if (done.has(m.version)) continue;
    await client.query(m.sql);
    await client.query('INSERT INTO petrel_migrations (version, name, checksum) VALUES ($1, $2, $3)', [
      m.version,
      m.name,
      m.checksum,
    ]);
    applied.push(m);
  }
  return ok({ applied, alreadyApplied: done.size });
}

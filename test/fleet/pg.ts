// PostgreSQL for the fleet tests: the server at PETREL_TEST_PG_URL when set (CI, or the global
// setup), else a throwaway cluster started by scripts/test-postgres.sh for this file and stopped
// after it. Each test gets its own empty schema. Without PostgreSQL the suites are skipped,
// except under CI, where they fail.

import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe } from 'vitest';
import { openDb } from '../../src/fleet/db.js';
import { loadMigrations, migrate } from '../../src/fleet/migrate.js';

const run = promisify(execFile);
export const SCRIPT = path.resolve(import.meta.dirname, '../../scripts/test-postgres.sh');

function inCi(): boolean {
  const ci = process.env.CI;
  return ci !== undefined && ci !== '' && ci !== 'false' && ci !== '0';
}

export function postgresInstalled(): boolean {
  if (process.env.PG_BIN !== undefined) return existsSync(path.join(process.env.PG_BIN, 'initdb'));
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return false;
  return readdirSync(root).some((v) => existsSync(path.join(root, v, 'bin', 'initdb')));
}

export interface Cluster {
  readonly url: string;
  readonly stop: () => Promise<void>;
}

/** PETREL_TEST_PG_URL (not stopped by us), or a new cluster from the script. */
export async function startCluster(): Promise<Cluster> {
  const given = process.env.PETREL_TEST_PG_URL;
  if (given !== undefined && given !== '') return { url: given, stop: async () => {} };
  if (!postgresInstalled()) {
    throw new Error(
      'PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb) and PETREL_TEST_PG_URL is not set; ' +
        'install it with `apt-get install postgresql`',
    );
  }
  const dir = await mkdtemp(path.join(tmpdir(), 'petrel-pg-'));
  const { stdout } = await run('bash', [SCRIPT, 'start', dir]);
  const url = stdout.trim().split('\n').at(-1) ?? '';
  return { url, stop: async () => void (await run('bash', [SCRIPT, 'stop', dir])) };
}

/**
 * A new empty schema on the cluster at `serverUrl`, and a URL whose connections use it (its
 * `options` set search_path), so every test starts from nothing without the cost of a database.
 * `drop` removes it with everything in it.
 */
export async function createSchema(serverUrl: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `petrel_t_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
  const admin = async (sql: string) => {
    const c = new pg.Client({ connectionString: serverUrl });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  };
  await admin(`CREATE SCHEMA ${name}`);
  const url = new URL(serverUrl);
  url.searchParams.set('options', `-c search_path=${name}`);
  return { url: url.toString(), drop: () => admin(`DROP SCHEMA ${name} CASCADE`) };
}

export interface TestDb {
  readonly url: string;
  readonly pool: pg.Pool;
}

export interface PgContext {
  /** The cluster's URL (after beforeAll). */
  serverUrl(): string;
  /** A fresh schema for the current test, dropped after it; migrated unless told otherwise. */
  schema(options?: { readonly migrated?: boolean }): Promise<TestDb>;
}

/**
 * `describe` for suites that need PostgreSQL: starts (or reuses) the cluster around the suite
 * and drops each test's schema after it.
 */
export function describeWithPostgres(name: string, body: (ctx: PgContext) => void): void {
  const available =
    (process.env.PETREL_TEST_PG_URL !== undefined && process.env.PETREL_TEST_PG_URL !== '') ||
    postgresInstalled();
  if (!available && !inCi()) {
    describe.skip(`${name} (skipped: PostgreSQL is not installed; CI fails instead)`, () => body(dummy));
    return;
  }
  describe(name, () => {
    let cluster: Cluster | undefined;
    // Kept, not thrown from beforeAll, so that every test of the suite fails with it.
    let startError: unknown;
    const cleanups: (() => Promise<void>)[] = [];
    beforeAll(async () => {
      try {
        cluster = await startCluster();
      } catch (e) {
        startError = e;
      }
    }, 60_000);
    afterEach(async () => {
      for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    });
    afterAll(async () => {
      await cluster?.stop();
    }, 60_000);
    const ctx: PgContext = {
      serverUrl: () => {
        if (cluster === undefined) throw startError ?? new Error('PostgreSQL did not start');
        return cluster.url;
      },
      schema: async (options = {}) => {
        const db = await createSchema(ctx.serverUrl());
        const pool = openDb(db.url);
        cleanups.push(db.drop, () => pool.end());
        if (options.migrated ?? true) {
          const migrations = await loadMigrations();
          if (!migrations.ok) throw new Error(migrations.error.message);
          const done = await migrate(pool, migrations.value);
          if (!done.ok) throw new Error(done.error.message);
        }
        return { url: db.url, pool };
      },
    };
    body(ctx);
  });
}

const dummy: PgContext = {
  serverUrl: () => '',
  schema: () => Promise.reject(new Error('PostgreSQL is not available')),
};

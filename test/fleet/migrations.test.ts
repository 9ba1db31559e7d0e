import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type pg from 'pg';
import { expect, it } from 'vitest';
import { loadMigrations, type Migration, migrate } from '../../src/fleet/migrate.js';
import { describeWithPostgres } from './pg.js';

async function shipped(): Promise<Migration[]> {
  const loaded = await loadMigrations();
  if (!loaded.ok) throw new Error(loaded.error.message);
  return loaded.value;
}

/** Tables, columns (type, default, nullability) and indexes of the public schema. */
async function schema(pool: pg.Pool): Promise<unknown> {
  const columns = await pool.query(
    `SELECT table_name, column_name, data_type, column_default, is_nullable FROM information_schema.columns
     WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position`,
  );
  const indexes = await pool.query(
    `SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() ORDER BY indexname`,
  );
  return { columns: columns.rows, indexes: indexes.rows };
}

describeWithPostgres('fleet migrations', (pg) => {
  it('apply to an empty database in order, with the schema of the issue', async () => {
    const { pool } = await pg.schema({ migrated: false });
    const migrations = await shipped();
    expect(migrations.map((m) => m.version)).toEqual([1, 2, 3, 4, 5, 6]);
    const outcome = await migrate(pool, migrations);
    expect(outcome).toMatchObject({ ok: true, value: { alreadyApplied: 0 } });
    if (outcome.ok)
      expect(outcome.value.applied.map((m) => m.name)).toEqual([
        'nodes',
        'placements',
        'capacity',
        'revocations',
        'web_origin',
        'deployments',
      ]);

    const recorded = await pool.query('SELECT version, name FROM petrel_migrations ORDER BY version');
    expect(recorded.rows).toEqual([
      { version: 1, name: 'nodes' },
      { version: 2, name: 'placements' },
      { version: 3, name: 'capacity' },
      { version: 4, name: 'revocations' },
      { version: 5, name: 'web_origin' },
      { version: 6, name: 'deployments' },
    ]);
    const caps = await pool.query(
      `SELECT data_type, column_default, is_nullable FROM information_schema.columns
       WHERE table_schema = current_schema() AND table_name = 'nodes' AND column_name = 'capabilities'`,
    );
    expect(caps.rows).toEqual([{ data_type: 'jsonb', column_default: "'{}'::jsonb", is_nullable: 'NO' }]);
    const gin = await pool.query(
      `SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'nodes' AND indexdef LIKE '%gin%'`,
    );
    expect(gin.rows[0]?.indexdef).toMatch(/USING gin \(capabilities jsonb_path_ops\)/);
    const columns = async (table: string) =>
      (
        await pool.query(
          `SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position`,
          [table],
        )
      ).rows.map((r) => r.column_name);
    expect(await columns('placements')).toEqual(['id', 'vm', 'node', 'at', 'by']);
    expect(await columns('revocations')).toEqual(['seq', 'id', 'label', 'at']);
    expect(await columns('reservations')).toEqual(['id', 'node', 'vm', 'memory_mib', 'at', 'expires_at']);
    expect(await columns('images')).toEqual(['sha256', 'size', 'bytes', 'stored_at']);
    expect(await columns('deployments')).toEqual([
      'name',
      'replicas',
      'image',
      'command',
      'requirements',
      'block_devices',
      'node',
      'proof',
      'created_at',
      'removal_proof',
      'removed_at',
    ]);
    expect(await columns('assignments')).toEqual([
      'name',
      'index',
      'node',
      'generation',
      'state',
      'since',
      'reason',
    ]);
    expect(await columns('leases')).toEqual(['key', 'holder', 'expires_at']);
    expect(await columns('nodes')).toEqual([
      'id',
      'address',
      'last_seen',
      'capabilities',
      'resources',
      'unikernels',
      'spread',
      'web_origin',
    ]);
  });

  it('re-apply as a no-op, also when two migrators race', async () => {
    const { pool } = await pg.schema({ migrated: false });
    const migrations = await shipped();
    const [a, b] = await Promise.all([migrate(pool, migrations), migrate(pool, migrations)]);
    const applied = [a, b].map((r) => (r.ok ? r.value.applied.length : -1)).sort();
    expect(applied).toEqual([0, 6]);
    const before = await schema(pool);
    expect(await migrate(pool, migrations)).toMatchObject({
      ok: true,
      value: { applied: [], alreadyApplied: 6 },
    });
    expect(await schema(pool)).toEqual(before);
  });

  it('refuse an applied migration whose text changed, and a schema newer than this build', async () => {
    const { pool } = await pg.schema();
    const migrations = await shipped();
    const edited = migrations.map((m) => (m.version === 1 ? { ...m, checksum: 'edited' } : m));
    expect(await migrate(pool, edited)).toMatchObject({
      ok: false,
      error: { code: 'E_FLEET_MIGRATION_CHANGED' },
    });
    expect(await migrate(pool, migrations.slice(0, 1))).toMatchObject({
      ok: false,
      error: { code: 'E_FLEET_SCHEMA_NEWER' },
    });
  });

  it('a failing migration leaves the database exactly as it was', async () => {
    const { pool } = await pg.schema({ migrated: false });
    const [first] = await shipped();
    if (first === undefined) throw new Error('no migrations');
    const broken: Migration = { version: 2, name: 'broken', sql: 'CREATE TABLE x (;', checksum: 'x' };
    expect(await migrate(pool, [first, broken])).toMatchObject({ ok: false, error: { code: 'E_FLEET_DB' } });
    const tables = await pool.query(`SELECT tablename FROM pg_tables WHERE schemaname = current_schema()`);
    expect(tables.rows).toEqual([]);
  });
});

it('migration files must be named NNN_name.sql with unique numbers', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'petrel-migrations-'));
  try {
    await writeFile(path.join(dir, '001_a.sql'), 'SELECT 1;');
    await writeFile(path.join(dir, '1_b.sql'), 'SELECT 1;');
    expect(await loadMigrations(dir)).toMatchObject({
      ok: false,
      error: { code: 'E_FLEET_MIGRATIONS_INVALID' },
    });
    await rm(path.join(dir, '1_b.sql'));
    await writeFile(path.join(dir, '001_b.sql'), 'SELECT 1;');
    expect(await loadMigrations(dir)).toMatchObject({
      ok: false,
      error: { message: 'two migrations numbered 1' },
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

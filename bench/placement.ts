// Benchmark: placement against the PostgreSQL registry with 10, 1,000 and 10,000 node rows.
// Prints the median and p95 of Registry.place (the GIN-prefiltered query plus the pure choice),
// of the failing placement (which reads every row to give each node's reason), and the EXPLAIN
// ANALYZE plan of the prefilter at 10,000 rows, which must use the GIN index. Target: ≤ 10 ms.
// The fleet: 200 bridges, 1–3 per node; 90 % kvm, 85 % an hvt tender of ABI 2; ages 0–60 s.
// Uses PETREL_TEST_PG_URL, else starts a throwaway cluster with scripts/test-postgres.sh.
// Run: npm run bench -- placement

import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { openDb } from '../src/fleet/db.js';
import { loadMigrations, migrate } from '../src/fleet/migrate.js';
import type { Requirements } from '../src/fleet/placement.js';
import { PREFILTER_SQL, prefilterParams, Registry } from '../src/fleet/registry.js';

const SIZES = [10, 1_000, 10_000];
const RUNS = 200;
const FRESH_MS = 30_000;
const BRIDGE_COUNT = 200;
const TARGET_MS = 10;

const WANTED: Requirements = { runtime: 'hvt', abi: 2, bridges: ['br-42'], memoryMiB: 512, cpus: 1 };
/** Nobody has this bridge: placement fails and explains every node. */
const IMPOSSIBLE: Requirements = { ...WANTED, bridges: ['br-nowhere'] };

/** mulberry32: the same fleet on every run. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

function fleet(size: number) {
  const rnd = random(size);
  return Array.from({ length: size }, (_, i) => {
    const bridges = new Set<string>();
    const n = 1 + Math.floor(rnd() * 3);
    while (bridges.size < n) bridges.add(`br-${Math.floor(rnd() * BRIDGE_COUNT)}`);
    // Small fleets get the wanted bridge somewhere so the placement succeeds at every size.
    if (i === size - 1) bridges.add('br-42');
    const tenders = [];
    if (rnd() < 0.85) tenders.push({ kind: 'hvt', path: '/usr/bin/solo5-hvt', version: 'v0.9.0', abi: 2 });
    if (rnd() < 0.5) tenders.push({ kind: 'spt', path: '/usr/bin/solo5-spt', version: 'v0.9.0', abi: 2 });
    return {
      id: `node-${String(i).padStart(5, '0')}`,
      address: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}:1025`,
      age_ms: i === size - 1 ? 0 : Math.floor(rnd() * 60_000),
      capabilities: {
        kvm: rnd() < 0.9,
        tenders,
        tun: true,
        bridges: [...bridges].map((name) => ({ name, up: rnd() < 0.97 })),
        netAdmin: true,
      },
      resources: {
        cpus: Math.floor(rnd() * 32),
        memoryMiB: 1024 * Math.floor(rnd() * 256),
        blockStorageMiB: 0,
      },
    };
  });
}

async function load(pool: pg.Pool, size: number): Promise<void> {
  await pool.query('TRUNCATE nodes');
  const rows = fleet(size);
  for (let i = 0; i < rows.length; i += 2_000) {
    await pool.query(
      `INSERT INTO nodes (id, address, last_seen, capabilities, resources)
       SELECT id, address, now() - age_ms * interval '1 millisecond', capabilities, resources
       FROM jsonb_to_recordset($1::jsonb)
         AS x(id text, address text, age_ms double precision, capabilities jsonb, resources jsonb)`,
      [JSON.stringify(rows.slice(i, i + 2_000))],
    );
  }
  // VACUUM also fills in the GIN index's statistics (ANALYZE alone does not), which the planner
  // needs to cost the index scan; on a live registry autovacuum does this, since every heartbeat
  // updates a row.
  await pool.query('VACUUM ANALYZE nodes');
}

async function time(runs: number, f: () => Promise<unknown>): Promise<{ median: number; p95: number }> {
  for (let i = 0; i < 10; i++) await f();
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = process.hrtime.bigint();
    await f();
    ms.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  ms.sort((a, b) => a - b);
  return { median: ms[Math.floor(runs / 2)] as number, p95: ms[Math.floor(runs * 0.95)] as number };
}

function cluster(): { url: string; stop: () => void } {
  const given = process.env.PETREL_TEST_PG_URL;
  if (given !== undefined && given !== '') return { url: given, stop: () => {} };
  const script = path.resolve(import.meta.dirname, '../../scripts/test-postgres.sh');
  const dir = mkdtempSync(path.join(tmpdir(), 'petrel-pg-bench-'));
  const url = execFileSync('bash', [script, 'start', dir], { encoding: 'utf8' }).trim();
  return { url, stop: () => execFileSync('bash', [script, 'stop', dir], { stdio: 'inherit' }) };
}

async function main(): Promise<number> {
  const server = cluster();
  const schema = `petrel_bench_${process.pid}`;
  const admin = new pg.Client({ connectionString: server.url });
  let pool: pg.Pool | undefined;
  try {
    await admin.connect();
    await admin.query(`CREATE SCHEMA ${schema}`);
    const url = new URL(server.url);
    url.searchParams.set('options', `-c search_path=${schema}`);
    pool = openDb(url.toString(), { max: 1 });
    const migrations = await loadMigrations();
    if (!migrations.ok) throw new Error(migrations.error.message);
    const migrated = await migrate(pool, migrations.value);
    if (!migrated.ok) throw new Error(migrated.error.message);
    const registry = new Registry(pool);

    console.log(
      `placement of ${JSON.stringify(WANTED)}, fresh window ${FRESH_MS / 1000} s, ${RUNS} runs each`,
    );
    console.log('rows     place (median / p95)     failing place, every row explained (median / p95)');
    let atTarget = 0;
    for (const size of SIZES) {
      await load(pool, size);
      const placed = await registry.place(WANTED, { freshMs: FRESH_MS });
      if (!placed.ok) throw new Error(`placement failed at ${size} rows: ${placed.error.message}`);
      const ok = await time(RUNS, () => registry.place(WANTED, { freshMs: FRESH_MS }));
      const failing = await time(size > 1_000 ? 20 : RUNS, () =>
        registry.place(IMPOSSIBLE, { freshMs: FRESH_MS }),
      );
      console.log(
        `${String(size).padStart(6)}   ${ok.median.toFixed(2).padStart(6)} / ${ok.p95.toFixed(2).padStart(6)} ms` +
          `        ${failing.median.toFixed(2).padStart(7)} / ${failing.p95.toFixed(2).padStart(7)} ms` +
          `   (chose ${placed.value.node})`,
      );
      atTarget = ok.median;
    }
    const plan = await pool.query(
      `EXPLAIN (ANALYZE, BUFFERS, TIMING OFF) ${PREFILTER_SQL}`,
      prefilterParams(WANTED, FRESH_MS),
    );
    const text = plan.rows.map((r) => r['QUERY PLAN'] as string).join('\n');
    console.log(`\nEXPLAIN ANALYZE of the prefilter at ${SIZES.at(-1)} rows:\n${text}\n`);
    const usesGin = text.includes('nodes_capabilities_gin');
    console.log(`GIN index used: ${usesGin ? 'yes' : 'NO'}`);
    console.log(`median at ${SIZES.at(-1)} rows: ${atTarget.toFixed(2)} ms (target ≤ ${TARGET_MS} ms)`);
    return usesGin && atTarget <= TARGET_MS ? 0 : 1;
  } finally {
    await pool?.end();
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => {});
    await admin.end().catch(() => {});
    server.stop();
  }
}

process.exitCode = await main();

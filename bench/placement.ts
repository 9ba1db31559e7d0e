// Benchmark: placement against the PostgreSQL registry.
//   1. Decision time with 10, 1,000 and 10,000 node rows and live reservations (10 % of the
//      nodes hold one or two, some expired, some already in the node's report): the median and
//      p95 of Registry.place (the GIN-prefiltered query net of reservations plus the pure choice),
//      of Registry.reserve (the same decision under the placement lock, plus inserting the
//      reservation), and of the failing placement (every row read to give each node's reason);
//      then the EXPLAIN ANALYZE plan of the prefilter at 10,000 rows, which must use the GIN
//      index. Target: place and reserve ≤ 10 ms median at 10,000 rows.
//   2. Concurrency: 100 nodes with room for four 128 MiB unikernels each; 100 placements at once
//      (each node must get one: max/min ≤ 2), then 300 more at once, exactly the room left (no
//      node may hold more than four: no overcommit). Reservations are the only record of these
//      placements, as in the window before the nodes report.
// The fleet: 200 bridges, 1–3 per node; 90 % serve hvt, half serve spt (Petrel's ABI versions);
// ages 0–60 s.
// Uses PETREL_TEST_PG_URL, else starts a throwaway cluster with scripts/test-postgres.sh.
// Run: npm run bench -- placement

import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { openDb } from '../src/fleet/db.js';
import { loadMigrations, migrate } from '../src/fleet/migrate.js';
import { type Requirements, spreadKey } from '../src/fleet/placement.js';
import { PREFILTER_SQL, prefilterParams, Registry } from '../src/fleet/registry.js';
import { ABI_VERSION } from '../src/tender/abi.js';
import { loadAverage } from './support/load.js';

const SIZES = [10, 1_000, 10_000];
const RUNS = 200;
const FRESH_MS = 30_000;
const BRIDGE_COUNT = 200;
const TARGET_MS = 10;
const HVT_ABI = ABI_VERSION.hvt;
const SPT_ABI = ABI_VERSION.spt;

const WANTED: Requirements = { runtime: 'hvt', abi: HVT_ABI, bridges: ['br-42'], memoryMiB: 512, cpus: 1 };
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
    const runtimes: string[] = [];
    const serves = [];
    const tenders = [
      { kind: 'hvt', path: '/usr/bin/solo5-hvt', version: 'v0.9.0', abi: HVT_ABI },
      { kind: 'spt', path: '/usr/bin/solo5-spt', version: 'v0.9.0', abi: SPT_ABI },
    ];
    if (rnd() < 0.9 || i === size - 1) {
      runtimes.push('hvt');
      serves.push({ kind: 'hvt', abi: HVT_ABI });
    }
    if (rnd() < 0.5) {
      runtimes.push('spt');
      serves.push({ kind: 'spt', abi: SPT_ABI });
    }
    const id = `node-${String(i).padStart(5, '0')}`;
    const memoryMiB = 1024 * Math.floor(rnd() * 256);
    return {
      id,
      address: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}:1025`,
      age_ms: i === size - 1 ? 0 : Math.floor(rnd() * 60_000),
      capabilities: {
        kvm: true,
        tenders,
        tun: true,
        bridges: [...bridges].map((name) => ({ name, up: rnd() < 0.97 })),
        netAdmin: true,
        runtimes,
        serves,
      },
      resources: {
        cpus: Math.floor(rnd() * 32),
        memoryMiB,
        vms: Number.MAX_SAFE_INTEGER,
        blockStorageMiB: 0,
        total: { memoryMiB: memoryMiB + 4096, vms: Number.MAX_SAFE_INTEGER, blockStorageMiB: 0 },
      },
      unikernels: Array.from({ length: Math.floor(rnd() * 8) }, (_, k) => `user:${id}-vm${k}`),
      spread: spreadKey(id),
    };
  });
}

type Row = ReturnType<typeof fleet>[number];

async function insertNodes(pool: pg.Pool, rows: readonly Row[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 2_000) {
    await pool.query(
      `INSERT INTO nodes (id, address, last_seen, capabilities, resources, unikernels, spread)
       SELECT id, address, now() - age_ms * interval '1 millisecond', capabilities, resources,
              ARRAY(SELECT jsonb_array_elements_text(unikernels)), spread
       FROM jsonb_to_recordset($1::jsonb) AS x(id text, address text, age_ms double precision,
         capabilities jsonb, resources jsonb, unikernels jsonb, spread integer)`,
      [JSON.stringify(rows.slice(i, i + 2_000))],
    );
  }
}

/** Reservations on 10 % of the nodes: live ones, expired ones, and ones whose unikernel the node
 * already reports (landed, not yet deleted): the query must count only the first kind. */
async function insertReservations(pool: pg.Pool, rows: readonly Row[]): Promise<number> {
  const rnd = random(rows.length + 7);
  const reservations: { node: string; vm: string; memory_mib: number; expires_ms: number }[] = [];
  for (const row of rows) {
    if (rnd() >= 0.1) continue;
    const count = 1 + Math.floor(rnd() * 2);
    for (let k = 0; k < count; k++) {
      const kind = rnd();
      const landed = kind < 0.1 && row.unikernels.length > 0;
      reservations.push({
        node: row.id,
        vm: landed ? (row.unikernels[0] as string) : `user:${row.id}-new${k}`,
        memory_mib: 256,
        expires_ms: kind > 0.9 ? -1_000 : 120_000,
      });
    }
  }
  await pool.query(
    `INSERT INTO reservations (node, vm, memory_mib, expires_at)
     SELECT node, vm, memory_mib, now() + expires_ms * interval '1 millisecond'
     FROM jsonb_to_recordset($1::jsonb) AS x(node text, vm text, memory_mib bigint, expires_ms double precision)`,
    [JSON.stringify(reservations)],
  );
  return reservations.length;
}

async function load(pool: pg.Pool, rows: readonly Row[]): Promise<number> {
  await pool.query('TRUNCATE nodes CASCADE');
  await insertNodes(pool, rows);
  const reservations = await insertReservations(pool, rows);
  // VACUUM also fills in the GIN index's statistics (ANALYZE alone does not), which the planner
  // needs to cost the index scan; on a live registry autovacuum does this, since every heartbeat
  // updates a row.
  await pool.query('VACUUM ANALYZE nodes');
  await pool.query('VACUUM ANALYZE reservations');
  return reservations;
}

interface Figures {
  readonly median: number;
  readonly p95: number;
}

async function time(
  runs: number,
  f: (i: number) => Promise<unknown>,
  after?: (r: unknown) => Promise<void>,
): Promise<Figures> {
  for (let i = 0; i < 10; i++) await after?.(await f(-1 - i));
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = process.hrtime.bigint();
    const r = await f(i);
    ms.push(Number(process.hrtime.bigint() - start) / 1e6);
    await after?.(r);
  }
  ms.sort((a, b) => a - b);
  return { median: ms[Math.floor(runs / 2)] as number, p95: ms[Math.floor(runs * 0.95)] as number };
}

const fmt = (f: Figures, width = 6) =>
  `${f.median.toFixed(2).padStart(width)} / ${f.p95.toFixed(2).padStart(width)} ms`;

function cluster(): { url: string; stop: () => void } {
  const given = process.env.PETREL_TEST_PG_URL;
  if (given !== undefined && given !== '') return { url: given, stop: () => {} };
  const script = path.resolve(import.meta.dirname, '../../scripts/test-postgres.sh');
  const dir = mkdtempSync(path.join(tmpdir(), 'petrel-pg-bench-'));
  const url = execFileSync('bash', [script, 'start', dir], { encoding: 'utf8' }).trim();
  return { url, stop: () => execFileSync('bash', [script, 'stop', dir], { stdio: 'inherit' }) };
}

async function decisionTimes(
  pool: pg.Pool,
  registry: Registry,
): Promise<{ place: number; reserve: number; gin: boolean }> {
  console.log(`placement of ${JSON.stringify(WANTED)}, fresh window ${FRESH_MS / 1000} s, ${RUNS} runs each`);
  console.log(
    '  rows  reservations   place (median / p95)   reserve (median / p95)   failing place, every row explained',
  );
  let atTarget = { place: Number.POSITIVE_INFINITY, reserve: Number.POSITIVE_INFINITY };
  for (const size of SIZES) {
    const reservations = await load(pool, fleet(size));
    const placed = await registry.place(WANTED, { freshMs: FRESH_MS, vm: 'user:bench' });
    if (!placed.ok) throw new Error(`placement failed at ${size} rows: ${placed.error.message}`);
    const place = await time(RUNS, (i) => registry.place(WANTED, { freshMs: FRESH_MS, vm: `user:p${i}` }));
    // Each reservation is released after it is timed, so every run sees the same registry.
    const reserve = await time(
      RUNS,
      (i) => registry.reserve(WANTED, { freshMs: FRESH_MS, vm: `user:r${i}` }),
      async (r) => {
        const reserved = r as Awaited<ReturnType<Registry['reserve']>>;
        if (!reserved.ok) throw new Error(reserved.error.message);
        await registry.release(reserved.value.reservation);
      },
    );
    const failing = await time(size > 1_000 ? 20 : RUNS, () =>
      registry.place(IMPOSSIBLE, { freshMs: FRESH_MS }),
    );
    console.log(
      `${String(size).padStart(6)}  ${String(reservations).padStart(12)}   ${fmt(place)}      ${fmt(reserve)}        ${fmt(failing, 7)}   (chose ${placed.value.node})`,
    );
    atTarget = { place: place.median, reserve: reserve.median };
  }
  const plan = await pool.query(
    `EXPLAIN (ANALYZE, BUFFERS, TIMING OFF) ${PREFILTER_SQL}`,
    prefilterParams(WANTED, FRESH_MS, { vm: 'user:bench' }),
  );
  const text = plan.rows.map((r) => r['QUERY PLAN'] as string).join('\n');
  console.log(`\nEXPLAIN ANALYZE of the prefilter at ${SIZES.at(-1)} rows:\n${text}\n`);
  const gin = text.includes('nodes_capabilities_gin');
  console.log(`GIN index used: ${gin ? 'yes' : 'NO'}`);
  return { ...atTarget, gin };
}

async function concurrency(url: string, pool: pg.Pool): Promise<boolean> {
  const NODES = 100;
  const SLOTS = 4;
  const MEM = 128;
  const req: Requirements = { runtime: 'spt', abi: SPT_ABI, bridges: [], memoryMiB: MEM, cpus: 1 };
  await pool.query('TRUNCATE nodes CASCADE');
  const rows = fleet(NODES).map((row) => ({
    ...row,
    age_ms: 0,
    capabilities: { ...row.capabilities, runtimes: ['spt'], serves: [{ kind: 'spt', abi: SPT_ABI }] },
    resources: { ...row.resources, cpus: 4, memoryMiB: SLOTS * MEM },
    unikernels: [],
  }));
  await insertNodes(pool, rows);
  await pool.query('VACUUM ANALYZE nodes');
  // Placers with their own connections, as separate petrel processes would have.
  const CONNECTIONS = 32;
  const pools = Array.from({ length: CONNECTIONS }, () => openDb(url, { max: 1 }));
  const registries = pools.map((p) => new Registry(p));
  let ok = true;
  try {
    const round = async (count: number, label: string) => {
      const began = performance.now();
      const results = await Promise.all(
        Array.from({ length: count }, (_, i) =>
          (registries[i % CONNECTIONS] as Registry).reserve(req, {
            freshMs: FRESH_MS,
            vm: `user:${label}${i}`,
          }),
        ),
      );
      const ms = performance.now() - began;
      const failed = results.filter((r) => !r.ok).length;
      const held = await pool.query<{ node: string; n: string; mem: string }>(
        'SELECT node, count(*) AS n, sum(memory_mib) AS mem FROM reservations GROUP BY node',
      );
      const perNode = new Map(held.rows.map((r) => [r.node, Number(r.n)]));
      const counts = rows.map((r) => perNode.get(r.id) ?? 0);
      const max = Math.max(...counts);
      const min = Math.min(...counts);
      const overcommitted = held.rows.filter((r) => Number(r.mem) > SLOTS * MEM).length;
      console.log(
        `${String(count).padStart(4)} placements at once: ${ms.toFixed(0)} ms (${(ms / count).toFixed(2)} ms each), ` +
          `${failed} failed; per node min ${min}, max ${max} (max/min ${min === 0 ? '∞' : (max / min).toFixed(2)}); ` +
          `nodes over their memory: ${overcommitted}`,
      );
      return { failed, max, min, overcommitted };
    };
    console.log(
      `\n${NODES} nodes with room for ${SLOTS} × ${MEM} MiB each, ${CONNECTIONS} placer connections`,
    );
    const first = await round(100, 'a');
    ok &&= first.failed === 0 && first.overcommitted === 0 && first.min > 0 && first.max / first.min <= 2;
    const second = await round(NODES * SLOTS - 100, 'b');
    ok &&= second.failed === 0 && second.overcommitted === 0 && second.max <= SLOTS;
    const third = await round(10, 'c');
    ok &&= third.failed === 10 && third.overcommitted === 0;
    console.log(
      `concurrency: no overcommit, spread max/min ≤ 2 in the first round, full fleet refuses: ${ok ? 'yes' : 'NO'}`,
    );
  } finally {
    await Promise.all(pools.map((p) => p.end()));
  }
  return ok;
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

    console.log(`load average before: ${loadAverage()}`);
    const decisions = await decisionTimes(pool, registry);
    const concurrent = await concurrency(url.toString(), pool);
    console.log(
      `\nmedian at ${SIZES.at(-1)} rows: place ${decisions.place.toFixed(2)} ms, reserve ${decisions.reserve.toFixed(2)} ms (target ≤ ${TARGET_MS} ms)`,
    );
    console.log(`load average after: ${loadAverage()}`);
    return decisions.gin && decisions.place <= TARGET_MS && decisions.reserve <= TARGET_MS && concurrent
      ? 0
      : 1;
  } finally {
    await pool?.end();
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => {});
    await admin.end().catch(() => {});
    server.stop();
  }
}

process.exitCode = await main();

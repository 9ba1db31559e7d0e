import type pg from 'pg';
import { expect, it } from 'vitest';
import { openDb } from '../../src/fleet/db.js';
import { place } from '../../src/fleet/placement.js';
import { PREFILTER_SQL, prefilterParams, Registry } from '../../src/fleet/registry.js';
import { capacity, HVT, report, SPT } from './fixtures.js';
import { describeWithPostgres } from './pg.js';

const FRESH_MS = 30_000;

/** What toMatchObject expects of a failed Result: its error's code, and its message when given. */
const failure = (code: string, message?: RegExp) => ({
  ok: false,
  error: message === undefined ? { code } : { code, message },
});

async function stored(pool: pg.Pool, id: string): Promise<unknown> {
  return (await pool.query('SELECT capabilities, resources FROM nodes WHERE id = $1', [id])).rows[0];
}

describeWithPostgres('fleet registry', (pg) => {
  it('a report replaces the previous one: a lost capability disappears and the node stops qualifying', async () => {
    const { pool } = await pg.schema();
    const registry = new Registry(pool);
    expect((await registry.report('gw-04', '10.0.0.4:1025', report())).ok).toBe(true);
    expect(await registry.place(HVT, { freshMs: FRESH_MS })).toMatchObject({
      ok: true,
      value: { node: 'gw-04' },
    });

    const lost = report({ kvm: false, bridges: [], tenders: [], runtimes: ['spt'] });
    expect((await registry.report('gw-04', '10.0.0.4:1025', lost)).ok).toBe(true);
    expect(await stored(pool, 'gw-04')).toEqual({
      capabilities: {
        kvm: false,
        tenders: [],
        tun: true,
        bridges: [],
        netAdmin: true,
        runtimes: ['spt'],
        serves: [],
      },
      resources: {
        cpus: 4,
        memoryMiB: 4096,
        vms: Number.MAX_SAFE_INTEGER,
        blockStorageMiB: 10_240,
        total: { memoryMiB: 4096, vms: Number.MAX_SAFE_INTEGER, blockStorageMiB: 10_240 },
      },
    });
    const placed = await registry.place(HVT, { freshMs: FRESH_MS });
    expect(placed).toMatchObject(failure('E_FLEET_NO_CAPABLE_NODE'));
    if (!placed.ok)
      expect(placed.error.message).toContain(
        'gw-04: does not run hvt unikernels (--runtimes spt), no bridge service',
      );
  });

  it('a row inserted with no report (capabilities default {}) never qualifies', async () => {
    const { pool } = await pg.schema();
    await pool.query(`INSERT INTO nodes (id, address, last_seen) VALUES ('blank', 'b:1025', now())`);
    expect(await stored(pool, 'blank')).toEqual({ capabilities: {}, resources: {} });
    const registry = new Registry(pool);
    const zero = { runtime: 'spt' as const, abi: 2, bridges: [], memoryMiB: 0, cpus: 0 };
    for (const req of [HVT, SPT, zero]) {
      const candidates = await registry.candidates(req, { freshMs: FRESH_MS });
      expect(candidates.ok && candidates.value.nodes).toEqual([]);
      const placed = await registry.place(req, { freshMs: FRESH_MS });
      expect(placed).toMatchObject(failure('E_FLEET_NO_CAPABLE_NODE'));
      expect(await registry.place(req, { freshMs: FRESH_MS, node: 'blank' })).toMatchObject(
        failure('E_FLEET_NODE_REFUSED'),
      );
    }
  });

  it('stale nodes do not qualify (the database clock decides)', async () => {
    const { pool } = await pg.schema();
    const registry = new Registry(pool);
    await registry.report('late', 'l:1025', report());
    await pool.query(`UPDATE nodes SET last_seen = now() - interval '45 seconds' WHERE id = 'late'`);
    const placed = await registry.place(HVT, { freshMs: FRESH_MS });
    expect(placed.ok).toBe(false);
    if (!placed.ok)
      expect(placed.error.message).toMatch(/late: stale \(last seen 45\.\d s ago, fresh window 30 s\)/);
    expect((await registry.place(HVT, { freshMs: 60_000 })).ok).toBe(true);
    await registry.report('late', 'l:1025', report());
    expect((await registry.place(HVT, { freshMs: FRESH_MS })).ok).toBe(true);
  });

  it('--node naming an incapable node is refused with its reason; a capable one is honoured', async () => {
    const { pool } = await pg.schema();
    const registry = new Registry(pool);
    await registry.report('gw-04', '10.0.0.4:1025', report({ runtimes: [] }));
    await registry.report('big', '10.0.0.5:1025', report({ memoryMiB: 65_536 }));
    await registry.report('web', '10.0.0.6:1025', report());
    const refused = await registry.place(HVT, { freshMs: FRESH_MS, node: 'gw-04' });
    expect(refused).toMatchObject(failure('E_FLEET_NODE_REFUSED'));
    if (!refused.ok)
      expect(refused.error.message).toMatch(
        /^node gw-04 cannot run .*: hosts no unikernels \(--runtimes none\)$/,
      );
    expect(await registry.place(HVT, { freshMs: FRESH_MS, node: 'web' })).toMatchObject({
      ok: true,
      value: { node: 'web', address: '10.0.0.6:1025' },
    });
    expect(await registry.place(HVT, { freshMs: FRESH_MS, node: 'ghost' })).toMatchObject(
      failure('E_FLEET_NODE_UNKNOWN'),
    );
  });

  it('with no capable node the placement fails with one reason line per node', async () => {
    const { pool } = await pg.schema();
    const registry = new Registry(pool);
    await registry.report('gw-04', '10.0.0.4:1025', report({ kvm: false }));
    await registry.report('tank', '10.0.0.7:1025', report({ bridges: [{ name: 'storage', up: true }] }));
    const placed = await registry.place(HVT, { freshMs: FRESH_MS });
    expect(placed.ok).toBe(false);
    if (!placed.ok) {
      expect(placed.error.message.split('\n')).toEqual([
        'no node can run hvt (ABI 2, 256 MiB, 1 CPU, bridge service):',
        '  gw-04: does not serve hvt now (--runtimes hvt,spt, but the probe found no kvm)',
        '  tank: no bridge service',
      ]);
    }
  });

  it('chooses the most free memory; the prefilter orders ties as the pure rule does', async () => {
    const { pool } = await pg.schema();
    const registry = new Registry(pool);
    const r = report({ memoryMiB: 8192 });
    // More tied nodes than the prefilter returns: its order must already be the tie rule's.
    const tied = Array.from({ length: 12 }, (_, i) => `n${i}`);
    for (const id of tied) await registry.report(id, `${id}:1`, r, capacity(r, 4096));
    await registry.report('full', 'f:1', report({ cpus: 0 }), capacity(report({ cpus: 0 }), 99_999));
    await registry.report('c', 'c:1', r, capacity(r, 1024));
    const snapshot = await registry.nodes();
    if (!snapshot.ok) throw new Error(snapshot.error.message);
    const chosen = new Set<string>();
    for (let i = 0; i < 30; i++) {
      const vm = `user:web${i}`;
      const placed = await registry.place(HVT, { freshMs: FRESH_MS, vm });
      const everyRow = place(snapshot.value.nodes, HVT, { now: snapshot.value.now, freshMs: FRESH_MS, vm });
      expect(placed.ok && everyRow.ok && placed.value.node).toBe(everyRow.ok && everyRow.value.node);
      if (placed.ok) chosen.add(placed.value.node);
    }
    expect(chosen.size).toBeGreaterThan(3);
    for (const id of chosen) expect(tied).toContain(id);
  });

  it('reservations hold room until the report lists the unikernel, or they are released', async () => {
    const { pool } = await pg.schema();
    const registry = new Registry(pool);
    const r = report({ memoryMiB: 1024 });
    await registry.report('a', 'a:1', r);
    await registry.report('b', 'b:1', r);
    const req = { ...SPT, memoryMiB: 256 };
    const picks: string[] = [];
    for (let i = 0; i < 6; i++) {
      const reserved = await registry.reserve(req, { freshMs: FRESH_MS, vm: `user:vm${i}` });
      if (!reserved.ok) throw new Error(reserved.error.message);
      picks.push(reserved.value.node);
    }
    // 1024 MiB each: four 256 MiB reservations per node at most; six alternate three and three.
    expect(picks.filter((n) => n === 'a')).toHaveLength(3);
    expect(picks.filter((n) => n === 'b')).toHaveLength(3);
    const held = await registry.reservations('a');
    expect(held.ok && held.value.map((x) => x.memoryMiB)).toEqual([256, 256, 256]);
    const onA = held.ok ? held.value.map((x) => x.vm) : [];
    // a reports two of them running: their room is now in its free figure, not reserved twice.
    const updated = await registry.updateCapacity('a', capacity(r, 1024 - 512, onA.slice(0, 2)));
    expect(updated).toEqual({ ok: true, value: true });
    const after = await registry.nodes();
    if (!after.ok) throw new Error(after.error.message);
    expect(after.value.nodes.find((n) => n.id === 'a')?.reserved).toEqual({ memoryMiB: 256, vms: 1 });
    // The third create failed: released, a is back to 512 MiB free.
    const third = held.ok ? held.value[2]?.id : undefined;
    expect((await registry.release(third ?? '')).ok).toBe(true);
    expect(await registry.reservations('a')).toEqual({ ok: true, value: [] });
    const v = await registry.place({ ...req, memoryMiB: 512 }, { freshMs: FRESH_MS, node: 'a' });
    expect(v).toMatchObject({ ok: true, value: { available: { memoryMiB: 512 } } });
    expect((await registry.place({ ...req, memoryMiB: 513 }, { freshMs: FRESH_MS, node: 'a' })).ok).toBe(
      false,
    );
    // A capacity update for a node with no row writes nothing.
    expect(await registry.updateCapacity('ghost', capacity(r))).toEqual({ ok: true, value: false });
  });

  it('an expired reservation no longer counts', async () => {
    const { pool } = await pg.schema();
    const registry = new Registry(pool, { reservationMs: 1 });
    const r = report({ memoryMiB: 256 });
    await registry.report('a', 'a:1', r);
    const req = { ...SPT, memoryMiB: 256 };
    expect((await registry.reserve(req, { freshMs: FRESH_MS, vm: 'one' })).ok).toBe(true);
    await pool.query(`SELECT pg_sleep(0.01)`);
    expect(await registry.reservations()).toEqual({ ok: true, value: [] });
    expect((await registry.reserve(req, { freshMs: FRESH_MS, vm: 'two' })).ok).toBe(true);
  });

  it('concurrent reservations never overcommit a node', async () => {
    const { url, pool } = await pg.schema();
    const registry = new Registry(pool);
    const r = report({ memoryMiB: 1024 });
    await registry.report('a', 'a:1', r);
    await registry.report('b', 'b:1', r);
    // Twenty placers at once, each with its own connection, as separate petrel processes.
    const pools = Array.from({ length: 20 }, () => openDb(url, { max: 1 }));
    const req = { ...SPT, memoryMiB: 128 };
    const results = await Promise.all(
      pools.map((p, i) => new Registry(p).reserve(req, { freshMs: FRESH_MS, vm: `user:c${i}` })),
    ).finally(() => Promise.all(pools.map((p) => p.end())));
    const nodes = results.map((x) => (x.ok ? x.value.node : x.error.code));
    expect(nodes.filter((n) => n === 'a')).toHaveLength(8);
    expect(nodes.filter((n) => n === 'b')).toHaveLength(8);
    expect(nodes.filter((n) => n === 'E_FLEET_NO_CAPABLE_NODE')).toHaveLength(4);
  });

  it('the prefilter is answered by the GIN index on capabilities', async () => {
    const { pool } = await pg.schema();
    const client = await pool.connect();
    try {
      // With few rows the planner prefers a sequential scan; forbidding it shows the index can
      // answer the query (bench/placement.ts shows the planner choosing it at 10,000 rows).
      await client.query('SET enable_seqscan = off');
      const plan = await client.query(
        `EXPLAIN ${PREFILTER_SQL}`,
        prefilterParams(HVT, FRESH_MS, { vm: 'x' }),
      );
      expect(plan.rows.map((r) => r['QUERY PLAN']).join('\n')).toMatch(
        /Bitmap Index Scan on nodes_capabilities_gin/,
      );
    } finally {
      client.release();
    }
  });

  it('records placements for the audit trail', async () => {
    const { pool } = await pg.schema();
    const registry = new Registry(pool);
    expect((await registry.recordPlacement('user:web', 'gw-04', 'alice')).ok).toBe(true);
    expect((await registry.recordPlacement('user:db', 'tank', 'bob')).ok).toBe(true);
    const trail = await registry.placements('user:web');
    expect(trail.ok && trail.value.map(({ vm, node, by }) => ({ vm, node, by }))).toEqual([
      { vm: 'user:web', node: 'gw-04', by: 'alice' },
    ]);
    const all = await registry.placements();
    expect(all.ok && all.value.length).toBe(2);
  });

  it('refuses a malformed report without writing anything', async () => {
    const { pool } = await pg.schema();
    const registry = new Registry(pool);
    const bad = { ...report(), kvm: 'yes' } as unknown as ReturnType<typeof report>;
    expect(await registry.report('x', 'x:1', bad)).toMatchObject(failure('E_FLEET_REPORT'));
    const r = report();
    const negative = { ...capacity(r), free: { ...capacity(r).free, memoryMiB: -1 } };
    expect(await registry.report('x', 'x:1', r, negative)).toMatchObject(
      failure('E_FLEET_REPORT', /free\.memoryMiB/),
    );
    expect((await pool.query('SELECT count(*)::int AS n FROM nodes')).rows[0]).toEqual({ n: 0 });
  });

  it('says to migrate when the schema is missing, and reports an unreachable server as a value', async () => {
    const { pool } = await pg.schema({ migrated: false });
    const missing = await new Registry(pool).nodes();
    expect(missing).toMatchObject(failure('E_FLEET_DB'));
    if (!missing.ok) expect(missing.error.message).toContain('run `petrel fleet migrate --db URL`');
    const nowhere = openDb('postgresql://postgres@127.0.0.1:1/none');
    try {
      expect(await new Registry(nowhere).nodes()).toMatchObject(failure('E_FLEET_DB'));
    } finally {
      await nowhere.end();
    }
  });
});

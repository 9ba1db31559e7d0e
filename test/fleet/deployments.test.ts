// The registry's deployment tables (migration 006, src/fleet/deployments.ts) with a REAL
// PostgreSQL (test/fleet/pg.ts): images stored once and only under their digest, deployments and
// their scoping by delegation path, removal, assignments whose generation lets exactly one of two
// racing deciders win, node reports, and leases that end by time.

import { createHash } from 'node:crypto';
import { expect, it } from 'vitest';
import type { DeploymentRequest } from '../../src/fleet/deployment.js';
import {
  applyAssignments,
  type Decision,
  listDeployments,
  markReplicaState,
  readAssignments,
  readImage,
  recordDeployment,
  releaseLease,
  removeDeployment,
  storeImage,
  takeLease,
} from '../../src/fleet/deployments.js';
import { loadMigrations, migrate } from '../../src/fleet/migrate.js';
import type { Database } from '../../src/fleet/registry.js';
import { type Path, parsePath } from '../../src/resources/name.js';
import { HVT } from './fixtures.js';
import { describeWithPostgres } from './pg.js';

const IMAGE = new TextEncoder().encode('a unikernel image');
const DIGEST = createHash('sha256').update(IMAGE).digest('hex');
const PROOF = new Uint8Array([0x30, 0x03, 0x02, 0x01, 0x01]);

function request(name: string, overrides: Partial<DeploymentRequest> = {}): DeploymentRequest {
  return {
    name,
    replicas: 2,
    image: { sha256: DIGEST, size: IMAGE.length },
    command: new Uint8Array([0x30, 0x00]),
    requirements: HVT,
    blockDevices: 0,
    node: null,
    ...overrides,
  };
}

async function deployed(db: Database, ...requests: DeploymentRequest[]): Promise<void> {
  expect((await storeImage(db, DIGEST, IMAGE)).ok).toBe(true);
  for (const r of requests)
    expect(await recordDeployment(db, r, PROOF)).toEqual({ ok: true, value: undefined });
}

const path = (text: string): Path => {
  const parsed = parsePath(text);
  if (!parsed.ok) throw new Error(parsed.error.message);
  return parsed.value;
};

const place = (name: string, index: number, node: string, generation: number): Decision => ({
  kind: 'place',
  name,
  index,
  node,
  generation,
});

describeWithPostgres('the registry’s deployment tables', (pg) => {
  it('migration 006 applies on a registry that has 001–005, keeping its rows', async () => {
    const { pool } = await pg.schema({ migrated: false });
    const loaded = await loadMigrations();
    if (!loaded.ok) throw new Error(loaded.error.message);
    expect(await migrate(pool, loaded.value.slice(0, 5))).toMatchObject({ ok: true });
    await pool.query(`INSERT INTO nodes (id, address, last_seen) VALUES ('node-a', 'a:1025', now())`);
    const outcome = await migrate(pool, loaded.value);
    expect(outcome).toMatchObject({ ok: true, value: { alreadyApplied: 5 } });
    if (outcome.ok) expect(outcome.value.applied.map((m) => m.name)).toEqual(['deployments']);
    expect((await pool.query('SELECT id FROM nodes')).rows).toEqual([{ id: 'node-a' }]);
    const tables = await pool.query(
      `SELECT tablename FROM pg_tables WHERE schemaname = current_schema()
       AND tablename IN ('images', 'deployments', 'assignments', 'leases') ORDER BY tablename`,
    );
    expect(tables.rows.map((r) => r.tablename)).toEqual(['assignments', 'deployments', 'images', 'leases']);
  });

  it('stores an image once however many deployments use it, and refuses a wrong digest', async () => {
    const { pool } = await pg.schema();
    expect(await storeImage(pool, DIGEST, IMAGE)).toEqual({ ok: true, value: true });
    expect(await storeImage(pool, DIGEST, IMAGE)).toEqual({ ok: true, value: false });
    await deployed(pool, request('alice:web'), request('bob:web'), request(':hello'));
    expect((await pool.query('SELECT count(*)::int AS n FROM images')).rows).toEqual([{ n: 1 }]);
    const read = await readImage(pool, DIGEST);
    expect(read.ok && read.value !== null && Buffer.from(read.value.bytes).equals(Buffer.from(IMAGE))).toBe(
      true,
    );
    expect(await readImage(pool, '0'.repeat(64))).toEqual({ ok: true, value: null });

    const other = new TextEncoder().encode('another image');
    expect(await storeImage(pool, '0'.repeat(64), other)).toMatchObject({
      ok: false,
      error: { code: 'E_FLEET_IMAGE_DIGEST' },
    });
    // The table refuses it too, when written by hand.
    await expect(
      pool.query('INSERT INTO images (sha256, size, bytes) VALUES ($1, $2, $3)', ['0'.repeat(64), 13, other]),
    ).rejects.toThrow(/check constraint/);
    expect((await pool.query('SELECT count(*)::int AS n FROM images')).rows).toEqual([{ n: 1 }]);
  });

  it('records a deployment with its proof and its replicas unplaced at generation 0', async () => {
    const { pool } = await pg.schema();
    expect(await recordDeployment(pool, request('alice:web'), PROOF)).toMatchObject({
      ok: false,
      error: { code: 'E_FLEET_IMAGE_UNKNOWN' },
    });
    expect(await recordDeployment(pool, request('alice:'), PROOF)).toMatchObject({
      ok: false,
      error: { code: 'E_FLEET_DEPLOYMENT_INVALID' },
    });
    await deployed(pool, request('Alice:Web', { replicas: 3 }));
    const listed = await listDeployments(pool);
    expect(listed).toMatchObject({ ok: true, value: [{ request: { name: 'alice:web', replicas: 3 } }] });
    if (listed.ok) {
      expect(listed.value[0]?.request).toEqual({ ...request('alice:web', { replicas: 3 }) });
      expect(listed.value[0]?.proof).toEqual(PROOF);
      expect(listed.value[0]?.removal).toBeNull();
    }
    const assignments = await readAssignments(pool);
    expect(assignments.ok && assignments.value.map((a) => [a.index, a.node, a.generation, a.state])).toEqual([
      [0, null, 0, 'unplaced'],
      [1, null, 0, 'unplaced'],
      [2, null, 0, 'unplaced'],
    ]);
    // A replacement keeps where existing replicas are, and adds the new ones unplaced.
    expect(await applyAssignments(pool, [place('alice:web', 0, 'node-a', 1)])).toMatchObject({ ok: true });
    expect(await recordDeployment(pool, request('alice:web', { replicas: 4 }), PROOF)).toMatchObject({
      ok: true,
    });
    const after = await readAssignments(pool);
    expect(after.ok && after.value.map((a) => [a.index, a.node, a.generation])).toEqual([
      [0, 'node-a', 1],
      [1, null, 0],
      [2, null, 0],
      [3, null, 0],
    ]);
  });

  it('lists under a delegation path without leaking a sibling whose name it begins', async () => {
    const { pool } = await pg.schema();
    const names = ['alice:web', 'alice:team:db', 'alice2:web', 'alicex', ':alice', 'bob:alice:web'];
    await deployed(pool, ...names.map((n) => request(n)));
    const under = async (p: Path) => {
      const listed = await listDeployments(pool, { under: p });
      return listed.ok ? listed.value.map((d) => d.request.name) : listed.error.message;
    };
    expect(await under(path('alice'))).toEqual(['alice:team:db', 'alice:web']);
    expect(await under(path('alice:team'))).toEqual(['alice:team:db']);
    expect(await under(path('alice2'))).toEqual(['alice2:web']);
    expect(await under(path('ali'))).toEqual([]);
    expect(await under(path(''))).toHaveLength(names.length);
  });

  it('removes a deployment with its removal proof, keeping the first removal', async () => {
    const { pool } = await pg.schema();
    await deployed(pool, request('alice:web', { replicas: 1 }));
    const removal = new Uint8Array([0x30, 0x01, 0x05]);
    expect(await removeDeployment(pool, 'alice:web', removal)).toEqual({ ok: true, value: true });
    expect(await removeDeployment(pool, 'alice:web', PROOF)).toEqual({ ok: true, value: false });
    expect(await removeDeployment(pool, 'alice:db', removal)).toMatchObject({
      ok: false,
      error: { code: 'E_FLEET_DEPLOYMENT_UNKNOWN' },
    });
    const listed = await listDeployments(pool);
    expect(listed.ok && listed.value[0]?.removal?.proof).toEqual(removal);
    // Its replica is not placed again, and may now be retired.
    expect(await applyAssignments(pool, [place('alice:web', 0, 'node-a', 1)])).toMatchObject({
      ok: false,
      error: { code: 'E_FLEET_ASSIGNMENT_REFUSED', message: expect.stringMatching(/is removed/) },
    });
    expect(
      await applyAssignments(pool, [{ kind: 'retire', name: 'alice:web', index: 0, generation: 0 }]),
    ).toEqual({ ok: true, value: undefined });
    expect(await readAssignments(pool)).toEqual({ ok: true, value: [] });
  });

  it('lets exactly one of concurrent deciders with the same generation win', async () => {
    const { pool } = await pg.schema();
    await deployed(pool, request('alice:web'));
    const nodes = ['node-a', 'node-b', 'node-c', 'node-d', 'node-e'];
    const outcomes = await Promise.all(
      nodes.map((n) => applyAssignments(pool, [place('alice:web', 0, n, 1)])),
    );
    expect(outcomes.filter((o) => o.ok)).toHaveLength(1);
    for (const o of outcomes.filter((o) => !o.ok))
      expect(o).toMatchObject({
        error: {
          code: 'E_FLEET_ASSIGNMENT_REFUSED',
          message: expect.stringMatching(/generation 1 is not higher than the registry's 1/),
        },
      });
    const winner = nodes[outcomes.findIndex((o) => o.ok)];
    const read = await readAssignments(pool, winner);
    expect(read).toMatchObject({
      ok: true,
      value: [{ name: 'alice:web', index: 0, node: winner, generation: 1, state: 'placing' }],
    });
    // A decision made from generation 0 is stale now.
    expect(
      await applyAssignments(pool, [
        { kind: 'wait', name: 'alice:web', index: 0, generation: 0, reason: 'lost' },
      ]),
    ).toMatchObject({ ok: false, error: { message: expect.stringMatching(/registry's is 1 now/) } });
  });

  it('writes a batch whole or not at all, and keeps replicas on distinct nodes', async () => {
    const { pool } = await pg.schema();
    await deployed(pool, request('alice:web'));
    const stale = await applyAssignments(pool, [
      place('alice:web', 0, 'node-a', 1),
      place('alice:web', 1, 'node-b', 0),
    ]);
    expect(stale).toMatchObject({ ok: false, error: { details: { refused: [{ index: 1 }] } } });
    const unchanged = await readAssignments(pool);
    expect(unchanged.ok && unchanged.value.map((a) => a.generation)).toEqual([0, 0]);
    expect(
      await applyAssignments(pool, [place('alice:web', 0, 'node-a', 1), place('alice:web', 1, 'node-a', 1)]),
    ).toMatchObject({
      ok: false,
      error: { message: expect.stringMatching(/two replicas of one deployment on one node/) },
    });
    expect(
      await applyAssignments(pool, [place('alice:web', 0, 'node-a', 1), place('alice:web', 1, 'node-b', 1)]),
    ).toMatchObject({ ok: true });
    // One batch may swap two replicas' nodes (checked at its end).
    expect(
      await applyAssignments(pool, [place('alice:web', 0, 'node-b', 2), place('alice:web', 1, 'node-a', 2)]),
    ).toMatchObject({ ok: true });
  });

  it('never moves a pinned deployment or one with block devices elsewhere', async () => {
    const { pool } = await pg.schema();
    await deployed(
      pool,
      request('alice:pinned', { replicas: 1, node: 'node-a' }),
      request('alice:disk', { replicas: 1, blockDevices: 1 }),
    );
    expect(await applyAssignments(pool, [place('alice:pinned', 0, 'node-b', 1)])).toMatchObject({
      ok: false,
      error: { message: expect.stringMatching(/pinned to node node-a/) },
    });
    expect(await applyAssignments(pool, [place('alice:disk', 0, 'node-a', 1)])).toMatchObject({ ok: true });
    expect(await applyAssignments(pool, [place('alice:disk', 0, 'node-b', 2)])).toMatchObject({
      ok: false,
      error: { message: expect.stringMatching(/block devices and stays on node node-a/) },
    });
    expect(
      await applyAssignments(pool, [
        { kind: 'wait', name: 'alice:disk', index: 0, generation: 1, reason: 'node-a lost' },
      ]),
    ).toMatchObject({ ok: true });
    expect(await readAssignments(pool, 'node-a')).toMatchObject({
      ok: true,
      value: [{ name: 'alice:disk', state: 'waiting', reason: 'node-a lost', generation: 1 }],
    });
  });

  it('takes a node’s report only for the generation it is assigned', async () => {
    const { pool } = await pg.schema();
    await deployed(pool, request('alice:web', { replicas: 1 }));
    expect(await applyAssignments(pool, [place('alice:web', 0, 'node-a', 1)])).toMatchObject({ ok: true });
    const held = { name: 'alice:web', index: 0, node: 'node-a', generation: 1 };
    expect(await markReplicaState(pool, held, { state: 'running' })).toEqual({ ok: true, value: true });
    expect(await markReplicaState(pool, { ...held, node: 'node-b' }, { state: 'running' })).toEqual({
      ok: true,
      value: false,
    });
    expect(await applyAssignments(pool, [place('alice:web', 0, 'node-b', 2)])).toMatchObject({ ok: true });
    expect(await markReplicaState(pool, held, { state: 'exited', status: 'exit 1' })).toEqual({
      ok: true,
      value: false,
    });
    const moved = { ...held, node: 'node-b', generation: 2 };
    expect(await markReplicaState(pool, moved, { state: 'exited', status: 'exit 1' })).toEqual({
      ok: true,
      value: true,
    });
    expect(await readAssignments(pool)).toMatchObject({
      ok: true,
      value: [{ node: 'node-b', generation: 2, state: 'exited', reason: 'exit 1' }],
    });
  });

  it('stops an expired replica where it is and never places it again', async () => {
    const { pool } = await pg.schema();
    await deployed(pool, request('alice:web', { replicas: 1 }));
    expect(await applyAssignments(pool, [place('alice:web', 0, 'node-a', 1)])).toMatchObject({ ok: true });
    const expire: Decision = {
      kind: 'expire',
      name: 'alice:web',
      index: 0,
      generation: 1,
      reason: 'revoked',
    };
    expect(await applyAssignments(pool, [expire])).toMatchObject({ ok: true });
    expect(await readAssignments(pool)).toMatchObject({
      ok: true,
      value: [{ node: 'node-a', generation: 1, state: 'expired', reason: 'revoked' }],
    });
    expect(await applyAssignments(pool, [place('alice:web', 0, 'node-b', 2)])).toMatchObject({
      ok: false,
      error: { message: expect.stringMatching(/it is expired, which is final/) },
    });
    const held = { name: 'alice:web', index: 0, node: 'node-a', generation: 1 };
    expect(await markReplicaState(pool, held, { state: 'running' })).toEqual({ ok: true, value: false });
  });

  it('holds a lease for one holder at a time, renewed by it and taken over after expiry', async () => {
    const { pool } = await pg.schema();
    const takers = await Promise.all(['a', 'b', 'c', 'd'].map((h) => takeLease(pool, 'leader', h, 400)));
    const won = takers.filter((t) => t.ok && t.value.held);
    expect(won).toHaveLength(1);
    const first = ['a', 'b', 'c', 'd'][takers.indexOf(won[0] as (typeof takers)[number])] as string;
    const other = first === 'a' ? 'b' : 'a';
    expect(await takeLease(pool, 'leader', other, 400)).toMatchObject({
      ok: true,
      value: { held: false, holder: first },
    });
    const renewed = await takeLease(pool, 'leader', first, 400);
    expect(renewed).toMatchObject({ ok: true, value: { held: true } });
    const firstExpiry = won[0]?.ok ? won[0].value.expiresAt.getTime() : 0;
    expect(renewed.ok && renewed.value.expiresAt.getTime()).toBeGreaterThan(firstExpiry);
    // Another key is another lease.
    expect(await takeLease(pool, 'other', other, 400)).toMatchObject({ ok: true, value: { held: true } });

    await new Promise((r) => setTimeout(r, 600));
    expect(await takeLease(pool, 'leader', other, 400)).toMatchObject({ ok: true, value: { held: true } });
    expect(await takeLease(pool, 'leader', first, 400)).toMatchObject({
      ok: true,
      value: { held: false, holder: other },
    });
    expect(await releaseLease(pool, 'leader', first)).toEqual({ ok: true, value: false });
    expect(await releaseLease(pool, 'leader', other)).toEqual({ ok: true, value: true });
    expect(await takeLease(pool, 'leader', first, 400)).toMatchObject({ ok: true, value: { held: true } });
    expect(await takeLease(pool, 'leader', first, 0)).toMatchObject({
      ok: false,
      error: { code: 'E_FLEET_LEASE_INVALID' },
    });
  });
});

// The fleet registry's deny-list (migration 004, src/fleet/revocations.ts) with a REAL PostgreSQL
// (test/fleet/pg.ts) and two REAL petrelds on it (test/tls/petreld.ts, one PKI, each its web API
// over HTTPS; the fake-kvm TEST DOUBLE stands in for KVM where it is missing): `petrel ca revoke
// --registry` on the registry, and both nodes refuse the token within fleetRevocationPoll while
// another token still works; the local file is left alone; a registry that cannot be read
// keeps the last list read (with a warning), and a node that never read it refuses every token.

import { readFile } from 'node:fs/promises';
import { request } from 'node:https';
import path from 'node:path';
import { expect, it } from 'vitest';
import { caCommand } from '../../src/cli/commands/ca.js';
import { mintToken, type Petreld, startPetreld } from '../tls/petreld.js';
import { describeWithPostgres } from './pg.js';

const POLL_MS = 300;

/** GET /api/v1/node with `token` on `node`: the status and the error code, if any. */
function node(petreld: Petreld, ca: Buffer, token: string): Promise<{ status: number; code: string | null }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: petreld.webPort as number,
        path: '/api/v1/node',
        headers: { authorization: `Bearer ${token}` },
        ca,
        agent: false,
      },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => {
          body += c.toString();
        });
        res.on('end', () => {
          const code = (JSON.parse(body) as { error?: { code: string } }).error?.code ?? null;
          resolve({ status: res.statusCode as number, code });
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const revoke = (...args: string[]) => caRun('revoke', ...args);

/** `petrel ca ARGS...` in this process. */
async function caRun(...args: string[]): Promise<{ status: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const status = await caCommand.run(args, {
    stdout: (t) => {
      out += String(t);
    },
    stderr: (t) => {
      err += String(t);
    },
    readFile: async () => new Uint8Array(),
    writeFile: async () => {},
  });
  return { status, out, err };
}

describeWithPostgres('the fleet registry’s deny-list', (pg) => {
  it('a revocation in the registry is honoured by every node within fleetRevocationPoll', async () => {
    const db = await pg.schema();
    const flags = (id: string) => ({ fleetDb: db.url, nodeId: id, fleetRevocationPoll: `${POLL_MS}ms` });
    const a = await startPetreld({ alice: ['--vms', '1', '--mem', '32'] }, flags('node-a'), { web: true });
    let b: Petreld | undefined;
    try {
      b = await startPetreld({}, flags('node-b'), { web: true, ca: a.ca });
      const ca = await readFile(path.join(a.ca, 'cacert.pem'));
      const ci = await mintToken(a, 'alice', 'ci');
      const other = await mintToken(a, 'alice', 'other');
      for (const n of [a, b]) expect(await node(n, ca, ci)).toEqual({ status: 200, code: null });

      const revoked = await revoke(ci, '--registry', db.url);
      expect(revoked).toMatchObject({
        status: 0,
        out: expect.stringMatching(/^revoked [0-9a-f]{32} \(token ci\) in the fleet registry\n$/),
      });
      const at = Date.now();
      // Both nodes refuse it within the poll interval (a margin for a busy machine), none before the revocation.
      const refusedAfter = await Promise.all(
        [a, b].map(async (n) => {
          for (;;) {
            const r = await node(n, ca, ci);
            if (r.status === 401) {
              expect(r.code).toBe('E_TOKEN_REVOKED');
              return Date.now() - at;
            }
            if (Date.now() - at > POLL_MS + 5000) throw new Error('the revoked token was still served');
            await new Promise((r) => setTimeout(r, 25));
          }
        }),
      );
      for (const ms of refusedAfter) expect(ms).toBeLessThan(POLL_MS + 3000);
      console.log(`registry revocation refused after ${refusedAfter.join(' and ')} ms (poll ${POLL_MS} ms)`);
      for (const n of [a, b]) expect(await node(n, ca, other)).toEqual({ status: 200, code: null });
      // The registry only: no local deny-list was written, and a second revoke says it is there.
      await expect(readFile(path.join(a.stateDir, 'web-deny-list'), 'utf8')).rejects.toThrow(/ENOENT/);
      expect((await revoke(ci, '--registry', db.url)).out).toMatch(
        /is already revoked in the fleet registry/,
      );
      // `ca token --list --registry` says so too (node a wrote the first token's use at once).
      const listed = await caRun(
        'token',
        '--list',
        '--json',
        '--state-dir',
        a.stateDir,
        '--registry',
        db.url,
      );
      const states = Object.fromEntries(
        (JSON.parse(listed.out) as { name: string; state: string }[]).map((t) => [t.name, t.state]),
      );
      expect(states.ci).toBe('revoked');

      // The registry cannot be read (its table renamed away): the last list read is kept, with a warning.
      await db.pool.query('ALTER TABLE revocations RENAME TO revocations_away');
      await new Promise((r) => setTimeout(r, POLL_MS * 3));
      for (const n of [a, b]) {
        expect(await node(n, ca, ci)).toEqual({ status: 401, code: 'E_TOKEN_REVOKED' });
        expect(await node(n, ca, other)).toEqual({ status: 200, code: null });
        expect(n.logs.some((l) => l.event === 'web.registry-deny-list' && l.level === 40)).toBe(true);
      }
      await (b as Petreld).stop();
      b = undefined;
      // A node that never read it refuses every token until it can.
      const c = await startPetreld({}, flags('node-c'), { web: true, ca: a.ca });
      try {
        expect(await node(c, ca, other)).toEqual({ status: 401, code: 'E_TOKEN_DENY_LIST' });
        await db.pool.query('ALTER TABLE revocations_away RENAME TO revocations');
        const deadline = Date.now() + POLL_MS + 5000;
        let status = 0;
        while (status !== 200 && Date.now() < deadline) {
          status = (await node(c, ca, other)).status;
          await new Promise((r) => setTimeout(r, 25));
        }
        expect(status).toBe(200);
        expect(await node(c, ca, ci)).toEqual({ status: 401, code: 'E_TOKEN_REVOKED' });
      } finally {
        await c.stop();
      }
    } finally {
      await b?.stop();
      await a.stop();
    }
  }, 60_000);
});

// `petrel fleet create` end to end: a real petreld reports to the registry, placement picks it,
// and the unikernel is created there over mutual TLS with alice's delegation; the placement is
// recorded with who placed it; the node's next report (sent after the change, long before its
// heartbeat) lists it and ends the reservation, and a destroy is reported the same way.
// (Guests: the fake-kvm test double on hosts without /dev/kvm.)
import path from 'node:path';
import { expect, it } from 'vitest';
import { fleetCommand } from '../../src/cli/commands/fleet.js';
import { Registry } from '../../src/fleet/registry.js';
import { unwrap } from '../../src/resources/errors.js';
import { parseName } from '../../src/resources/name.js';
import { canaryImage } from '../engine/guest.js';
import { until } from '../engine/harness.js';
import { startPetreld } from '../tls/petreld.js';
import { describeWithPostgres } from './pg.js';

/** Waits for the registry to show what the node reported (a fraction of a second after a change). */
const reported = (condition: () => Promise<boolean>) =>
  until(condition, 5_000, "the node's report of the change");

describeWithPostgres('fleet create over mutual TLS', (pg) => {
  it('places on the reporting node and creates there as alice', async () => {
    const { url, pool } = await pg.schema();
    const node = await startPetreld(
      { alice: ['--vms', '2', '--mem', '64'] },
      // Heartbeats an hour apart: every report this test sees follows a change.
      { fleetDb: url, nodeId: 'only', fleetHeartbeat: '1h', fleetFresh: '2h', offerMemory: '256' },
    );
    try {
      let out = '';
      let errors = '';
      const io = {
        stdout: (t: string | Uint8Array) => {
          out += t.toString();
        },
        stderr: (t: string) => {
          errors += t;
        },
        readFile: async (file: string) => (await import('node:fs/promises')).readFile(file),
        writeFile: async () => {},
      };
      const ca = path.join(node.dir, 'ca');
      const status = await fleetCommand.run(
        [
          'create',
          'alice:web',
          canaryImage,
          '--db',
          url,
          '--mem',
          '16',
          '--arg',
          'wait',
          '--arg',
          'fleet',
          '--tls-ca',
          path.join(ca, 'cacert.pem'),
          '--tls-cert',
          path.join(ca, 'alice.pem'),
          '--tls-key',
          path.join(ca, 'alice.key'),
        ],
        io,
      );
      expect(status, errors).toBe(0);
      expect(out).toContain('created unikernel');
      expect(out).toContain('alice:web placed on only');
      expect(node.daemon.engine.running).toEqual(['alice:web']);
      const registry = new Registry(pool);
      const trail = await registry.placements('alice:web');
      expect(trail.ok && trail.value.map(({ node: n, by }) => ({ node: n, by }))).toEqual([
        { node: 'only', by: 'alice' },
      ]);
      const row = async () =>
        (await pool.query(`SELECT resources, unikernels FROM nodes WHERE id = 'only'`)).rows[0] as {
          resources: { memoryMiB: number; total: { memoryMiB: number } };
          unikernels: string[];
        };
      await reported(async () => (await row()).unikernels.includes('alice:web'));
      expect((await row()).resources).toMatchObject({ memoryMiB: 256 - 16, total: { memoryMiB: 256 } });
      expect(await registry.reservations()).toEqual({ ok: true, value: [] });

      const destroyed = await node.remote('alice').request(unwrap(parseName('alice:web')), {
        type: 'unikernel-destroy',
      });
      expect(destroyed.ok && destroyed.value.kind).toBe('reply');
      await reported(async () => (await row()).unikernels.length === 0);
      expect((await row()).resources.memoryMiB).toBe(256);
    } finally {
      await node.stop();
    }
  }, 60_000);
});

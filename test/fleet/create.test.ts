// `petrel fleet create` end to end: a real petreld reports to the registry, placement picks it,
// and the unikernel is created there over mutual TLS with alice's delegation; the placement is
// recorded with who placed it. (Guests: the fake-kvm test double on hosts without /dev/kvm.)
import path from 'node:path';
import { expect, it } from 'vitest';
import { fleetCommand } from '../../src/cli/commands/fleet.js';
import { Registry } from '../../src/fleet/registry.js';
import { canaryImage } from '../engine/guest.js';
import { startPetreld } from '../tls/petreld.js';
import { describeWithPostgres } from './pg.js';

describeWithPostgres('fleet create over mutual TLS', (pg) => {
  it('places on the reporting node and creates there as alice', async () => {
    const { url, pool } = await pg.schema();
    const node = await startPetreld(
      { alice: ['--vms', '2', '--mem', '64'] },
      { fleetDb: url, nodeId: 'only', fleetHeartbeat: '1s' },
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
      const trail = await new Registry(pool).placements('alice:web');
      expect(trail.ok && trail.value.map(({ node: n, by }) => ({ node: n, by }))).toEqual([
        { node: 'only', by: 'alice' },
      ]);
    } finally {
      await node.stop();
    }
  }, 60_000);
});

// Two real petreld processes report to the registry (issue 9): `hvt1` can run hvt guests; `blind`
// runs with --runtimes none and a KVM device it cannot open. Placement of an hvt VM never picks
// `blind`, a request for it is refused because it hosts nothing, and with only `blind` alive it
// fails so.
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect, it } from 'vitest';
import { makeRequirements } from '../../src/fleet/placement.js';
import { Registry } from '../../src/fleet/registry.js';
import { unwrap } from '../../src/resources/errors.js';
import { ABI_VERSION } from '../../src/tender/abi.js';
import { type DaemonProcess, launchDaemon } from '../daemon/process.js';
import { repo, testTender } from '../engine/guest.js';
import { makeNetns } from '../engine/harness.js';
import { describeWithPostgres } from './pg.js';

const petreld = path.join(repo, 'dist', 'src', 'cli', 'petreld.js');

describeWithPostgres('two petreld nodes', (pg) => {
  it('placement never picks the node that cannot open /dev/kvm, and says why', async () => {
    const { url, pool } = await pg.schema();
    const dir = await mkdtemp(path.join(tmpdir(), 'petrel-fleet-'));
    const netns = makeNetns();
    // A device node on a nodev tmpfs: it exists, and even root cannot open it.
    const devDir = path.join(dir, 'dev');
    await mkdir(devDir);
    spawnSync('mount', ['-t', 'tmpfs', '-o', 'nodev', 'petrel-test', devDir]);
    spawnSync('mknod', [path.join(devDir, 'kvm'), 'c', '10', '232']);
    const children: DaemonProcess[] = [];
    try {
      const common = (name: string) => [
        '--state-dir',
        path.join(dir, name, 'state'),
        '--run-dir',
        path.join(dir, name, 'run'),
        '--fleet-db',
        url,
        '--node-id',
        name,
        '--fleet-heartbeat',
        '1s',
        '--log-level',
        'warn',
      ];
      const tender = await testTender(dir);
      const hvt1 = await launchDaemon(
        [...common('hvt1'), '--node-address', '127.0.0.1:1025', '--tender-hvt', tender],
        { PETREL_TEST_NETNS: netns.name, PETREL_FAKE_KVM: '1' },
      );
      children.push(hvt1);
      // The blind node is the real petreld executable, with nothing standing in for anything.
      const blind = await launchDaemon(
        [
          ...common('blind'),
          // info, so that it logs `petreld ready`
          '--log-level',
          'info',
          '--node-address',
          '127.0.0.1:1026',
          '--runtimes',
          'none',
          '--kvm-device',
          path.join(devDir, 'kvm'),
          '--tap-prefix',
          'pblind',
        ],
        {},
        petreld,
      );
      children.push(blind);
      await new Promise((r) => setTimeout(r, 1500));

      const registry = new Registry(pool);
      const nodes = unwrap(await registry.nodes());
      expect(nodes.nodes.map((n) => n.id).sort()).toEqual(['blind', 'hvt1']);
      const req = unwrap(
        makeRequirements({ runtime: 'hvt', abi: ABI_VERSION.hvt, memoryMiB: 4, cpus: 1, bridges: [] }),
      );
      for (let i = 0; i < 3; i++) {
        const placed = await registry.place(req, { freshMs: 30_000 });
        expect(placed.ok && placed.value.node).toBe('hvt1');
      }
      const refused = await registry.place(req, { freshMs: 30_000, node: 'blind' });
      expect(refused.ok).toBe(false);
      if (!refused.ok)
        expect(refused.error.message).toMatch(
          /^node blind cannot run hvt .*: hosts no unikernels \(--runtimes none\)$/,
        );

      await hvt1.stop();
      const alone = await registry.place(req, { freshMs: 30_000 });
      expect(alone.ok).toBe(false);
      if (!alone.ok) {
        expect(alone.error.message).toContain('blind: hosts no unikernels (--runtimes none)');
        expect(alone.error.message).not.toContain('hvt1: ok');
      }
    } finally {
      await Promise.all(children.map((d) => d.stop()));
      spawnSync('umount', [devDir]);
      netns.destroy();
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

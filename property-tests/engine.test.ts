// Model-based property of the engine with a fault-injecting host: after every step of a random
// sequence of create / force-create / destroy / policy changes — some host steps failing — the
// resource tree, the running tender processes and the host artefacts agree with each other and
// with a simple model of what should run. Besides failures of whole host steps, a write at the
// file layer may meet ENOSPC or EDQUOT with its errno (src/host/faults.ts), as on a full disk.
import { readlinkSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { EngineHost } from '../src/engine/host.js';
import { injectWriteFaults, type WriteSite } from '../src/host/faults.js';
import { unwrap } from '../src/resources/errors.js';
import { makePolicy } from '../src/resources/policy.js';
import * as T from '../src/resources/tree.js';
import { canaryImage, canaryNetImage } from '../test/engine/guest.js';
import {
  CREATE_STEPS,
  canaryConfig,
  createCommand,
  makeEngine,
  storedNames,
  storedState,
} from '../test/engine/harness.js';

const RUNS = Number(process.env.ENGINE_PROPERTY_RUNS ?? 12);
const HOST_STEPS: (keyof EngineHost)[] = [...CREATE_STEPS, 'writeSnapshot'];

/** File-layer write sites a step may meet a full disk at (the state directory's). */
const WRITE_SITES: WriteSite[] = [
  'stage',
  'stage-sync',
  'store',
  'replace:write',
  'replace:fsync',
  'replace:rename',
  'append:write',
  'append:fdatasync',
  'fifo',
  'run-file',
];

type Op =
  | { op: 'create'; vm: string; net: boolean; force: boolean }
  | { op: 'destroy'; vm: string }
  | { op: 'policy'; vms: number }
  | { op: 'unpolicy' };

const opArb: fc.Arbitrary<{
  op: Op;
  fault: keyof EngineHost | null;
  full: { site: WriteSite; errno: 'ENOSPC' | 'EDQUOT' } | null;
}> = fc.record({
  op: fc.oneof(
    {
      weight: 4,
      arbitrary: fc.record({
        op: fc.constant('create' as const),
        vm: fc.constantFrom('a', 'b', 'c'),
        net: fc.boolean(),
        force: fc.boolean(),
      }),
    },
    {
      weight: 2,
      arbitrary: fc.record({ op: fc.constant('destroy' as const), vm: fc.constantFrom('a', 'b', 'c') }),
    },
    {
      weight: 1,
      arbitrary: fc.record({ op: fc.constant('policy' as const), vms: fc.integer({ min: 0, max: 3 }) }),
    },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('unpolicy' as const) }) },
  ),
  fault: fc.option(fc.constantFrom(...HOST_STEPS), { nil: null, freq: 3 }),
  full: fc.option(
    fc.record({
      site: fc.constantFrom(...WRITE_SITES),
      errno: fc.constantFrom('ENOSPC' as const, 'EDQUOT' as const),
    }),
    { nil: null, freq: 3 },
  ),
});

describe('engine with host faults', () => {
  it('keeps tree, tender processes and host artefacts in agreement after every step', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 8 }), async (steps) => {
        const t = await makeEngine({ stopTimeoutMs: 1_000 });
        try {
          for (const { op, fault, full } of steps) {
            if (fault !== null) t.faults[fault] = () => true;
            if (full !== null)
              injectWriteFaults((site, file) =>
                site === full.site && file.startsWith(t.stateDir) ? full.errno : null,
              );
            switch (op.op) {
              case 'create': {
                const image = op.net ? canaryNetImage : canaryImage;
                const config = await canaryConfig(image, ['wait', op.vm], {
                  bridges: op.net ? [{ netif: 'service', bridge: 'br0', mac: null }] : [],
                });
                await t.run(`t:${op.vm}`, createCommand(config, op.force));
                break;
              }
              case 'destroy':
                await t.run(`t:${op.vm}`, { type: 'unikernel-destroy' });
                break;
              case 'policy':
                await t.run('t:', {
                  type: 'policy-add',
                  policy: unwrap(
                    makePolicy({ vms: op.vms, memory: 64, cpuids: [0], block: null, bridges: ['br0'] }),
                  ),
                });
                break;
              case 'unpolicy':
                await t.run('t:', { type: 'policy-remove' });
                break;
            }
            for (const step of HOST_STEPS) delete t.faults[step];
            injectWriteFaults(null);
            await t.engine.idle();

            // Agreement: the tree's unikernels = the running set = the tenders alive = the artefacts.
            const inTree = T.foldUnikernels(t.engine.tree, [])
              .map(([n]) => `${n.path.join(':')}:${n.label}`)
              .sort();
            expect(t.engine.running.sort()).toEqual(inTree);
            for (const vm of inTree) {
              const pid = t.engine.pidOf({ path: ['t'], label: vm.split(':')[1] } as never);
              expect(
                pid !== undefined &&
                  (await readdir(`/proc/${pid}`).then(
                    () => true,
                    () => false,
                  )),
              ).toBe(true);
            }
            const images = (await readdir(t.runDir))
              .filter((f) => f.endsWith('.img'))
              .map((f) => path.basename(f, '.img'));
            expect(images.sort()).toEqual(inTree);
            // The store holds one file per image that a running unikernel uses or the committed
            // state names (a failed state write leaves the old state naming one for a while).
            const used = new Set(
              inTree.map((vm) => path.basename(readlinkSync(path.join(t.runDir, `${vm}.img`)))),
            );
            for (const u of (await storedState(t.stateDir)).unikernels) used.add(u.image.digest);
            expect((await readdir(path.join(t.stateDir, 'images'))).sort()).toEqual([...used].sort());
            expect(
              (await readdir(path.join(t.runDir, 'fifo')).catch(() => []))
                .filter((f) => !f.startsWith('.spare-'))
                .sort(),
            ).toEqual(inTree);
            const taps = t.netns
              .links()
              .split(' ')
              .filter((l) => l.startsWith('ptap'));
            const withNets = inTree.filter(
              (vm) => (t.engine.netsOf({ path: ['t'], label: vm.split(':')[1] } as never) ?? []).length > 0,
            );
            expect(taps).toHaveLength(withNets.length);
            // Usage under the policy never exceeds it.
            const policy = T.findPolicy(t.engine.tree, ['t'] as never);
            if (policy !== undefined)
              expect(BigInt(T.usageAt(t.engine.tree, ['t'] as never).vms) <= policy.vms).toBe(true);
          }
          // The next write without a fault brings the state in line with what runs, whatever
          // writes failed before; then nothing is left in the store that nothing names.
          const flush = unwrap(
            makePolicy({ vms: 7, memory: 64, cpuids: [0], block: null, bridges: ['br0'] }),
          );
          await t.run('t:', { type: 'policy-add', policy: flush });
          await t.engine.idle();
          const running = t.engine.running.sort();
          expect(await storedNames(t.stateDir)).toEqual(running);
          const images = new Set(
            running.map((vm) => path.basename(readlinkSync(path.join(t.runDir, `${vm}.img`)))),
          );
          expect((await readdir(path.join(t.stateDir, 'images'))).sort()).toEqual([...images].sort());
        } finally {
          injectWriteFaults(null);
          await t.close();
        }
      }),
      { numRuns: RUNS },
    );
  }, 600_000);
});

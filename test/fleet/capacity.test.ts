// A node's capacity as the fleet sees it: its root policy (the probed host, lowered by
// --offer-memory) minus what the resource tree allocates; CPU ids are pins, not consumed.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/daemon/config.js';
import { rootPolicy } from '../../src/daemon/daemon.js';
import { capacityOf } from '../../src/fleet/capacity.js';
import { unwrap } from '../../src/resources/errors.js';
import { parseName } from '../../src/resources/name.js';
import { makePolicy } from '../../src/resources/policy.js';
import * as T from '../../src/resources/tree.js';
import { repo } from '../engine/guest.js';
import { report as nodeReport } from './fixtures.js';

/** A probe's report of a host (what rootPolicy describes). */
const report = (overrides: Parameters<typeof nodeReport>[0] = {}) => ({
  ...nodeReport(overrides),
  probedAt: '2026-01-01T12:00:00.000Z',
  problems: {},
});

const name = (text: string) => unwrap(parseName(text));
const allocation = (memory: number, cpuids: number[] = [0]): T.Allocation => ({
  memory,
  cpuids,
  bridges: [],
  blocks: [],
});

describe('node capacity', () => {
  it('is the root policy minus what the tree allocates, and lists the unikernels', () => {
    const host = report({ memoryMiB: 8192, cpus: 4, blockStorageMiB: 2048 });
    let tree = unwrap(T.addPolicy(T.emptyTree, [], unwrap(rootPolicy(host, 1024))));
    expect(capacityOf(tree)).toEqual({
      free: { memoryMiB: 1024, vms: Number.MAX_SAFE_INTEGER, blockStorageMiB: 2048, cpus: 4 },
      total: { memoryMiB: 1024, vms: Number.MAX_SAFE_INTEGER, blockStorageMiB: 2048 },
      unikernels: [],
    });
    const alice = unwrap(makePolicy({ vms: 4, memory: 512, cpuids: [0, 1], block: 100, bridges: [] }));
    tree = unwrap(T.addPolicy(tree, name('alice:web').path, alice));
    tree = unwrap(T.admitUnikernel(tree, name('alice:web'), allocation(256, [0])));
    tree = unwrap(T.admitUnikernel(tree, name('alice:db'), allocation(128, [0])));
    tree = unwrap(T.admitUnikernel(tree, name('top'), allocation(64, [1])));
    tree = unwrap(T.addBlock(tree, name('alice:disk'), 100));
    const capacity = capacityOf(tree);
    expect(capacity.free).toEqual({
      memoryMiB: 1024 - 256 - 128 - 64,
      // The root allows 2^62−1 unikernels: more than a JSON number holds exactly, so capped.
      vms: Number.MAX_SAFE_INTEGER,
      blockStorageMiB: 2048 - 100,
      // Two unikernels pinned to CPU 0 take nothing from the four ids the root offers.
      cpus: 4,
    });
    expect([...capacity.unikernels].sort()).toEqual([':top', 'alice:db', 'alice:web']);
    // The root policy enforces the offer: a unikernel beyond it is refused by the node itself.
    expect(T.admitUnikernel(tree, name('big'), allocation(1024 - 448 + 1)).ok).toBe(false);
  });

  it('the offer lowers the root policy, never raises it above the host', () => {
    const host = report({ memoryMiB: 2048 });
    expect(unwrap(rootPolicy(host)).memory).toBe(2048);
    expect(unwrap(rootPolicy(host, 512)).memory).toBe(512);
    expect(unwrap(rootPolicy(host, 4096)).memory).toBe(2048);
  });

  it('a tree without a root policy offers nothing', () => {
    expect(capacityOf(T.emptyTree).free).toEqual({ memoryMiB: 0, vms: 0, blockStorageMiB: 0, cpus: 0 });
  });

  it('--offer-memory is a documented key: flag, file and contrib/petreld.toml', async () => {
    const flag = await loadConfig(['--offer-memory', '768']);
    expect(flag.ok && flag.value.config.offerMemory).toBe(768);
    const bad = await loadConfig(['--offer-memory', '0']);
    expect(bad).toMatchObject({
      ok: false,
      error: { message: /--offer-memory: expected a positive integer/ },
    });
    expect((await loadConfig([])).ok && unwrap(await loadConfig([])).config.offerMemory).toBe(null);
    // The example configuration is valid and sets the fleet keys it documents.
    const example = await loadConfig(['--config', path.join(repo, 'contrib', 'petreld.toml')]);
    if (!example.ok) throw new Error(example.error.message);
    expect(example.value.config).toMatchObject({
      offerMemory: null,
      fleetHeartbeat: 10_000,
      fleetFresh: 30_000,
    });
  });
});

// cgroup v2 for jails (src/host/jail.ts giveControllers): controllers are turned on once at
// discovery, so a kernel that refuses means tenders without cgroups, said, not failed creates.
// This host is cgroup v1 with an empty v2 hierarchy: the refusal is the real kernel's; the
// acceptance is shown on plain directories (no v2 controller can be had here).

import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { giveControllers } from '../../src/host/jail.js';
import { tempDir } from './helpers.js';

const unified = '/sys/fs/cgroup/unified';
const hasEmptyV2 =
  existsSync(`${unified}/cgroup.controllers`) &&
  !(await readFile(`${unified}/cgroup.controllers`, 'utf8').catch(() => 'memory')).includes('memory');

describe('cgroup v2 controllers for jails', () => {
  it.skipIf(!hasEmptyV2)(
    'a hierarchy whose root cannot give memory on: no cgroups, why named, nothing made',
    async () => {
      const parent = `${unified}/petrel-tenders-test-${process.pid}`;
      const layout = await giveControllers({
        version: 2,
        delegator: unified,
        parent,
        controllers: ['memory', 'pids'],
      });
      expect(layout).toEqual({
        version: 0,
        why: `cgroup v2: ${unified}/cgroup.subtree_control: ENOENT turning on memory, pids`,
      });
      expect(existsSync(parent)).toBe(false);
    },
  );

  it('a delegated cgroup that takes them: the jails’ parent made, both subtree_control files written', async () => {
    const { dir, cleanup } = await tempDir();
    try {
      await writeFile(path.join(dir, 'cgroup.subtree_control'), '');
      const parent = path.join(dir, 'petrel-tenders');
      const layout = { version: 2, delegator: dir, parent, controllers: ['memory', 'cpuset'] } as const;
      expect(await giveControllers(layout)).toBe(layout);
      expect(await readFile(path.join(dir, 'cgroup.subtree_control'), 'utf8')).toBe('+memory +cpuset');
      expect(await readFile(path.join(parent, 'cgroup.subtree_control'), 'utf8')).toBe('+memory +cpuset');
      // Again, with the parent there: the same (a restarted petreld).
      expect(await giveControllers(layout)).toBe(layout);
      // A parent that cannot be made: named.
      const blocked = path.join(dir, 'file');
      await writeFile(blocked, '');
      expect(
        await giveControllers({
          version: 2,
          delegator: dir,
          parent: path.join(blocked, 'x'),
          controllers: ['pids'],
        }),
      ).toEqual({ version: 0, why: `cgroup v2: ${path.join(blocked, 'x')}: ENOTDIR turning on pids` });
    } finally {
      await cleanup();
    }
  });
});

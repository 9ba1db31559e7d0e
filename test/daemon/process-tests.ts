// What the test files that run petreld as a separate process (process.ts) share: dist/ checked,
// a temporary base directory with the test tender, and nodes launched in a network namespace.

import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { repo, testTender } from '../engine/guest.js';
import { type DaemonProcess, launchDaemon } from './process.js';

export interface NodeOptions {
  /** More of petreld's flags, after those every node has. */
  readonly flags?: readonly string[];
  /** Instead of `--tender-hvt <the test tender>`. */
  readonly tenderFlags?: readonly string[];
  /** More environment for test/daemon/launch.mjs (PETREL_CRASH_AT, PETREL_TEST_WRITE_FAULT, …). */
  readonly env?: NodeJS.ProcessEnv;
  readonly readyMs?: number;
}

export interface ProcessTests {
  /** The file's temporary directory, removed after its tests. */
  readonly base: string;
  /** The test tender (test/engine/guest.ts), written into `base`. */
  readonly tender: string;
  /**
   * petreld (launch.mjs) on `<dir>/state` and `<dir>/run` in `netns`, a 2 s stop timeout and WARN
   * logs; on a host without KVM its KVM is the TEST DOUBLE of launch.mjs (PETREL_FAKE_KVM=1).
   */
  launch(dir: string, netns: string, options?: NodeOptions): Promise<DaemonProcess>;
  /** Stops (SIGUSR2, with their guests) the daemons `launch` started that still run. */
  stopRunning(): Promise<void>;
  /**
   * A new directory `<base>/case-…` for one test whose `sub` directory is a tmpfs of `size` (mode
   * 0700), so a full disk is the kernel's own ENOSPC; the caller unmounts `mount`.
   */
  caseOnTmpfs(sub: 'state' | 'run', size: string): Promise<{ dir: string; mount: string }>;
}

/** Registers the file's beforeAll and afterAll; the base is `<tmp>/petrel-<prefix>-…`. */
export function processTests(prefix: string): ProcessTests {
  let base = '';
  let tender = '';
  const running = new Set<DaemonProcess>();
  beforeAll(async () => {
    if (!existsSync(path.join(repo, 'dist', 'src', 'daemon', 'daemon.js'))) {
      throw new Error('dist/ is missing: run `npm run build` (npm test does) before these tests');
    }
    base = await mkdtemp(path.join(tmpdir(), `petrel-${prefix}-`));
    tender = await testTender(base);
  });
  afterAll(async () => {
    if (base !== '') await rm(base, { recursive: true, force: true });
  });
  return {
    get base() {
      return base;
    },
    get tender() {
      return tender;
    },
    async launch(dir, netns, options = {}) {
      const flags = ['--state-dir', `${dir}/state`, '--run-dir', `${dir}/run`];
      flags.push(...(options.tenderFlags ?? ['--tender-hvt', tender]));
      flags.push('--stop-timeout', '2s', '--log-level', 'warn', ...(options.flags ?? []));
      const env = { PETREL_TEST_NETNS: netns, PETREL_FAKE_KVM: '1', ...options.env };
      const daemon = await launchDaemon(flags, env, undefined, options.readyMs);
      running.add(daemon);
      void daemon.exited.then(() => running.delete(daemon));
      return daemon;
    },
    async stopRunning() {
      for (const daemon of running) await daemon.stop('SIGUSR2');
      running.clear();
    },
    async caseOnTmpfs(sub, size) {
      const dir = await mkdtemp(path.join(base, 'case-'));
      const mount = `${dir}/${sub}`;
      await mkdir(mount);
      execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size},mode=0700`, 'tmpfs', mount]);
      return { dir, mount };
    },
  };
}

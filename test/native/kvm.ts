// Whether this host can run hvt guests: the bundled kvm-probe opens /dev/kvm read-write and
// gets KVM_GET_API_VERSION answered, as the tender and petreld's probe do (a mere open would
// accept a regular file that happens to sit at /dev/kvm). Tests that need a guest to run are
// gated on this; the others run everywhere.
//
// PETREL_TEST_NO_KVM=1 makes a host with KVM behave as one without, for tests and benchmarks:
// the gate says no, and native/build/no-kvm.so (a TEST DOUBLE: opening /dev/kvm fails with
// ENOENT) is preloaded into every process started from here on, so tenders, kvm-probe and
// scripts find no KVM either. vitest.config.ts applies the same to every test file.

import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { repo } from '../repo.js';

// From the repository root: benchmarks run this compiled into dist/test/native/.
const build = path.join(repo, 'native', 'build');
const probe = path.join(build, 'kvm-probe');

/** The switch: set, tests and benchmarks see no KVM. */
export const noKvmRequested: boolean = process.env.PETREL_TEST_NO_KVM === '1';

/** LD_PRELOAD with no-kvm.so added (once); throws if it was not built, rather than run with KVM. */
export function preloadWithoutKvm(current: string | undefined): string {
  const library = path.join(build, 'no-kvm.so');
  if (!existsSync(library)) {
    throw new Error(`PETREL_TEST_NO_KVM=1 needs ${library}: run \`npm run build:native\` first`);
  }
  const preloaded = (current ?? '').split(/[ :]/u).filter((p) => p !== '');
  return preloaded.includes(library) ? (current ?? library) : [library, ...preloaded].join(':');
}

if (noKvmRequested) process.env.LD_PRELOAD = preloadWithoutKvm(process.env.LD_PRELOAD);

export const kvmUsable: boolean =
  !noKvmRequested && spawnSync(probe, ['/dev/kvm'], { stdio: 'ignore' }).status === 0;

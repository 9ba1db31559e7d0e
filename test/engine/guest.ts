// The tender engine tests launch. With SOLO5_HVT set, that tender; on a host whose /dev/kvm
// opens, the bundled petrel-hvt running the real canary. Otherwise a TEST DOUBLE stands in for
// what this machine lacks — KVM itself: a wrapper that runs the real petrel-hvt (arguments, ELF
// notes, taps, block files, console, signals, exit status all real) with fake-kvm.so preloaded,
// which plays the canary's behaviour for the mode in the guest arguments instead of executing
// guest code (native/tools/fake-kvm.c).

import { chmod, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { type ProbeOptions, probeHost } from '../../src/tender/probe.js';
import { kvmUsable } from '../native/kvm.js';
import { repo } from '../repo.js';

export { repo };
export const build = path.join(repo, 'native', 'build');
export const canaryImage = path.join(build, 'canary.hvt');
export const canaryNetImage = path.join(build, 'canary-net.hvt');
export const canaryBlkImage = path.join(build, 'canary-blk.hvt');
/** spt canaries run under the bundled petrel-spt: real guests, no KVM needed. */
export const sptCanary = path.join(build, 'canary.spt');
export const sptCanaryNet = path.join(build, 'canary-net.spt');
export const sptCanaryBlk = path.join(build, 'canary-blk.spt');

export { kvmUsable };

/** `real` when guests really run (solo5-hvt or KVM), `fake-kvm` when the double stands in. */
export const guestMode: 'real' | 'fake-kvm' = process.env.SOLO5_HVT || kvmUsable ? 'real' : 'fake-kvm';

/**
 * Returns the tender path for tests. In fake-kvm mode writes the wrapper into `dir`: canary
 * modes map to scripted guests (hello, exit N, wait WORD, sleep S, flood N, count MS [N]; a
 * count without N ticks 2,000 times, then waits: a script is one environment string, at most
 * 128 KiB).
 */
export async function testTender(dir: string): Promise<string> {
  if (process.env.SOLO5_HVT) return process.env.SOLO5_HVT;
  const hvt = path.join(build, 'petrel-hvt');
  if (kvmUsable) return hvt;
  const wrapper = path.join(dir, 'fake-kvm-hvt');
  await writeFile(
    wrapper,
    `#!/bin/sh
# TEST DOUBLE for a KVM host: the real petrel-hvt with a scripted /dev/kvm (see test/engine/guest.ts).
# What a jail must hold besides this script and its shell (src/host/jail.ts):
# petrel-jail-allow: ${hvt} ${path.join(build, 'fake-kvm.so')}
HVT='${hvt}'
case "$1" in --version|--help) exec "$HVT" "$@";; esac
state=0; mode=; arg=; arg2=
for a in "$@"; do
  if [ $state = 2 ]; then
    case "$a" in --name=*|--solo5:*) continue;; esac
    if [ -z "$mode" ]; then mode=$a; elif [ -z "$arg" ]; then arg=$a; elif [ -z "$arg2" ]; then arg2=$a; fi
    continue
  fi
  if [ $state = 1 ]; then state=2; continue; fi
  [ "$a" = "--" ] && state=1
done
case "$mode" in
  ''|hello) s="puts,petrel-canary \${arg:-hello}\\\\n;puts,petrel-canary boot 1 us\\\\n;halt,0";;
  exit) s="halt,$arg";;
  wait) s="puts,petrel-canary $arg\\\\n;sleep";;
  sleep) s=""; i=1; while [ $i -le "$arg" ]; do s="$s;puts,petrel-canary tick $i\\\\n;poll,1000000000"; i=$((i+1)); done; s="\${s#;};halt,0";;
  flood) s=""; i=1; n=\${arg:-1000}; while [ $i -le "$n" ]; do s="$s;puts,petrel-canary flood $i\\\\n"; i=$((i+1)); done; s="\${s#;};halt,0";;
  count) s=""; i=1; n=\${arg2:-0}; last=$n; [ "$n" = 0 ] && last=2000; ns=$(( \${arg:-100} * 1000000 ))
    while [ $i -le "$last" ]; do s="$s;puts,petrel-canary count $i\\\\n;poll,$ns"; i=$((i+1)); done
    if [ "$n" = 0 ]; then s="\${s#;};sleep"; else s="\${s#;};halt,0"; fi;;
  *) s="puts,unknown mode $mode\\\\n;halt,1";;
esac
FAKEKVM_SCRIPT="$s" LD_PRELOAD='${path.join(build, 'fake-kvm.so')}' exec "$HVT" "$@"
`,
  );
  await chmod(wrapper, 0o755);
  return wrapper;
}

/**
 * The KVM device the tests' engines and daemons are configured with (`kvmDevice`), from which
 * petrel-jail makes an hvt jail's /dev/kvm. Where guests really run, the host's /dev/kvm. Otherwise
 * a TEST DOUBLE, /dev/null, a character device every kind of host has (one without a /dev/kvm
 * node included): the jail is built exactly as in production, its /dev/kvm a node of the
 * configured device's number, and the fake-kvm tender above never opens it (fake-kvm.so answers
 * its open of /dev/kvm). test/daemon/launch.mjs gives petreld processes the same double.
 */
export const testKvmDevice: string = guestMode === 'real' ? '/dev/kvm' : '/dev/null';

/**
 * petreld's capability probe for tests and benchmarks that start a daemon: on a host without
 * /dev/kvm its kvm answer is replaced (TEST DOUBLE, matching the fake-kvm tender and
 * `testKvmDevice` above). With KVM it is the real probe.
 */
export async function probeWithFakeKvm(options: ProbeOptions) {
  if (kvmUsable) return probeHost(options);
  // No SSE guest either: a host without KVM never gets that far.
  const report = await probeHost({ ...options, sseGuest: null });
  const { kvm: _absent, ...problems } = report.problems;
  return { ...report, kvm: true, problems };
}

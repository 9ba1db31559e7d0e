// Which runtimes (hvt, spt) this node hosts, decided from the preflight's results: those
// configured, or with `runtimes = "auto"` each one whose checks passed.

import type { PetrelConfig, Runtime } from './config.js';
import { type CheckResult, failed, passed, result } from './preflight-result.js';

/** What each runtime needs to pass: hvt a usable /dev/kvm and an hvt tender, spt an spt tender. */
const RUNTIME_NEEDS: Readonly<Record<Runtime, readonly string[]>> = {
  hvt: ['kvm', 'tenders.hvt'],
  spt: ['tenders.spt'],
};

/** Each runtime with the checks it needs that did not pass (none: it can run here). */
function runtimeGaps(results: readonly CheckResult[]): readonly { runtime: Runtime; missing: string[] }[] {
  const byName = new Map(results.map((r) => [r.name, r]));
  return (['hvt', 'spt'] as const).map((runtime) => ({
    runtime,
    missing: RUNTIME_NEEDS[runtime]
      .filter((name) => byName.get(name)?.status !== 'PASS')
      .map((name) => `${name} ${byName.get(name)?.status ?? 'not run'}`),
  }));
}

/**
 * The runtimes this node hosts: those configured, or with `runtimes = "auto"` every one whose
 * checks passed — decided once, at start, from the probe.
 */
export function hostedRuntimes(config: PetrelConfig, results: readonly CheckResult[]): readonly Runtime[] {
  if (config.runtimes !== 'auto') return config.runtimes;
  return runtimeGaps(results)
    .filter((gap) => gap.missing.length === 0)
    .map((gap) => gap.runtime);
}

/** `runtimes = "auto"`: which runtimes the probe allows, and why each other one is left out. */
export function runtimesCheck(results: readonly CheckResult[]): CheckResult {
  const gaps = runtimeGaps(results);
  const hosted = gaps.filter((gap) => gap.missing.length === 0).map((gap) => gap.runtime);
  const left = gaps
    .filter((gap) => gap.missing.length > 0)
    .map((gap) => `${gap.runtime} left out: ${gap.missing.join(', ')}`);
  const why = left.length === 0 ? '' : ` (${left.join('; ')})`;
  if (hosted.length > 0) return result('runtimes', passed(`auto: hosts ${hosted.join(', ')}${why}`), true);
  return result(
    'runtimes',
    failed(
      `auto: this host can run neither hvt nor spt unikernels${why}`,
      'see the kvm and tenders rows above; or set runtimes = "none" to only probe and report',
    ),
    true,
  );
}

// Preflight, like virt-host-validate: one result per check of the host and the configuration.
// Which checks are fatal is declared up front from the configuration (requiredChecks); a
// required check that fails aborts start-up with the capability named (fatalFailures).
//
// The longer checks live by subject: directories and sockets (preflight-files.ts), certificates
// (preflight-certs.ts), the jail (preflight-jail.ts), runtimes (preflight-runtimes.ts). This file
// declares what is fatal, checks the probe's report (KVM, tenders, network, bridges), runs the
// rest and formats the table.

import { holderProgram } from '../host/holder.js';
import { spawnerProgram } from '../host/spawner.js';
import { err, type PetrelError } from '../resources/errors.js';
import {
  type CapabilityName,
  type CapabilityReport,
  KVM_API_VERSION,
  type ProbeOptions,
  type ProbeProblem,
  probeHost,
  usableTender,
} from '../tender/probe.js';
import type { PetrelConfig } from './config.js';
import { tlsCheck, webCheck } from './preflight-certs.js';
import { checkDirectory, checkRunFree, checkSockets, checkStateFree } from './preflight-files.js';
import { jailChecks } from './preflight-jail.js';
import { type CheckResult, failed, type Outcome, passed, result } from './preflight-result.js';
import { runtimesCheck } from './preflight-runtimes.js';

export { SUN_PATH_MAX } from './preflight-files.js';
export type { CheckResult, CheckStatus } from './preflight-result.js';
export { hostedRuntimes } from './preflight-runtimes.js';

/**
 * The checks the configuration makes fatal. `--runtimes none` hosts nothing, so nothing is;
 * otherwise each runtime brings what it needs (hvt: kvm and an hvt tender of ABI 2; spt: an spt
 * tender of ABI 2), and every hosting node needs its directories, sockets, configured bridges (and taps
 * for them) and, when it listens, its TLS material.
 */
export function requiredChecks(config: PetrelConfig): ReadonlySet<string> {
  const required = new Set<string>();
  if (config.runtimes === 'auto') required.add('runtimes');
  else if (config.runtimes.length === 0) return required;
  else {
    if (config.runtimes.includes('hvt')) required.add('kvm').add('tenders.hvt');
    if (config.runtimes.includes('spt')) required.add('tenders.spt');
  }
  required.add('spawner').add('holder').add('stateDir').add('runDir').add('sockets');
  for (const bridge of config.bridges) required.add(`bridges.${bridge}`);
  if (config.bridges.length > 0) required.add('tun').add('netAdmin');
  if (config.tlsListen !== null) required.add('tls');
  if (config.webListen !== null) required.add('web');
  if (config.jail) required.add('jail').add('jail.ids');
  return required;
}

/** How the probe is run for this configuration. */
export function probeOptions(config: PetrelConfig, overrides: Partial<ProbeOptions> = {}): ProbeOptions {
  return {
    stateDir: config.stateDir,
    kvmDevice: config.kvmDevice,
    tenders: { hvt: config.tenderHvt, spt: config.tenderSpt },
    tapPrefix: config.tapPrefix,
    ...overrides,
  };
}

function fromReport(
  report: CapabilityReport,
  name: CapabilityName,
  present: string | null,
  fallback: ProbeProblem,
): Outcome {
  if (present !== null) return passed(present);
  const problem = report.problems[name] ?? fallback;
  return failed(problem.detail, problem.hint);
}

export interface PreflightOptions {
  /** For certificate validity. Default now. */
  readonly now?: Date;
  /** The uid directories must belong to. Default this process'. */
  readonly uid?: number;
}

/** Runs every check against a probe report; creates missing state and run directories (0700). */
export async function preflight(
  config: PetrelConfig,
  report: CapabilityReport,
  options: PreflightOptions = {},
): Promise<readonly CheckResult[]> {
  const required = requiredChecks(config);
  const check = (name: string, outcome: Outcome): CheckResult => result(name, outcome, required.has(name));
  const results: CheckResult[] = [];

  results.push(
    check(
      'kvm',
      fromReport(
        report,
        'kvm',
        report.kvm ? `${config.kvmDevice} opened, KVM API version ${KVM_API_VERSION}` : null,
        {
          detail: `${config.kvmDevice} cannot be used`,
          hint: 'is the kvm module loaded? is this a VM without nested virtualisation?',
        },
      ),
    ),
  );
  // A limit of this host's KVM, not a missing capability: never fatal, only said when known.
  if (report.hvtSse !== undefined) {
    const problem = report.problems.hvtSse;
    results.push(
      result(
        'hvtSse',
        report.hvtSse || problem === undefined
          ? passed('an hvt guest ran an SSE instruction')
          : failed(problem.detail, problem.hint),
        false,
      ),
    );
  }
  for (const kind of ['hvt', 'spt'] as const) {
    const tender = usableTender(report, kind);
    results.push(
      check(
        `tenders.${kind}`,
        fromReport(
          report,
          `tenders.${kind}`,
          tender === null
            ? null
            : `${tender.path}: ${tender.version}, ABI version ${tender.abi}: runs solo5 ${kind} unikernels`,
          {
            detail: `no ${kind} tender found`,
            hint: `install solo5-${kind} or point --tender-${kind} at one`,
          },
        ),
      ),
    );
  }
  results.push(
    check(
      'tun',
      fromReport(report, 'tun', report.tun ? '/dev/net/tun opened' : null, {
        detail: '/dev/net/tun cannot be opened',
        hint: 'load the tun module (modprobe tun)',
      }),
    ),
    check(
      'netAdmin',
      fromReport(
        report,
        'netAdmin',
        report.netAdmin ? `taps can be created and deleted (prefix ${config.tapPrefix})` : null,
        {
          detail: 'taps cannot be created',
          hint: 'petreld needs CAP_NET_ADMIN and /dev/net/tun to create taps',
        },
      ),
    ),
  );
  results.push(...bridgeChecks(config, report, required));
  results.push(
    check(
      'cpus',
      report.cpus > 0 ? passed(`${report.cpus} online`) : failed('no CPU count found', 'check /proc'),
    ),
    check(
      'memoryMiB',
      report.memoryMiB > 0
        ? passed(`${report.memoryMiB} MiB`)
        : failed('no memory size found', 'check /proc'),
    ),
    check(
      'blockStorageMiB',
      fromReport(
        report,
        'blockStorageMiB',
        report.blockStorageMiB > 0 ? `${report.blockStorageMiB} MiB` : null,
        {
          detail: 'the file system of the block directory has no space',
          hint: 'choose another --state-dir',
        },
      ),
    ),
  );
  const spawner = spawnerProgram();
  results.push(
    check(
      'spawner',
      spawner.ok
        ? passed(`${spawner.value} (starts host commands)`)
        : failed(spawner.error.message, 'build the native parts: make -C native'),
    ),
  );
  const holder = holderProgram();
  results.push(
    check(
      'holder',
      holder.ok
        ? passed(`${holder.value} (the tenders' parent, which outlives petreld)`)
        : failed(holder.error.message, 'build the native parts: make -C native'),
    ),
  );
  const uid = options.uid ?? process.getuid?.() ?? 0;
  results.push(check('stateDir', await checkDirectory('stateDir', config.stateDir, uid)));
  results.push(check('runDir', await checkDirectory('runDir', config.runDir, uid)));
  results.push(result('stateFree', await checkStateFree(config), false));
  results.push(result('runFree', await checkRunFree(config), false));
  results.push(check('sockets', checkSockets(config.runDir)));
  results.push(await tlsCheck(config, required.has('tls'), options.now ?? new Date()));
  results.push(await webCheck(config, required.has('web'), options.now ?? new Date()));
  results.push(...(await jailChecks(config, required)));
  if (config.runtimes === 'auto') results.push(runtimesCheck(results));
  return results;
}

function bridgeChecks(
  config: PetrelConfig,
  report: CapabilityReport,
  required: ReadonlySet<string>,
): CheckResult[] {
  const listFailure = report.problems.bridges;
  if (config.bridges.length === 0) {
    const found = report.bridges.map((b) => `${b.name} (${b.up ? 'up' : 'down'})`).join(', ');
    const outcome =
      listFailure === undefined
        ? passed(found === '' ? 'none found, none configured' : `found ${found}`)
        : failed(listFailure.detail, listFailure.hint);
    return [result('bridges', outcome, false)];
  }
  return config.bridges.map((name) => {
    const key = `bridges.${name}`;
    const fatal = required.has(key);
    const bridge = report.bridges.find((b) => b.name === name);
    if (bridge === undefined) {
      // Albatross' text for a missing bridge (semantics §5.3).
      const detail =
        listFailure === undefined
          ? `interface ${name} does not exist`
          : `interface ${name} cannot be looked up: ${listFailure.detail}`;
      return result(
        key,
        failed(detail, `create the bridge (ip link add ${name} type bridge) or remove it from bridges`),
        fatal,
      );
    }
    if (!bridge.up) {
      return result(
        key,
        failed(`bridge ${name} exists but is down`, `ip link set dev ${name} up`),
        fatal,
        true,
      );
    }
    return result(key, passed(`bridge ${name} exists and is up`), fatal);
  });
}

/** Each fatal failure as `<name>: <detail> (<fix>)`, e.g. `kvm: /dev/kvm cannot be opened: … (is the kvm module loaded? …)`. */
export function fatalFailures(results: readonly CheckResult[]): readonly string[] {
  return results
    .filter((r) => r.fatal && r.status === 'FAIL')
    .map((r) => (r.fix === null ? `${r.name}: ${r.detail}` : `${r.name}: ${r.detail} (${r.fix})`));
}

/** The error start-up aborts with, or null when nothing fatal failed. */
export function preflightError(results: readonly CheckResult[]): PetrelError<'E_PREFLIGHT'> | null {
  const failures = fatalFailures(results);
  if (failures.length === 0) return null;
  return err('E_PREFLIGHT', `preflight failed:\n  ${failures.join('\n  ')}`, { failures }).error;
}

/** The `petreld check` table: one line per check, its fix hint below a FAIL or WARN. */
export function formatChecks(results: readonly CheckResult[]): string {
  const width = Math.max(5, ...results.map((r) => r.name.length));
  // Details can span lines (a tender's --version output): continuation lines stay in the column.
  const indent = ' '.repeat(width + 20);
  const lines = [`${'CHECK'.padEnd(width)}  STATUS  REQUIRED  DETAIL`];
  for (const r of results) {
    const detail = r.detail.replace(/\n/gu, `\n${indent}`);
    lines.push(
      `${r.name.padEnd(width)}  ${r.status.padEnd(6)}  ${(r.fatal ? 'yes' : 'no').padEnd(8)}  ${detail}`,
    );
    if (r.fix !== null) lines.push(`${indent}fix: ${r.fix}`);
  }
  return `${lines.join('\n')}\n`;
}

/** Probe, then preflight: what `petreld` start and `petreld check` run. */
export async function checkHost(
  config: PetrelConfig,
  options: PreflightOptions & { readonly probe?: Partial<ProbeOptions> } = {},
): Promise<{ readonly report: CapabilityReport; readonly results: readonly CheckResult[] }> {
  const report = await probeHost(probeOptions(config, options.probe));
  return { report, results: await preflight(config, report, options) };
}

// Preflight checks of the jail: petrel-jail can jail itself here, the jail id range belongs to
// nobody else (users, groups, strangers' processes), and which cgroups the jails get.

import { runCommand } from '../host/command.js';
import {
  accountsInRange,
  discoverCgroups,
  jailProgram,
  type ProcessInRange,
  processesInRange,
} from '../host/jail.js';
import { claimHolder, claimId, DEFAULT_CLAIMS_DIR, releaseClaim } from '../host/jail-claims.js';
import { checkPidRecord, readPidRecords } from '../host/pidrecord.js';
import { cgroupLimits, printIdRange } from '../resources/jail.js';
import type { PetrelConfig } from './config.js';
import { type CheckResult, failed, type Outcome, passed, result } from './preflight-result.js';

/** How long a process in the jail range has to go before it counts as a stranger's. */
const STRANGER_GRACE_MS = 3000;

/**
 * The processes `scan` finds now that it still finds, the same ones (pid and start time), after
 * up to `graceMs`: those that went meanwhile were dying. Returns at once when none are found.
 */
async function persisting(scan: () => ProcessInRange[], graceMs: number): Promise<ProcessInRange[]> {
  const key = (p: ProcessInRange): string => `${p.pid}:${p.startTime}:${p.uid}`;
  let left = scan();
  const until = Date.now() + graceMs;
  while (left.length > 0 && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const now = new Set(scan().map(key));
    left = left.filter((p) => now.has(key(p)));
  }
  return left;
}

/**
 * The jail (docs/threat-model.md). Off: a warning naming it. On: petrel-jail runs itself jailed (namespaces,
 * private root, id change, filter: all of it on this host), the id range belongs to no user,
 * group, subordinate range or process but the tenders recorded in `<run-dir>/tenders` (or
 * claimed by another petreld's holder on this host), and
 * which cgroups the jails get (never fatal: without them the resource limits still hold).
 */
export async function jailChecks(
  config: PetrelConfig,
  required: ReadonlySet<string>,
): Promise<CheckResult[]> {
  if (!config.jail) {
    return [
      result(
        'jail',
        failed(
          'tenders run unjailed: as root, with every capability, in the host namespaces (jail = false, --no-jail)',
          'remove jail = false / --no-jail (docs/threat-model.md)',
        ),
        false,
      ),
    ];
  }
  const results: CheckResult[] = [];
  const check = (name: string, outcome: Outcome) => result(name, outcome, required.has(name));
  const program = jailProgram();
  if (!program.ok) {
    results.push(check('jail', failed(program.error.message, 'build the native parts: make -C native')));
  } else {
    const jailer = program.value;
    // The probe's id is claimed for its few milliseconds, so that another petreld's preflight
    // does not take it for a stranger's process.
    let id = config.jailIds.last;
    while (id > config.jailIds.first && !claimId(DEFAULT_CLAIMS_DIR, id, process.pid)) id--;
    const probe = await runCommand(jailer, ['--id', String(id), '--ro', jailer, '--', jailer, '--probe'], {
      label: 'petrel-jail --probe',
      timeoutMs: 10_000,
    });
    releaseClaim(DEFAULT_CLAIMS_DIR, id);
    results.push(
      check(
        'jail',
        probe.ok
          ? passed(`${jailer}: ${probe.value.stdout.trim()} in its own mount, IPC and UTS namespaces`)
          : failed(
              `a jail cannot be made here: ${probe.error.message}`,
              'petreld needs root (CAP_SYS_ADMIN, CAP_SETUID, CAP_MKNOD) and mount, IPC and UTS namespaces; or set jail = false',
            ),
      ),
    );
  }
  const range = printIdRange(config.jailIds);
  const accounts = await accountsInRange(config.jailIds);
  const records = readPidRecords(config.runDir);
  const recorded = new Set(
    (records.ok ? records.value.records : [])
      .filter((record) => {
        const now = checkPidRecord(record);
        return now.ok && now.value === 'alive';
      })
      .map((record) => record.pid),
  );
  // Tenders of this run directory, and those of another petreld of this host whose holder has
  // claimed the id (src/host/jail-claims.ts), are no strangers; nor is a child of a petrel-holder,
  // whatever its claim says at that instant. A claim is written before its tender takes the id and
  // removed once it is dead, so what is left is a stranger, or a tender dying: one whose holder
  // was killed (its claim went with the holder) is killed in turn by its parent-death signal,
  // tears its guest's memory down, and stays a zombie until init reaps it (seen: 1.6 s under a
  // container's init). A zombie runs nothing; a live process still there, the same one, after
  // the grace is a stranger.
  const unclaimed = (): ProcessInRange[] =>
    processesInRange(config.jailIds).filter(
      (p) =>
        !p.zombie &&
        !p.underHolder &&
        !recorded.has(p.pid) &&
        claimHolder(DEFAULT_CLAIMS_DIR, p.uid) === null,
    );
  const strangers = await persisting(unclaimed, STRANGER_GRACE_MS);
  const users = accounts.ok ? accounts.value : [accounts.error.message];
  const problems = [
    ...users,
    ...strangers.slice(0, 5).map((p) => `process ${p.pid} (${p.comm}, parent ${p.ppid}) runs as id ${p.uid}`),
    ...(strangers.length > 5 ? [`and ${strangers.length - 5} more processes`] : []),
  ];
  results.push(
    check(
      'jail.ids',
      problems.length === 0
        ? passed(`${range}: no user, group, subordinate range or unrecorded process uses them`)
        : failed(`the jail ids ${range} are in use: ${problems.join('; ')}`, 'choose another jailIds range'),
    ),
  );
  const { layout } = await discoverCgroups();
  const controllers = cgroupLimits(layout);
  results.push(
    result(
      'jail.cgroups',
      controllers.length > 0
        ? passed(`cgroup v${layout.version}: ${controllers.join(', ')} per tender`)
        : failed(
            `no cgroups for tenders (${layout.version === 0 ? layout.why : 'none usable'}): their resource limits still hold`,
            'mount the memory, pids and cpuset controllers (v1), or give petreld a delegated cgroup (v2, Delegate=yes)',
          ),
      false,
    ),
  );
  return results;
}

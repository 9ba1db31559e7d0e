// Preflight, like virt-host-validate: one result per check of the host and the configuration.
// Which checks are fatal is declared up front from the configuration (requiredChecks); a
// required check that fails aborts start-up with the capability named (fatalFailures).

import { createPrivateKey, X509Certificate } from 'node:crypto';
import { lstat, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { runCommand } from '../host/command.js';
import { holderProgram } from '../host/holder.js';
import {
  accountsInRange,
  discoverCgroups,
  jailProgram,
  type ProcessInRange,
  processesInRange,
} from '../host/jail.js';
import { claimHolder, claimId, DEFAULT_CLAIMS_DIR, releaseClaim } from '../host/jail-claims.js';
import { checkPidRecord, readPidRecords } from '../host/pidrecord.js';
import { fileSystemFree, isNoSpace, RUN_DIR_NEEDED } from '../host/space.js';
import { spawnerProgram } from '../host/spawner.js';
import { err, type PetrelError } from '../resources/errors.js';
import { cgroupLimits, printIdRange } from '../resources/jail.js';
import {
  type CapabilityName,
  type CapabilityReport,
  KVM_API_VERSION,
  type ProbeOptions,
  type ProbeProblem,
  probeHost,
  usableTender,
} from '../tender/probe.js';
import { keyPath, type PetrelConfig, type Runtime, socketPaths } from './config.js';

export type CheckStatus = 'PASS' | 'FAIL' | 'WARN';

export interface CheckResult {
  /** The capability or setting checked: `kvm`, `tenders.hvt`, `bridges.br0`, `runDir`, `sockets`, `tls`, … */
  readonly name: string;
  /** PASS; FAIL only for a required check; WARN for anything else that is missing or odd. */
  readonly status: CheckStatus;
  readonly detail: string;
  /** What to do about a FAIL or WARN; null on PASS. */
  readonly fix: string | null;
  /** Required by the configuration: failing it aborts start-up. */
  readonly fatal: boolean;
}

/** sun_path holds 108 bytes including the terminating NUL. */
export const SUN_PATH_MAX = 107;
/** A certificate that expires within this is reported as WARN. */
const EXPIRY_WARNING_MS = 30 * 24 * 3600 * 1000;

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

type Outcome = { readonly ok: true; readonly detail: string } | ({ readonly ok: false } & ProbeProblem);
const passed = (detail: string): Outcome => ({ ok: true, detail });
const failed = (detail: string, hint: string): Outcome => ({ ok: false, detail, hint });

function result(name: string, outcome: Outcome, fatal: boolean, warnOnly = false): CheckResult {
  if (outcome.ok) return { name, status: 'PASS', detail: outcome.detail, fix: null, fatal };
  const status = fatal && !warnOnly ? 'FAIL' : 'WARN';
  return { name, status, detail: outcome.detail, fix: outcome.hint, fatal };
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

/** Owned by us, a real directory (not a symlink), writable; created 0700 when missing. */
async function checkDirectory(key: 'stateDir' | 'runDir', dir: string, uid: number): Promise<Outcome> {
  const flag = `--${key === 'stateDir' ? 'state-dir' : 'run-dir'}`;
  let created = false;
  let st = await lstat(dir).catch((error: NodeJS.ErrnoException) => error);
  if (st instanceof Error && st.code === 'ENOENT') {
    try {
      await mkdir(dir, { recursive: true, mode: 0o700 });
      created = true;
    } catch (error) {
      return failed(
        `${dir} cannot be created: ${(error as Error).message}`,
        `create it or choose another ${flag}`,
      );
    }
    st = await lstat(dir).catch((error: NodeJS.ErrnoException) => error);
  }
  if (st instanceof Error) return failed(`${dir}: ${st.message}`, `choose another ${flag}`);
  if (st.isSymbolicLink()) return failed(`${dir} is a symbolic link`, `give the real directory as ${flag}`);
  if (!st.isDirectory()) return failed(`${dir} is not a directory`, `choose another ${flag}`);
  if (st.uid !== uid) {
    return failed(`${dir} is owned by uid ${st.uid}, petreld runs as uid ${uid}`, `chown ${uid} ${dir}`);
  }
  // Really write a file: root passes every permission check, but not a read-only mount or a full
  // file system (no inodes left).
  const probe = path.join(dir, `.petrel-preflight-${process.pid}`);
  let full = false;
  try {
    await writeFile(probe, '', { mode: 0o600 });
  } catch (error) {
    // Writable but full: petreld starts all the same (issue 23); the free-space check says it.
    if (isNoSpace(error)) full = true;
    else
      return failed(
        `${dir} is not writable: ${(error as Error).message}`,
        `make it writable or choose another ${flag}`,
      );
  } finally {
    await rm(probe, { force: true });
  }
  return passed(
    `${dir}${created ? ' created (mode 0700),' : ''} owned by uid ${uid}, writable${full ? ' (but full)' : ''}`,
  );
}

/** The state directory's free space against `stateMinFree`: a WARN below it, never fatal. */
async function checkStateFree(config: PetrelConfig): Promise<Outcome> {
  const free = await fileSystemFree(config.stateDir).catch(() => null);
  if (free === null) return passed('free space not known');
  if (free >= config.stateMinFree) return passed(`${free} bytes free in ${config.stateDir}`);
  return failed(
    `${free} bytes free in ${config.stateDir}, below stateMinFree (${config.stateMinFree}): creates and block devices are refused`,
    'free space in the state directory (destroy unikernels, remove block devices) or give it a larger file system',
  );
}

/**
 * The run directory's free space (issue 23): a WARN, never fatal, when a create could not have
 * its FIFO and PID record there, so petreld still starts and serves the guests it adopts.
 */
async function checkRunFree(config: PetrelConfig): Promise<Outcome> {
  const free = await fileSystemFree(config.runDir).catch(() => null);
  if (free === null) return passed('free space not known');
  if (free >= RUN_DIR_NEEDED) return passed(`${free} bytes free in ${config.runDir}`);
  return failed(
    `${free} bytes free in the run directory ${config.runDir}, ${RUN_DIR_NEEDED} needed for a create: ` +
      'creates are refused, the boot canary is not run, node.json and PID records may not be written',
    'free space in the run directory (or give it a larger file system)',
  );
}

function checkSockets(runDir: string): Outcome {
  const longest = socketPaths(runDir).reduce((a, b) => (Buffer.byteLength(b) > Buffer.byteLength(a) ? b : a));
  const bytes = Buffer.byteLength(longest);
  if (bytes > SUN_PATH_MAX) {
    return failed(
      `${longest} is ${bytes} bytes, a unix socket path may have at most ${SUN_PATH_MAX}`,
      'choose a shorter --run-dir',
    );
  }
  return passed(`longest socket path ${longest} is ${bytes} bytes (at most ${SUN_PATH_MAX})`);
}

async function readPem(file: string, what: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    throw new Error(`${what} ${file} cannot be read: ${(error as NodeJS.ErrnoException).code ?? error}`);
  }
}

function parseCert(pem: string, file: string, what: string): X509Certificate {
  try {
    return new X509Certificate(pem);
  } catch (error) {
    throw new Error(`${what} ${file} is not a certificate: ${(error as Error).message}`);
  }
}

function validity(cert: X509Certificate, file: string, what: string, now: Date): string | null {
  const from = Date.parse(cert.validFrom);
  const to = Date.parse(cert.validTo);
  if (now.getTime() < from) throw new Error(`${what} ${file} is not valid before ${cert.validFrom}`);
  if (now.getTime() > to) throw new Error(`${what} ${file} expired on ${cert.validTo}`);
  return to - now.getTime() < EXPIRY_WARNING_MS ? `${what} ${file} expires on ${cert.validTo}` : null;
}

/** CA, certificate and key load; the key matches; the CA signed the certificate; none expired. */
async function checkTls(config: PetrelConfig, now: Date): Promise<Outcome & { warning?: string }> {
  const { tlsCa, tlsCert, tlsKey } = config;
  if (tlsCa === null || tlsCert === null || tlsKey === null) {
    const missing = (['tlsCa', 'tlsCert', 'tlsKey'] as const)
      .filter((key) => config[key] === null)
      .map(keyPath);
    return failed(`${missing.join(', ')} not configured`, 'set --tls-ca, --tls-cert and --tls-key');
  }
  return checkCertificate(
    { ca: tlsCa, cert: tlsCert, key: tlsKey },
    'check the files given as --tls-ca, --tls-cert and --tls-key',
    now,
  );
}

/** The web API's certificate (`webCert`, `webKey`): as the TLS endpoint's, and one a browser takes. */
async function checkWeb(config: PetrelConfig, now: Date): Promise<Outcome & { warning?: string }> {
  const { tlsCa, webCert, webKey } = config;
  if (tlsCa === null || webCert === null || webKey === null) {
    const missing = (['tlsCa', 'webCert', 'webKey'] as const)
      .filter((key) => config[key] === null)
      .map(keyPath);
    return failed(`${missing.join(', ')} not configured`, 'set --tls-ca, --web-cert and --web-key');
  }
  return checkCertificate(
    { ca: tlsCa, cert: webCert, key: webKey },
    'petrel ca web-cert NAME|ADDRESS... makes one browsers take',
    now,
    (cert) => {
      // Browsers ignore the CN, and Chromium refuses an Ed25519 server certificate.
      if (cert.subjectAltName === undefined)
        return `certificate ${webCert} has no subjectAltName, which browsers require`;
      const type = cert.publicKey.asymmetricKeyType;
      if (type !== 'ec' && type !== 'rsa')
        return `certificate ${webCert} has an ${type} key, which browsers refuse`;
      return null;
    },
  );
}

/** A certificate and key signed by the CA, valid now; `more` adds a check of its own. */
async function checkCertificate(
  files: { readonly ca: string; readonly cert: string; readonly key: string },
  hint: string,
  now: Date,
  more: (cert: X509Certificate) => string | null = () => null,
): Promise<Outcome & { warning?: string }> {
  try {
    const ca = parseCert(await readPem(files.ca, 'CA'), files.ca, 'CA');
    const cert = parseCert(await readPem(files.cert, 'certificate'), files.cert, 'certificate');
    const keyPem = await readPem(files.key, 'key');
    let key: ReturnType<typeof createPrivateKey>;
    try {
      key = createPrivateKey(keyPem);
    } catch {
      throw new Error(`key ${files.key} is not a private key`);
    }
    if (!ca.ca)
      throw new Error(`CA ${files.ca} is not a CA certificate (basicConstraints CA:FALSE or missing)`);
    if (!cert.checkPrivateKey(key))
      throw new Error(`key ${files.key} does not match certificate ${files.cert}`);
    if (!cert.verify(ca.publicKey))
      throw new Error(`certificate ${files.cert} is not signed by CA ${files.ca}`);
    const refused = more(cert);
    if (refused !== null) throw new Error(refused);
    const warnings = [
      validity(ca, files.ca, 'CA', now),
      validity(cert, files.cert, 'certificate', now),
    ].filter((w): w is string => w !== null);
    const detail = `certificate ${cert.subject.replace(/\n/gu, ', ')} signed by the CA, key matches, valid until ${cert.validTo}`;
    return warnings.length > 0 ? { ...passed(detail), warning: warnings.join('; ') } : passed(detail);
  } catch (error) {
    return failed((error as Error).message, hint);
  }
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
function runtimesCheck(results: readonly CheckResult[]): CheckResult {
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

/**
 * The jail (issue 22). Off: a warning naming it. On: petrel-jail runs itself jailed (namespaces,
 * private root, id change, filter: all of it on this host), the id range belongs to no user,
 * group, subordinate range or process but the tenders recorded in `<run-dir>/tenders` (or
 * claimed by another petreld's holder on this host), and
 * which cgroups the jails get (never fatal: without them the resource limits still hold).
 */
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

async function jailChecks(config: PetrelConfig, required: ReadonlySet<string>): Promise<CheckResult[]> {
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

async function tlsCheck(config: PetrelConfig, fatal: boolean, now: Date): Promise<CheckResult> {
  if (
    config.tlsListen === null &&
    config.tlsCa === null &&
    config.tlsCert === null &&
    config.tlsKey === null
  ) {
    return result('tls', passed('not configured (no --tls-listen)'), fatal);
  }
  const outcome = await checkTls(config, now);
  if (outcome.ok && outcome.warning !== undefined) {
    return result('tls', failed(outcome.warning, 'renew the certificate'), fatal, true);
  }
  return result('tls', outcome, fatal);
}

async function webCheck(config: PetrelConfig, fatal: boolean, now: Date): Promise<CheckResult> {
  if (config.webListen === null && config.webCert === null && config.webKey === null) {
    return result('web', passed('not configured (no --web-listen)'), fatal);
  }
  const outcome = await checkWeb(config, now);
  if (outcome.ok && outcome.warning !== undefined) {
    return result('web', failed(outcome.warning, 'renew the certificate (petrel ca web-cert)'), fatal, true);
  }
  return result('web', outcome, fatal);
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

// What this host can really do, found by trying (open the KVM device, run each tender's
// `--version`, open /dev/net/tun, make a tap), never read from configuration. Each probe
// returns a fresh report: a capability lost since the last one is simply absent (false).

import { constants as fsConstants } from 'node:fs';
import { lstat, open, statfs } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { getSystemErrorMap } from 'node:util';
import { runCommand } from '../host/command.js';
import { listLinks, type NetOptions, runIp } from '../host/ip.js';
import { blockDir } from '../host/paths.js';
import { checkTapPrefix, DEFAULT_TAP_PREFIX, removeTap } from '../host/tap.js';
import type {
  BridgeCapability,
  HostCapabilities,
  TenderCapability,
  TenderKind,
} from '../resources/capabilities.js';
import { ABI_VERSION } from './abi.js';
import { bundledHvtPath, findTender } from './lookup.js';
import { bundledSseGuest, probeSse, type SseGuest } from './sse-probe.js';
import { runTenderVersion, type TenderVersion } from './version.js';

/** The KVM API version every kernel since 2.6.22 reports and solo5-hvt requires (solo5.md §1.13). */
export const KVM_API_VERSION = 12;

export type { BridgeCapability, TenderCapability } from '../resources/capabilities.js';

/** The capabilities a report can say something about; preflight names its checks after them. */
export type CapabilityName =
  | 'kvm'
  | 'hvtSse'
  | 'tenders.hvt'
  | 'tenders.spt'
  | 'tun'
  | 'bridges'
  | 'cpus'
  | 'memoryMiB'
  | 'blockStorageMiB'
  | 'netAdmin';

/** Why a capability is absent or unusable, and what an operator can do about it. */
export interface ProbeProblem {
  readonly detail: string;
  readonly hint: string;
}

/** One probe of the host: what the fleet registry stores (src/resources/capabilities.ts), and more. */
export interface CapabilityReport extends HostCapabilities {
  /** When the probe started, ISO 8601. */
  readonly probedAt: string;
  /**
   * An hvt guest ran an SSE instruction (true) or was killed by one (false: a nested software
   * KVM, kvm-pvm). Absent when not tried (no KVM, no bundled tender) or when the run told nothing.
   */
  readonly hvtSse?: boolean;
  /** For each capability found absent or unusable: why. Empty when everything was there. */
  readonly problems: Readonly<Partial<Record<CapabilityName, ProbeProblem>>>;
}

export interface ProbeOptions extends NetOptions {
  /** The state directory: tenders may be installed there, block devices live under it. */
  readonly stateDir: string;
  /** Default `/dev/kvm`. */
  readonly kvmDevice?: string;
  /** Default `/dev/net/tun`. */
  readonly tunDevice?: string;
  /** `--tender-hvt` / `--tender-spt`: when given, the only candidate for that kind. */
  readonly tenders?: { readonly hvt?: string | null; readonly spt?: string | null };
  /** Search path for tenders. Default `process.env.PATH`. */
  readonly searchPath?: string;
  /** The bundled hvt tender; null for none. Default `native/build/petrel-hvt` of this package. */
  readonly bundledHvt?: string | null;
  /** The bundled spt tender; null for none. Default `native/build/petrel-spt` of this package. */
  readonly bundledSpt?: string | null;
  /**
   * The guest that tries one SSE instruction and the tender that boots it, once KVM answered.
   * Default `sse.hvt` beside the bundled hvt tender; none when `bundledHvt` is null.
   */
  readonly sseGuest?: SseGuest | null;
  /** The kvm-probe helper. Default `native/build/kvm-probe` of this package. */
  readonly kvmProbe?: string | null;
  /** Tap prefix of this daemon; the probe tap is `<prefix>probe`, cut to fit 15 bytes. Default `ptap`. */
  readonly tapPrefix?: string;
  /** Deadline for each helper and `--version` run. Default 5 000 ms. */
  readonly timeoutMs?: number;
  readonly now?: () => Date;
}

const MIB = 1024 * 1024;
const DEFAULT_TIMEOUT_MS = 5_000;

/** `native/build/kvm-probe` beside the bundled tender, or null outside a package. */
export function bundledKvmProbePath(): string | null {
  const hvt = bundledHvtPath();
  return hvt === null ? null : path.join(path.dirname(hvt), 'kvm-probe');
}

/** The tap name the netAdmin probe uses: never `<prefix><digits>`, so never one of the VMs' taps. */
export function probeTapName(prefix: string): string {
  return `${prefix}${'probe'.slice(0, Math.max(1, 15 - Buffer.byteLength(prefix)))}`;
}

type Found<T> = { readonly value: T; readonly problem?: ProbeProblem };

const KVM_HINT = 'is the kvm module loaded? is this a VM without nested virtualisation?';

function kvmHint(errnoName: string | undefined): string {
  switch (errnoName) {
    case 'EACCES':
    case 'EPERM':
      return 'run petreld as root or in the group owning the device; a device on a file system mounted nodev cannot be opened';
    case 'ENXIO':
    case 'ENODEV':
      return `the device node exists but no KVM driver answers: ${KVM_HINT}`;
    default:
      return KVM_HINT;
  }
}

async function probeKvm(device: string, helper: string | null, timeoutMs: number): Promise<Found<boolean>> {
  if (helper === null || !(await exists(helper))) {
    return {
      value: false,
      problem: {
        detail: `${device} was not probed: the kvm-probe helper ${helper ?? '(no package directory)'} is missing`,
        hint: 'build it with `make -C native`',
      },
    };
  }
  const run = await runCommand(helper, [device], { timeoutMs });
  if (run.ok) {
    const version = /^api (-?\d+)$/u.exec(run.value.stdout.trim())?.[1];
    if (version !== undefined && Number(version) === KVM_API_VERSION) return { value: true };
    return {
      value: false,
      problem: {
        detail: `${device} reports KVM API version ${version ?? run.value.stdout.trim()}, solo5 needs ${KVM_API_VERSION}`,
        hint: 'use a kernel with the standard KVM API',
      },
    };
  }
  const stderr = run.error.details?.stderr;
  const line = /^(open|ioctl) (\d+) (.*)$/u.exec(typeof stderr === 'string' ? stderr.trim() : '');
  if (line === null) {
    return {
      value: false,
      problem: { detail: `${device} could not be probed: ${run.error.message}`, hint: KVM_HINT },
    };
  }
  const [, step, errno, text] = line;
  const errnoName = getSystemErrorMap().get(-Number(errno))?.[0];
  if (step === 'open') {
    return {
      value: false,
      problem: { detail: `${device} cannot be opened: ${text}`, hint: kvmHint(errnoName) },
    };
  }
  return {
    value: false,
    problem: {
      detail: `${device} does not answer KVM_GET_API_VERSION: ${text}`,
      hint: 'is --kvm-device really a KVM device?',
    },
  };
}

async function exists(file: string): Promise<boolean> {
  try {
    await lstat(file);
    return true;
  } catch {
    return false;
  }
}

/** The strerror-like text of a Node file-system error (`No such file or directory`). */
function errorText(error: unknown): string {
  const errno = (error as NodeJS.ErrnoException).errno;
  const text = errno === undefined ? undefined : getSystemErrorMap().get(errno)?.[1];
  if (text === undefined) return error instanceof Error ? error.message : String(error);
  return `${text.charAt(0).toUpperCase()}${text.slice(1)}`;
}

async function probeTun(device: string): Promise<Found<boolean>> {
  try {
    const handle = await open(device, fsConstants.O_RDWR | fsConstants.O_NONBLOCK);
    await handle.close();
    return { value: true };
  } catch (error) {
    return {
      value: false,
      problem: {
        detail: `${device} cannot be opened: ${errorText(error)}`,
        hint: 'load the tun module (modprobe tun) and run petreld as root',
      },
    };
  }
}

/** The listed form of a tender; null when its output has no `ABI version N` line at all. */
function tenderCapability(kind: TenderKind, file: string, version: TenderVersion): TenderCapability | null {
  if (version.abiVersion === null) return null;
  return { kind, path: file, version: version.banner, abi: version.abiVersion };
}

async function probeTender(kind: TenderKind, options: ProbeOptions): Promise<Found<TenderCapability | null>> {
  const abi = ABI_VERSION[kind];
  const explicit = options.tenders?.[kind] ?? undefined;
  const found = await findTender({
    kind,
    abiVersion: abi,
    stateDir: options.stateDir,
    ...(explicit === undefined ? {} : { explicit }),
    ...(options.searchPath === undefined ? {} : { searchPath: options.searchPath }),
    ...(options.bundledHvt === undefined ? {} : { bundledHvt: options.bundledHvt }),
    ...(options.bundledSpt === undefined ? {} : { bundledSpt: options.bundledSpt }),
  });
  const flag = `--tender-${kind}`;
  if (!found.ok) {
    return {
      value: null,
      problem: {
        detail: found.error.message,
        hint: `install solo5-${kind}, build the bundled tender with \`make -C native\`, or point ${flag} at one`,
      },
    };
  }
  const version = await runTenderVersion(found.value, { timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS });
  if (!version.ok) {
    return {
      value: null,
      problem: { detail: version.error.message, hint: `check that ${found.value} runs on this host` },
    };
  }
  const capability = tenderCapability(kind, found.value, version.value);
  if (capability !== null && capability.abi === abi) return { value: capability };
  return {
    value: capability,
    problem: {
      // Albatross' own text (semantics §8.1), prefixed with the tender that printed it.
      detail: `${found.value}: unexpected solo5 tender --version output, expected one line with 'ABI version ${abi}', got ${version.value.output}`,
      hint: `install a solo5-${kind} tender of ABI version ${abi}, or point ${flag} at one`,
    },
  };
}

async function probeBridges(options: NetOptions): Promise<Found<readonly BridgeCapability[]>> {
  const links = await listLinks(['type', 'bridge'], options);
  if (!links.ok) {
    return {
      value: [],
      problem: { detail: links.error.message, hint: 'install iproute2 (the `ip` command)' },
    };
  }
  const bridges = links.value
    .map((link) => ({ name: link.name, up: link.up }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { value: bridges };
}

/** Albatross discovers the size of the file system holding the block directory; before that directory
 * exists, the nearest existing ancestor is the file system it will be made on. */
async function probeBlockStorage(dir: string): Promise<Found<number>> {
  let target = path.resolve(dir);
  for (;;) {
    try {
      const fs = await statfs(target);
      return { value: Math.floor((fs.blocks * fs.bsize) / MIB) };
    } catch (error) {
      const parent = path.dirname(target);
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || parent === target) {
        return {
          value: 0,
          problem: {
            detail: `statfs ${target}: ${errorText(error)}`,
            hint: 'check the --state-dir file system',
          },
        };
      }
      target = parent;
    }
  }
}

/**
 * Creates the probe tap and deletes it again. When creating fails, a leftover from a probe that
 * died in between may be in the way: it is deleted and creation tried once more, so a crash never
 * makes this probe fail forever (and the common case costs two `ip` runs, not three).
 */
async function probeNetAdmin(prefix: string, options: NetOptions): Promise<Found<boolean>> {
  const hint = 'petreld needs CAP_NET_ADMIN and /dev/net/tun to create taps';
  const checked = checkTapPrefix(prefix);
  if (!checked.ok)
    return { value: false, problem: { detail: checked.error.message, hint: 'fix --tap-prefix' } };
  const tap = probeTapName(prefix);
  const add = () => runIp(['tuntap', 'add', 'dev', tap, 'mode', 'tap'], options);
  let added = await add();
  if (!added.ok && (await removeTap(tap, options)).ok) added = await add();
  if (!added.ok) return { value: false, problem: { detail: added.error.message, hint } };
  const removed = await removeTap(tap, options);
  if (!removed.ok) {
    return {
      value: false,
      problem: { detail: `created ${tap} but could not delete it: ${removed.error.message}`, hint },
    };
  }
  return { value: true };
}

function hostCpus(): number {
  const online = os.cpus().length;
  return online > 0 ? online : os.availableParallelism();
}

/** Probes everything at once; never rejects (a failed probe is an absent capability with a problem). */
export async function probeHost(options: ProbeOptions): Promise<CapabilityReport> {
  const probedAt = (options.now ?? (() => new Date()))().toISOString();
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const net: NetOptions = {
    ...(options.netns === undefined ? {} : { netns: options.netns }),
    ...(options.ipCommand === undefined ? {} : { ipCommand: options.ipCommand }),
  };
  const kvmProbe = probeKvm(
    options.kvmDevice ?? '/dev/kvm',
    options.kvmProbe === undefined ? bundledKvmProbePath() : options.kvmProbe,
    timeoutMs,
  );
  const sseGuest = defaultSseGuest(options);
  const [kvm, sse, hvt, spt, tun, bridges, block, netAdmin] = await Promise.all([
    kvmProbe,
    // Only once KVM answered: a few milliseconds, while the slower probes run.
    kvmProbe.then((k) => (k.value && sseGuest !== null ? probeSse(sseGuest, timeoutMs) : { value: null })),
    probeTender('hvt', options),
    probeTender('spt', options),
    probeTun(options.tunDevice ?? '/dev/net/tun'),
    probeBridges(net),
    probeBlockStorage(blockDir(options.stateDir)),
    probeNetAdmin(options.tapPrefix ?? DEFAULT_TAP_PREFIX, net),
  ]);
  const problems: Partial<Record<CapabilityName, ProbeProblem>> = {};
  const found = {
    kvm,
    hvtSse: sse,
    'tenders.hvt': hvt,
    'tenders.spt': spt,
    tun,
    bridges,
    blockStorageMiB: block,
    netAdmin,
  };
  for (const [name, result] of Object.entries(found) as [CapabilityName, Found<unknown>][]) {
    if (result.problem !== undefined) problems[name] = result.problem;
  }
  const cpus = hostCpus();
  const memoryMiB = Math.floor(os.totalmem() / MIB);
  const tenders = [hvt.value, spt.value].filter((t): t is TenderCapability => t !== null);
  return Object.freeze({
    probedAt,
    kvm: kvm.value,
    ...(sse.value === null ? {} : { hvtSse: sse.value }),
    tenders: Object.freeze(tenders.map((t) => Object.freeze(t))),
    tun: tun.value,
    bridges: Object.freeze(bridges.value.map((b) => Object.freeze(b))),
    cpus,
    memoryMiB,
    blockStorageMiB: block.value,
    netAdmin: netAdmin.value,
    problems: Object.freeze(problems),
  });
}

function defaultSseGuest(options: ProbeOptions): SseGuest | null {
  if (options.sseGuest !== undefined) return options.sseGuest;
  const tender = options.bundledHvt === undefined ? bundledHvtPath() : options.bundledHvt;
  return tender === null ? null : bundledSseGuest(tender);
}

/** The usable tender of `kind`: listed and speaking solo5's ABI version for it. */
export function usableTender(report: CapabilityReport, kind: TenderKind): TenderCapability | null {
  return report.tenders.find((t) => t.kind === kind && t.abi === ABI_VERSION[kind]) ?? null;
}

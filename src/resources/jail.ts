// The jail of a tender, decided without touching the host (docs/threat-model.md):
// the id range and which id each running unikernel holds, the limits of one launch, where its
// cgroups go (v1 and v2 alike, from /proc/self/mountinfo and /proc/self/cgroup), and the
// arguments of native/build/petrel-jail that put it all in place between fork and exec.

import { err, ok, type PetrelError, type Result } from './errors.js';

/** Ids (uid = gid) handed to jailed tenders, one per running unikernel. */
export interface IdRange {
  readonly first: number;
  readonly last: number;
}

/**
 * The default range: 65536-99999. Above 16 bits (so above nobody, 65534, and every allocator
 * of the 16-bit world: Debian's 60000-64999, systemd's DynamicUser 61184-65519), below
 * useradd's SUB_UID_MIN (100000, where /etc/subuid ranges for rootless containers start) and
 * systemd-nspawn's container ranges (from 524288): the block systemd's UIDS-GIDS documents as
 * unused. 34,464 ids: far more than a host runs unikernels.
 */
export const DEFAULT_ID_RANGE: IdRange = { first: 65_536, last: 99_999 };

export function parseIdRange(text: string): Result<IdRange, string> {
  const match = /^(\d{1,10})-(\d{1,10})$/u.exec(text.trim());
  const first = Number(match?.[1]);
  const last = Number(match?.[2]);
  if (match === null || !Number.isSafeInteger(first) || !Number.isSafeInteger(last))
    return { ok: false, error: 'expected a range of ids such as 65536-99999' };
  if (first < 1000 || last > 0x7fff_ffff || last < first)
    return { ok: false, error: 'expected FIRST-LAST with 1000 <= FIRST <= LAST <= 2147483647' };
  if (first <= 65_535 && last >= 65_534)
    return { ok: false, error: 'the range must not hold 65534 (nobody) or 65535 (the 16-bit -1)' };
  return ok({ first, last });
}

export const printIdRange = (range: IdRange): string => `${range.first}-${range.last}`;

export type JailIdError = PetrelError<'E_JAIL_IDS'>;

/**
 * Which ids of the range running unikernels hold. Ids are handed out in turn, the next free one
 * after the last given, not the lowest: a tender that just died may leave for a moment what
 * counts against its uid's RLIMIT_NPROC (its zombie, the kernel's KVM worker), and its id is not
 * given again before the whole range has gone round.
 */
export class JailIds {
  readonly #range: IdRange;
  readonly #taken = new Set<number>();
  #next: number;

  /**
   * `start` is where the rotation begins (clamped into the range): the shell picks it at random,
   * so a petreld started again does not hand out first the ids its predecessor's tenders have
   * just left.
   */
  constructor(range: IdRange, start: number = range.first) {
    this.#range = range;
    this.#next = this.contains(start) ? start : range.first;
  }

  get range(): IdRange {
    return this.#range;
  }

  get taken(): ReadonlySet<number> {
    return this.#taken;
  }

  /** The next free id for which `refused` is false (another petreld's, say), now taken. */
  take(refused: (id: number) => boolean = () => false): Result<number, JailIdError> {
    const { first, last } = this.#range;
    const size = last - first + 1;
    for (let i = 0; i < size && this.#taken.size < size; i++) {
      const id = first + ((this.#next - first + i) % size);
      if (this.#taken.has(id) || refused(id)) continue;
      this.#taken.add(id);
      this.#next = id === last ? first : id + 1;
      return ok(id);
    }
    return err('E_JAIL_IDS', `every id of the jail range ${printIdRange(this.#range)} is in use`);
  }

  /** An id a tender already holds (adopted at start-up): false when outside the range or taken. */
  hold(id: number): boolean {
    if (!this.contains(id) || this.#taken.has(id)) return false;
    this.#taken.add(id);
    return true;
  }

  free(id: number): void {
    this.#taken.delete(id);
  }

  contains(id: number): boolean {
    return Number.isSafeInteger(id) && id >= this.#range.first && id <= this.#range.last;
  }
}

/**
 * What the tender's own code and mappings need beyond guest memory, in address space: measured
 * under 4 MiB for petrel-hvt (glibc, KVM run area) and petrel-spt (static); the margin is for
 * solo5's tenders and the test doubles (a shell and a preloaded library).
 */
export const TENDER_OVERHEAD_MIB = 64;
const MIB = 1024 * 1024;

export interface JailLimits {
  /** RLIMIT_AS and the memory cgroup's limit, bytes. */
  readonly addressSpace: number;
  /**
   * RLIMIT_NPROC and pids.max: the tender itself, for hvt the kernel's per-VM KVM worker (made
   * inside the first KVM_RUN, which fails with EAGAIN when it does not fit), and room for what a
   * dead predecessor under the same id may still leave for a moment. Fork and clone are refused
   * by the jail's filter anyway; this bounds what a filter bypass could make.
   */
  readonly processes: number;
  readonly openFiles: number;
  /**
   * RLIMIT_FSIZE: the largest block device (a tender writes no other file on disk), at least
   * 1 MiB, which a memfd of a page or two (the tests' fake KVM run area) stays within.
   */
  readonly fileSize: number;
}

export function jailLimits(launch: {
  readonly kind: 'hvt' | 'spt';
  readonly memoryMiB: number;
  readonly nets: number;
  readonly blockSizesMiB: readonly number[];
}): JailLimits {
  return {
    addressSpace: (launch.memoryMiB + TENDER_OVERHEAD_MIB) * MIB,
    processes: launch.kind === 'hvt' ? 4 : 2,
    openFiles: 64 + launch.nets + launch.blockSizesMiB.length,
    fileSize: Math.max(1, ...launch.blockSizesMiB) * MIB,
  };
}

export type CgroupController = 'memory' | 'pids' | 'cpuset';
export const CGROUP_CONTROLLERS: readonly CgroupController[] = ['memory', 'pids', 'cpuset'];

/** Where the jails' cgroups go: one directory per controller (v1) or one for all (v2). */
export type CgroupLayout =
  | { readonly version: 1; readonly parents: Readonly<Partial<Record<CgroupController, string>>> }
  | {
      readonly version: 2;
      /** The cgroup that gives the controllers on: it holds no process of its own (see cgroupLayout). */
      readonly delegator: string;
      readonly parent: string;
      readonly controllers: readonly CgroupController[];
    }
  | { readonly version: 0; readonly why: string };

/** The directory under petreld's own cgroup that holds one cgroup per jail id. */
export const JAIL_CGROUP = 'petrel-tenders';
/**
 * cgroup v2: the leaf petreld runs in below its delegated cgroup, as systemd ≥ 254 puts it with
 * `DelegateSubgroup=petreld` (the package's unit says so).
 */
export const DAEMON_SUBGROUP = 'petreld';

interface Mount {
  /** The directory of the hierarchy mounted here (field 4: `/` unless a subtree is mounted). */
  readonly root: string;
  readonly point: string;
  readonly fsType: string;
  readonly superOptions: readonly string[];
}

/** mountinfo's octal escapes (`\040` for a space) undone. */
const unescapeOctal = (text: string) =>
  text.replace(/\\([0-7]{3})/gu, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));

function parseMountinfo(text: string): Mount[] {
  const mounts: Mount[] = [];
  for (const line of text.split('\n')) {
    const [left, right] = line.split(' - ');
    if (left === undefined || right === undefined) continue;
    const fields = left.split(' ');
    const [fsType, , options] = right.split(' ');
    if (fields[4] === undefined || fsType === undefined) continue;
    mounts.push({
      root: unescapeOctal(fields[3] ?? '/'),
      point: unescapeOctal(fields[4]),
      fsType,
      superOptions: (options ?? '').split(','),
    });
  }
  return mounts;
}

/**
 * Where jails' cgroups go, from /proc/self/mountinfo and /proc/self/cgroup of petreld (the
 * holder is its child, in the same cgroups): v1 per controller under `<mount><own path>/`
 * + JAIL_CGROUP. v2 (the unified hierarchy) under a cgroup that holds no process of its own,
 * since one that does cannot give controllers to children (the no-internal-process rule): the
 * hierarchy's root (exempt from the rule), or the parent of petreld's `DAEMON_SUBGROUP` leaf
 * (systemd's `Delegate=yes` with `DelegateSubgroup=petreld`); `controllersOf` reads that
 * cgroup's `cgroup.controllers` (a path of the hierarchy; the caller does the reading). In any
 * other cgroup (systemd 252's Delegate=yes puts the main process in the delegated cgroup
 * itself) there is none. No controller at all: version 0, and why. A cgroup the mount does not
 * show (a sandbox's view) is replaced by the mount's top.
 */
export function cgroupLayout(
  mountinfo: string,
  ownCgroups: string,
  controllersOf: (cgroup: string) => string | null,
  /** Whether a directory exists: a cgroup the mount does not show is replaced by its top. */
  exists: (dir: string) => boolean = () => true,
): CgroupLayout {
  const mounts = parseMountinfo(mountinfo);
  const own = new Map<string, string>();
  let unifiedPath: string | null = null;
  for (const line of ownCgroups.split('\n')) {
    const match = /^(\d+):([^:]*):(.*)$/u.exec(line);
    if (match === null) continue;
    const [, id, controllers, where] = match as unknown as [string, string, string, string];
    if (id === '0' && controllers === '') unifiedPath = where;
    else for (const c of controllers.split(',')) own.set(c, where);
  }
  // The cgroup's path is the hierarchy's; a mount of a subtree shows it below that subtree. A
  // cgroup outside what is mounted (a container's view) leaves the mount's own root.
  const join = (mount: Mount, where: string) => {
    const root = mount.root === '/' ? '' : mount.root.replace(/\/$/u, '');
    const inside =
      root === '' ? where : where === root || where.startsWith(`${root}/`) ? where.slice(root.length) : '/';
    const point = mount.point.replace(/\/$/u, '');
    const own = `${point}${inside === '/' || inside === '' ? '' : inside}`;
    return `${exists(own) ? own : point}/${JAIL_CGROUP}`;
  };
  const parents: Partial<Record<CgroupController, string>> = {};
  for (const controller of CGROUP_CONTROLLERS) {
    const mount = mounts.find((m) => m.fsType === 'cgroup' && m.superOptions.includes(controller));
    const where = own.get(controller);
    if (mount !== undefined && where !== undefined) parents[controller] = join(mount, where);
  }
  if (Object.keys(parents).length > 0) return { version: 1, parents };
  const unified = mounts.find((m) => m.fsType === 'cgroup2');
  if (unified !== undefined && unifiedPath !== null) {
    const leaf = unifiedPath.endsWith(`/${DAEMON_SUBGROUP}`);
    if (unifiedPath !== '/' && !leaf) {
      return {
        version: 0,
        why: `petreld's cgroup ${unifiedPath} holds processes, so it cannot give controllers to tenders (cgroup v2's no-internal-process rule); with systemd ≥ 254, DelegateSubgroup=${DAEMON_SUBGROUP} beside Delegate=yes moves petreld into a leaf below it`,
      };
    }
    const delegating = leaf ? unifiedPath.slice(0, -DAEMON_SUBGROUP.length - 1) || '/' : '/';
    const offered = (controllersOf(delegating) ?? '').split(/\s+/u);
    const controllers = CGROUP_CONTROLLERS.filter((c) => offered.includes(c));
    if (controllers.length > 0) {
      const parent = join(unified, delegating);
      return { version: 2, delegator: parent.slice(0, -JAIL_CGROUP.length - 1), parent, controllers };
    }
    return {
      version: 0,
      why: `the cgroup ${delegating} offers none of memory, pids, cpuset (Delegate=yes?)`,
    };
  }
  return { version: 0, why: 'no cgroup hierarchy with memory, pids or cpuset is mounted' };
}

/** The cgroup directories of jail `id`. */
export function jailCgroups(layout: CgroupLayout, id: number): string[] {
  if (layout.version === 1) return Object.values(layout.parents).map((parent) => `${parent}/${id}`);
  if (layout.version === 2) return [`${layout.parent}/${id}`];
  return [];
}

/** Which limits a layout puts in force besides the resource limits. */
export function cgroupLimits(layout: CgroupLayout): CgroupController[] {
  if (layout.version === 1) return CGROUP_CONTROLLERS.filter((c) => layout.parents[c] !== undefined);
  if (layout.version === 2) return [...layout.controllers];
  return [];
}

export interface JailSpec {
  readonly id: number;
  readonly kind: 'hvt' | 'spt';
  readonly cpus: readonly number[];
  readonly limits: JailLimits;
  readonly layout: CgroupLayout;
  /** petreld's own cpuset.cpus and cpuset.mems: a v1 cpuset starts empty and must be given them. */
  readonly cpuset: { readonly cpus: string; readonly mems: string };
  /**
   * The tender, what it loads, the allow-list and the image: bound read-only at their own paths
   * (the image's run-directory link resolves to its store file, readable by all in a directory
   * only root may enter: the bind is the jail's one way to it).
   */
  readonly files: readonly string[];
  /** Bound read-write and chowned to the id (block devices). */
  readonly writable: readonly string[];
  readonly tun: boolean;
  /**
   * The host's KVM device (petreld's `kvmDevice`, the node its probe opened): an hvt jail gets a
   * node of its device number at /dev/kvm, where the tender opens it. Tests whose KVM is a double
   * point this at the double's node (test/engine/guest.ts), and nothing else of the jail differs.
   */
  readonly kvmDevice: string;
}

/** The petrel-jail options for `spec`, without the program and the `--` before the tender. */
export function jailOptions(spec: JailSpec): string[] {
  const args = ['--id', String(spec.id)];
  const cpus = [...new Set(spec.cpus)].sort((a, b) => a - b).join(',');
  if (cpus !== '') args.push('--cpus', cpus);
  const { limits } = spec;
  args.push(
    '--limit',
    `as=${limits.addressSpace}`,
    '--limit',
    `nproc=${limits.processes}`,
    '--limit',
    `nofile=${limits.openFiles}`,
    '--limit',
    `fsize=${limits.fileSize}`,
  );
  const layout = spec.layout;
  const cgroupArgs = (controller: CgroupController, parent: string, dir: string, v1: boolean): string[] => {
    const out: string[] = [];
    if (controller === 'memory')
      out.push(
        '--cgroup-write',
        `${dir}/${v1 ? 'memory.limit_in_bytes' : 'memory.max'}=${limits.addressSpace}`,
      );
    if (controller === 'pids') out.push('--cgroup-write', `${dir}/pids.max=${limits.processes}`);
    if (controller === 'cpuset' && cpus !== '') {
      if (v1) {
        // v1 cpusets start empty, and a child's must lie within its parent's.
        out.push('--cgroup-write', `${parent}/cpuset.cpus=${spec.cpuset.cpus}`);
        out.push('--cgroup-write', `${parent}/cpuset.mems=${spec.cpuset.mems}`);
        out.push('--cgroup-write', `${dir}/cpuset.mems=${spec.cpuset.mems}`);
      }
      out.push('--cgroup-write', `${dir}/cpuset.cpus=${cpus}`);
    }
    return out;
  };
  if (layout.version === 1) {
    for (const controller of CGROUP_CONTROLLERS) {
      const parent = layout.parents[controller];
      if (parent === undefined) continue;
      const dir = `${parent}/${spec.id}`;
      const writes = cgroupArgs(controller, parent, dir, true);
      args.push('--cgroup-mkdir', parent, '--cgroup-mkdir', dir, ...writes, '--cgroup-join', dir);
    }
  } else if (layout.version === 2) {
    const dir = `${layout.parent}/${spec.id}`;
    const enable = layout.controllers.map((c) => `+${c}`).join(' ');
    args.push(
      '--cgroup-write',
      `${layout.delegator}/cgroup.subtree_control=${enable}`,
      '--cgroup-mkdir',
      layout.parent,
      '--cgroup-write',
      `${layout.parent}/cgroup.subtree_control=${enable}`,
    );
    args.push('--cgroup-mkdir', dir);
    for (const controller of layout.controllers)
      args.push(...cgroupArgs(controller, layout.parent, dir, false));
    args.push('--cgroup-join', dir);
  }
  for (const file of spec.files) args.push('--ro', file);
  for (const file of spec.writable) args.push('--rw', file);
  if (spec.kind === 'hvt') args.push('--kvm', spec.kvmDevice);
  if (spec.tun) args.push('--dev', 'tun');
  return args;
}

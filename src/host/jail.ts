// The host side of tender jails (docs/threat-model.md): which files a tender loads (its ELF interpreter's
// `--list`, or a script's interpreter), where cgroups go on this host, block files handed back
// to root and jail cgroups removed once a unikernel is gone, and the processes that run under
// an id of the range (the preflight's check). The jail itself is native/build/petrel-jail.

import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { chown, mkdir, open, readdir, readFile, rmdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import {
  type CgroupLayout,
  cgroupLayout,
  type IdRange,
  JAIL_CGROUP,
  jailCgroups,
} from '../resources/jail.js';
import { runCommand } from './command.js';
import { bundledProgram } from './native.js';
import { processStartTime } from './pidrecord.js';

export type JailError = PetrelError<'E_JAIL'>;

/** The bundled petrel-jail, if it is built. */
export function jailProgram(): Result<string, PetrelError<'E_JAIL'>> {
  return bundledProgram('petrel-jail', 'E_JAIL');
}

/** PT_INTERP of an ELF file, '' for a static one; null when `bytes` are no 64-bit ELF. */
function elfInterpreter(bytes: Buffer): string | null {
  if (bytes.length < 64 || bytes.readUInt32BE(0) !== 0x7f454c46 || bytes[4] !== 2 || bytes[5] !== 1)
    return null;
  const phoff = Number(bytes.readBigUInt64LE(32));
  const phentsize = bytes.readUInt16LE(54);
  const phnum = bytes.readUInt16LE(56);
  for (let i = 0; i < phnum; i++) {
    const at = phoff + i * phentsize;
    if (at + 56 > bytes.length) return null;
    if (bytes.readUInt32LE(at) !== 3) continue; // PT_INTERP
    const offset = Number(bytes.readBigUInt64LE(at + 8));
    const size = Number(bytes.readBigUInt64LE(at + 32));
    if (offset + size > bytes.length) return null;
    return bytes
      .subarray(offset, offset + size)
      .toString('latin1')
      .replace(/\0.*$/su, '');
  }
  return '';
}

async function head(file: string, bytes: number): Promise<Buffer> {
  const handle = await open(file, 'r');
  try {
    const buffer = Buffer.alloc(bytes);
    const { bytesRead } = await handle.read(buffer, 0, bytes, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

/** The libraries `interpreter --list file` names (what ldd prints), absolute paths only. */
function parseList(text: string): string[] {
  const files: string[] = [];
  for (const line of text.split('\n')) {
    const arrow = /=>\s+(\/\S+)\s+\(0x/u.exec(line);
    const bare = /^\s+(\/\S+)\s+\(0x/u.exec(line);
    const file = arrow?.[1] ?? bare?.[1];
    if (file !== undefined) files.push(file);
  }
  return files;
}

/**
 * Every file `program` needs to start: itself, a script's interpreter (recursively), an ELF's
 * interpreter and the libraries it resolves. Asks the program's own interpreter (`--list`,
 * which maps the libraries and runs nothing of the program), so the paths are those it will open.
 */
export async function programFiles(program: string, depth = 0): Promise<Result<string[], JailError>> {
  if (depth > 4) return err('E_JAIL', `${program}: more than 4 interpreters deep`);
  let bytes: Buffer;
  try {
    bytes = await head(program, 64 * 1024);
  } catch (cause) {
    return err('E_JAIL', `reading ${program}: ${(cause as Error).message}`, { path: program });
  }
  if (bytes.subarray(0, 2).toString('latin1') === '#!') {
    const line = bytes.subarray(2, bytes.indexOf(10) < 0 ? bytes.length : bytes.indexOf(10)).toString('utf8');
    const interpreter = line.trim().split(/\s+/u)[0] ?? '';
    if (!interpreter.startsWith('/')) return err('E_JAIL', `${program}: its #! line names no absolute path`);
    const files = [program];
    const inner = await programFiles(interpreter, depth + 1);
    if (!inner.ok) return inner;
    files.push(...inner.value);
    // A wrapper names what else it runs: `# petrel-jail-allow: PATH...` (the tests' fake-KVM
    // double). The tender is the administrator's file, so this grants nothing jailAllow would not.
    const text = bytes.subarray(0, 4096).toString('utf8');
    for (const match of text.matchAll(/^# petrel-jail-allow:(.*)$/gmu)) {
      for (const extra of (match[1] ?? '')
        .trim()
        .split(/\s+/u)
        .filter((w) => w.startsWith('/'))) {
        const more = await programFiles(extra, depth + 1);
        if (!more.ok) return more;
        files.push(...more.value);
      }
    }
    return ok([...new Set(files)]);
  }
  const interpreter = elfInterpreter(bytes);
  if (interpreter === null) return err('E_JAIL', `${program}: neither a 64-bit ELF file nor a #! script`);
  if (interpreter === '') return ok([program]);
  const listed = await runCommand(interpreter, ['--list', program], { label: 'ld.so --list' });
  if (!listed.ok) return err('E_JAIL', `${interpreter} --list ${program}: ${listed.error.message}`);
  return ok([...new Set([program, interpreter, ...parseList(listed.value.stdout)])]);
}

/** programFiles, kept per file identity (path, size, modification time). */
export class ProgramFiles {
  readonly #cache = new Map<string, { key: string; files: string[] }>();

  async of(programs: readonly string[]): Promise<Result<string[], JailError>> {
    const all = new Set<string>();
    for (const program of programs) {
      let key: string;
      try {
        const st = await stat(program);
        key = `${st.size}:${st.mtimeMs}:${st.ino}`;
      } catch (cause) {
        return err('E_JAIL', `${program}: ${(cause as Error).message}`, { path: program });
      }
      let files = this.#cache.get(program);
      if (files?.key !== key) {
        const found = await programFiles(program);
        if (!found.ok) return found;
        files = { key, files: found.value };
        this.#cache.set(program, files);
      }
      for (const file of files.files) all.add(file);
    }
    return ok([...all]);
  }
}

const readOr = async (file: string): Promise<string | null> => readFile(file, 'utf8').catch(() => null);

/** This host's cgroup layout for jails (see cgroupLayout), and petreld's own cpuset. */
export async function discoverCgroups(): Promise<{
  layout: CgroupLayout;
  cpuset: { cpus: string; mems: string };
}> {
  const mountinfo = (await readOr('/proc/self/mountinfo')) ?? '';
  const own = (await readOr('/proc/self/cgroup')) ?? '';
  const v2 = /^\S+ \S+ \S+ \S+ (\S+) .* - cgroup2 /mu.exec(mountinfo)?.[1];
  const controllersOf = (cgroup: string): string | null => {
    if (v2 === undefined) return null;
    try {
      return readFileSync(path.join(v2, cgroup, 'cgroup.controllers'), 'utf8');
    } catch {
      return null;
    }
  };
  const found = cgroupLayout(mountinfo, own, controllersOf, existsSync);
  const layout = found.version === 2 ? await giveControllers(found) : found;
  let cpuset = { cpus: '', mems: '' };
  if (layout.version === 1 && layout.parents.cpuset !== undefined) {
    const mine = path.dirname(layout.parents.cpuset);
    cpuset = {
      cpus: ((await readOr(path.join(mine, 'cpuset.cpus'))) ?? '').trim(),
      mems: ((await readOr(path.join(mine, 'cpuset.mems'))) ?? '').trim(),
    };
    // Without both, a v1 cpuset cannot take a task: leave the controller out.
    if (cpuset.cpus === '' || cpuset.mems === '') {
      const { cpuset: _dropped, ...rest } = layout.parents;
      const parents = rest;
      return {
        layout: Object.keys(parents).length > 0 ? { version: 1, parents } : { version: 0, why: 'no cpuset' },
        cpuset,
      };
    }
  }
  return { layout, cpuset };
}

/**
 * v2: turns the controllers on for the jails' cgroups now, as each jail would, so that a host
 * where the kernel refuses (a container's cgroup namespace whose root holds processes, a
 * controller taken by another hierarchy) runs tenders without cgroups, said by the preflight,
 * rather than failing every create in petrel-jail.
 */
export async function giveControllers(layout: CgroupLayout & { version: 2 }): Promise<CgroupLayout> {
  const enable = layout.controllers.map((c) => `+${c}`).join(' ');
  const steps: [string, () => Promise<void>][] = [
    [
      `${layout.delegator}/cgroup.subtree_control`,
      () => writeFile(`${layout.delegator}/cgroup.subtree_control`, enable),
    ],
    [
      layout.parent,
      () =>
        mkdir(layout.parent).catch((e: NodeJS.ErrnoException) => {
          if (e.code !== 'EEXIST') throw e;
        }),
    ],
    [
      `${layout.parent}/cgroup.subtree_control`,
      () => writeFile(`${layout.parent}/cgroup.subtree_control`, enable),
    ],
  ];
  for (const [where, step] of steps) {
    try {
      await step();
    } catch (cause) {
      return {
        version: 0,
        why: `cgroup v2: ${where}: ${(cause as NodeJS.ErrnoException).code ?? String(cause)} turning on ${layout.controllers.join(', ')}`,
      };
    }
  }
  return layout;
}

/** Removes the cgroups of jail `id` (empty once its tender is gone); absent ones are fine. */
export async function removeJailCgroups(layout: CgroupLayout, id: number): Promise<Result<void, JailError>> {
  for (const dir of jailCgroups(layout, id)) {
    try {
      await rmdir(dir);
    } catch (cause) {
      const code = (cause as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT') return err('E_JAIL', `removing cgroup ${dir}: ${(cause as Error).message}`);
    }
  }
  return ok(undefined);
}

/** 'memory cgroup' when the memory controller killed a task of jail `id` (an OOM kill), else null. */
export async function memoryLimitHit(layout: CgroupLayout, id: number): Promise<string | null> {
  const dir =
    layout.version === 1 && layout.parents.memory !== undefined
      ? `${layout.parents.memory}/${id}`
      : layout.version === 2 && layout.controllers.includes('memory')
        ? `${layout.parent}/${id}`
        : null;
  if (dir === null) return null;
  const text =
    (await readOr(path.join(dir, layout.version === 1 ? 'memory.oom_control' : 'memory.events'))) ?? '';
  const kills = Number(/^oom_kill (\d+)$/mu.exec(text)?.[1] ?? '0');
  return kills > 0 ? 'memory cgroup' : null;
}

/** The jail ids that have a cgroup directory (reconciliation removes those nothing runs in). */
export async function listJailCgroupIds(layout: CgroupLayout): Promise<number[]> {
  const parents =
    layout.version === 1 ? Object.values(layout.parents) : layout.version === 2 ? [layout.parent] : [];
  const ids = new Set<number>();
  for (const parent of parents) {
    if (!parent.endsWith(`/${JAIL_CGROUP}`)) continue;
    const entries = await readdir(parent, { withFileTypes: true }).catch(() => []);
    for (const entry of entries)
      if (entry.isDirectory() && /^\d+$/u.test(entry.name)) ids.add(Number(entry.name));
  }
  return [...ids];
}

/** Hands a block file back to root (its jail is gone). */
export async function returnToRoot(file: string): Promise<Result<void, JailError>> {
  try {
    await chown(file, 0, 0);
    return ok(undefined);
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'ENOENT') return ok(undefined);
    return err('E_JAIL', `chown 0:0 ${file}: ${(cause as Error).message}`, { path: file });
  }
}

/** The owner of a file, or null when it is gone. */
export async function ownerOf(file: string): Promise<number | null> {
  try {
    return (await stat(file)).uid;
  } catch {
    return null;
  }
}

/** A process that runs under an id of a jail range, as /proc showed it. */
export interface ProcessInRange {
  pid: number;
  /** The id in the range it runs under (real, effective, saved or file-system uid or gid). */
  uid: number;
  /** Whether its parent is a petrel-holder (a tender of this or another petreld of the host). */
  underHolder: boolean;
  ppid: number;
  comm: string;
  /** Dead, waiting for its parent to reap it: it runs nothing and holds no file. */
  zombie: boolean;
  /** Its start time in clock ticks: with the pid, who it is (pids are reused). */
  startTime: string;
}

/** Processes whose real, effective, saved or file-system uid or gid lies in `range`. */
export function processesInRange(range: IdRange): ProcessInRange[] {
  const found: ProcessInRange[] = [];
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return found;
  }
  for (const entry of entries) {
    if (!/^\d+$/u.test(entry)) continue;
    let status: string;
    try {
      status = readFileSync(`/proc/${entry}/status`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    const ids = /^Uid:\s+(.*)$/mu.exec(status)?.[1]?.split(/\s+/u).map(Number) ?? [];
    const gids = /^Gid:\s+(.*)$/mu.exec(status)?.[1]?.split(/\s+/u).map(Number) ?? [];
    const hit = [...ids, ...gids].find((id) => id >= range.first && id <= range.last);
    if (hit === undefined) continue;
    const ppid = Number(/^PPid:\s+(\d+)$/mu.exec(status)?.[1] ?? '0');
    const comm = /^Name:\s+(.*)$/mu.exec(status)?.[1] ?? '?';
    const start = processStartTime(Number(entry));
    if (!start.ok) continue; // gone meanwhile
    const startTime = start.value;
    const zombie = /^State:\s+[ZX]/mu.test(status);
    found.push({ pid: Number(entry), uid: hit, underHolder: isHolder(ppid), ppid, comm, zombie, startTime });
  }
  return found;
}

function isHolder(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'petrel-holder';
  } catch {
    return false;
  }
}

/** Users and groups of the passwd and group databases (NSS, as `getent` enumerates them) in `range`. */
export async function accountsInRange(range: IdRange): Promise<Result<string[], JailError>> {
  const found: string[] = [];
  for (const database of ['passwd', 'group'] as const) {
    const listed = await runCommand('getent', [database], { label: 'getent' });
    if (!listed.ok) return err('E_JAIL', `getent ${database}: ${listed.error.message}`);
    for (const line of listed.value.stdout.split('\n')) {
      const [name, , id] = line.split(':');
      const n = Number(id);
      if (name !== undefined && name !== '' && n >= range.first && n <= range.last)
        found.push(`${database === 'passwd' ? 'user' : 'group'} ${name} (${n})`);
    }
  }
  for (const file of ['/etc/subuid', '/etc/subgid']) {
    const text = await readOr(file);
    for (const line of (text ?? '').split('\n')) {
      const [name, start, count] = line.split(':');
      const first = Number(start);
      const last = first + Number(count) - 1;
      if (
        name &&
        Number.isSafeInteger(first) &&
        Number.isSafeInteger(last) &&
        first <= range.last &&
        last >= range.first
      )
        found.push(`${path.basename(file)} range of ${name} (${first}-${last})`);
    }
  }
  return ok(found);
}

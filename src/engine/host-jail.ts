// The jail side of the engine's host (docs/threat-model.md): each jailed tender's id, host-wide claim and
// cgroups, released after it exits; at start-up, whatever no adopted tender's jail holds goes.

import { randomInt } from 'node:crypto';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { ioError, listDirectory } from '../host/files.js';
import {
  discoverCgroups,
  jailProgram,
  listJailCgroupIds,
  memoryLimitHit,
  ownerOf,
  ProgramFiles,
  removeJailCgroups,
  returnToRoot,
} from '../host/jail.js';
import { claimId, DEFAULT_CLAIMS_DIR, listClaims, releaseClaim } from '../host/jail-claims.js';
import { blockDir } from '../host/paths.js';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import { type CgroupLayout, cgroupLimits, JailIds, jailLimits, jailOptions } from '../resources/jail.js';
import type { EngineHost, HeldJail, Jail, JailOptions } from './host-types.js';
import { type Leftover, leftover, leftoverFailed } from './leftovers.js';
import type { HostResult } from './types.js';

const MIB = 1024 * 1024;

/** The jail steps of EngineHost; with jails off, each says so (no jail, no limit, no info). */
export type JailSteps = Pick<
  EngineHost,
  'makeJail' | 'releaseJail' | 'jailLimitHit' | 'holdJail' | 'holdJailClaim' | 'jailInfo'
>;

export interface JailHost {
  readonly steps: JailSteps;
  /** Start-up clean-up of jails no adopted tender (`held`, their ids) runs in; what it did. */
  reconcile(stateDir: string, held: readonly number[]): Promise<Leftover[]>;
}

/** `holderPid`: the run directory's holder, for which jail ids are claimed. */
export function createJailHost(options: JailOptions | null, holderPid: () => HostResult<number>): JailHost {
  const jail = options === null ? null : jailState(options);
  const steps: JailSteps = {
    async makeJail(request) {
      if (jail === null) return ok({ value: null, undo: async () => undefined });
      const setup = await jail.setup;
      const program = jail.program;
      if (!program.ok) return program;
      const files = await jail.files.of([request.tender, ...jail.options.allow]);
      if (!files.ok) return files;
      const sizes: number[] = [];
      for (const block of request.blocks) {
        const info = await stat(block).catch((cause: Error) => cause);
        if (info instanceof Error) return { ok: false, error: ioError('stat', block, info) };
        sizes.push(Math.ceil(info.size / MIB));
      }
      const holder = await holderPid();
      if (!holder.ok) return holder;
      // Lowest free here and not claimed by another petreld's holder on this host.
      const id = jail.ids.take((candidate) => !claimId(jail.claims, candidate, holder.value));
      if (!id.ok) return id;
      const limits = jailLimits({
        kind: request.kind,
        memoryMiB: request.memoryMiB,
        nets: request.nets,
        blockSizesMiB: sizes,
      });
      const blocks = [...request.blocks];
      const args = jailOptions({
        id: id.value,
        kind: request.kind,
        cpus: request.cpuids,
        limits,
        layout: setup.layout,
        cpuset: setup.cpuset,
        files: [...files.value, request.image],
        writable: blocks,
        tun: request.nets > 0,
        kvmDevice: jail.options.kvmDevice,
      });
      const made: Jail = { id: id.value, prefix: [program.value, ...args, '--'], limits, blocks };
      return ok({
        value: made,
        undo: async () => {
          const released = await releaseJail(jail, made);
          if (!released.ok) throw new Error(released.error.message);
        },
      });
    },
    releaseJail: (made) => releaseJail(jail, made),
    async jailLimitHit(made, exit) {
      if (jail === null) return null;
      if (exit.signal === 'SIGXFSZ') return 'RLIMIT_FSIZE';
      if (exit.signal === 'SIGSYS') return 'system-call filter';
      if (exit.code === 125) return 'jail set-up (its console says why)';
      if (exit.signal !== 'SIGKILL') return null;
      return memoryLimitHit((await jail.setup).layout, made.id);
    },
    holdJail(id, blocks) {
      jail?.ids.hold(id);
      return { id, limits: null, blocks };
    },
    async holdJailClaim(id) {
      if (jail === null) return;
      const holder = await holderPid();
      if (holder.ok) claimId(jail.claims, id, holder.value);
    },
    jailInfo() {
      if (jail === null || jail.layoutNow === null) return null;
      const layout = jail.layoutNow;
      return {
        ids: jail.options.ids,
        inUse: jail.ids.taken.size,
        limits: [
          'RLIMIT_AS (guest memory + tender overhead)',
          'RLIMIT_NPROC',
          'RLIMIT_NOFILE',
          'RLIMIT_FSIZE',
          'RLIMIT_CORE=0',
          ...cgroupLimits(layout).map((c) => `cgroup ${c}`),
        ],
        cgroups: describeLayout(layout),
      };
    },
  };
  return {
    steps,
    async reconcile(stateDir, held) {
      if (jail === null) return [];
      const holder = await holderPid();
      return reconcileJails(jail, stateDir, held, holder.ok ? holder.value : null);
    },
  };
}

interface JailState {
  readonly options: JailOptions;
  readonly ids: JailIds;
  readonly files: ProgramFiles;
  readonly program: Result<string, PetrelError>;
  readonly claims: string;
  /** Where cgroups go, found once. */
  readonly setup: Promise<{ layout: CgroupLayout; cpuset: { cpus: string; mems: string } }>;
  layoutNow: CgroupLayout | null;
}

function jailState(options: JailOptions): JailState {
  const state: JailState = {
    options,
    ids: new JailIds(options.ids, randomInt(options.ids.first, options.ids.last + 1)),
    files: new ProgramFiles(),
    program: options.program === undefined ? jailProgram() : ok(options.program),
    claims: options.claims ?? DEFAULT_CLAIMS_DIR,
    setup: discoverCgroups(),
    layoutNow: null,
  };
  void state.setup.then((found) => {
    state.layoutNow = found.layout;
  });
  return state;
}

async function releaseJail(jail: JailState | null, made: HeldJail): HostResult<void> {
  if (jail === null) return ok(undefined);
  const problems: string[] = [];
  for (const block of made.blocks) {
    const back = await returnToRoot(block);
    if (!back.ok) problems.push(back.error.message);
  }
  const removed = await removeJailCgroups((await jail.setup).layout, made.id);
  if (!removed.ok) problems.push(removed.error.message);
  releaseClaim(jail.claims, made.id);
  jail.ids.free(made.id);
  return problems.length === 0 ? ok(undefined) : err('E_JAIL', problems.join('; '));
}

function describeLayout(layout: CgroupLayout): string {
  if (layout.version === 1) return `v1: ${Object.values(layout.parents).join(', ')}`;
  if (layout.version === 2) return `v2: ${layout.parent} (${layout.controllers.join(', ')})`;
  return `none: ${layout.why}`;
}

/**
 * Start-up: block files a jail's id owns that no adopted tender holds go back to root (a reused
 * id must never own another tenant's file), and jail cgroups nothing runs in are removed.
 */
async function reconcileJails(
  jail: JailState,
  stateDir: string,
  held: readonly number[],
  holder: number | null,
): Promise<Leftover[]> {
  const done: Leftover[] = [];
  const keep = new Set(held);
  // Claims of our holder that no adopted tender holds, and stale ones, go.
  for (const claim of listClaims(jail.claims)) {
    if (keep.has(claim.id) || (claim.holder !== null && claim.holder !== holder)) continue;
    releaseClaim(jail.claims, claim.id);
    done.push(leftover('jail claim', `released the claim on jail id ${claim.id}`));
  }
  const dir = blockDir(stateDir);
  const files = await listDirectory(dir);
  for (const file of files.ok ? files.value : []) {
    const full = path.join(dir, file);
    const owner = await ownerOf(full);
    if (owner === null || owner === 0 || keep.has(owner) || !jail.ids.contains(owner)) continue;
    // Another petreld's live tender (its own state directory would not hold this file, but a
    // shared one is its business): only ids whose claim is gone are handed back.
    if (listClaims(jail.claims).some((c) => c.id === owner && c.holder !== null && c.holder !== holder))
      continue;
    const back = await returnToRoot(full);
    done.push(
      back.ok
        ? leftover('jail-owned block', `block ${file} handed back to root from jail id ${owner}`)
        : leftoverFailed('jail-owned block', back.error.message),
    );
  }
  const layout = (await jail.setup).layout;
  const claimed = new Set(listClaims(jail.claims).flatMap((c) => (c.holder === null ? [] : [c.id])));
  for (const id of await listJailCgroupIds(layout)) {
    if (keep.has(id) || claimed.has(id)) continue;
    const removed = await removeJailCgroups(layout, id);
    done.push(
      removed.ok
        ? leftover('jail cgroups', `removed the cgroups of jail id ${id}`)
        : leftoverFailed('jail cgroups', removed.error.message),
    );
  }
  return done;
}

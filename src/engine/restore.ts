// Start-up (semantics §13.2 with Petrel (e), (j), (k), (m)): the committed state brought back,
// the tenders an earlier petreld left adopted or dismissed, leftovers removed, the rest started.

import { consoleFeed } from '../console/feed.js';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import { childName, printName, printPath } from '../resources/name.js';
import type { Policy } from '../resources/policy.js';
import * as T from '../resources/tree.js';
import type { TenderExit } from '../tender/process.js';
import { encodeSnapshot, type KeptConfig, type PetrelState } from '../wire/petrel-state.js';
import { type Adoptable, planAdoption } from './adopt.js';
import { committedState, withImported } from './albatross.js';
import type { EngineContext } from './context.js';
import { describeExit, vmKey } from './launch.js';
import { type Leftover, leftover } from './leftovers.js';
import { resolveReplacements } from './pending-replacements.js';
import { allocationOf, blockLabel, type ImageInput } from './prepare.js';
import { TEXT } from './replies.js';
import { NO_HISTORY } from './restart.js';
import type { StateBook } from './state-book.js';
import type { VmName } from './types.js';

/** What start-up adds to the committed state. */
export interface RestoreOptions {
  /** An Albatross state file to import (`--import-albatross-state`); imported once. */
  readonly importState?: { readonly bytes: Uint8Array; readonly source: string };
}

export interface RestoreReport {
  /** What start-up found left over and did with it (the daemon logs how many of each kind). */
  readonly cleaned: readonly Leftover[];
  /** Running tenders of committed unikernels taken over from an earlier petreld. */
  readonly adopted: readonly string[];
  readonly started: readonly string[];
  readonly failed: readonly { readonly name: string; readonly reason: string }[];
}

/**
 * What restore may see and do. It runs as one task of the engine's queue, with commits off
 * (nothing is appended to the journal while the state is brought back): the state is written
 * whole at its end, through `book`, when this start changed it.
 */
export interface RestoreContext
  extends Pick<
    EngineContext,
    'host' | 'hub' | 'log' | 'now' | 'tree' | 'setTree' | 'users' | 'unikernels' | 'exits'
  > {
  readonly book: StateBook;
  /** The whole state as it should be now: running and pending unikernels, every policy. */
  currentState(): Omit<PetrelState, 'imported'>;
}

/**
 * Brings the host to the last committed state (semantics §13.2 with Petrel (e), (j)): block
 * devices from the block directory; the committed state (an earlier Petrel's state file is
 * migrated into the store once, an Albatross file given is imported once); leftovers of a
 * previous run removed, and the store checked (a unikernel whose image is missing is dropped);
 * the discovered root policy, the stored policies with full checks (a failure is fatal); then
 * the stored unikernels by startup priority (a failure is logged and the unikernel dropped).
 * The state is then written whole (a snapshot), which also drops a torn journal tail.
 */
export async function restoreState(
  ctx: RestoreContext,
  root: Policy | null,
  options: RestoreOptions = {},
): Promise<Result<RestoreReport, PetrelError>> {
  const dirs = await ctx.host.makeDirectories();
  if (!dirs.ok) return dirs;
  const blocks = await ctx.host.scanBlocks();
  if (!blocks.ok) return blocks;
  const cleanedUp: Leftover[] = blocks.value.recovered.map((what) => leftover('block', what));
  for (const block of blocks.value.blocks) {
    const added = T.addBlock(ctx.tree(), block.name, block.sizeMiB);
    if (added.ok) ctx.setTree(added.value);
  }

  // What was committed, with an earlier Petrel's state file or an Albatross file brought in.
  const failed: { name: string; reason: string }[] = [];
  const committed = await committedState(ctx.book, ctx.host, ctx.log, failed);
  if (!committed.ok) return committed;
  const imported = await withImported(ctx.host, ctx.log, committed.value.state, options.importState, failed);
  if (!imported.ok) return imported;
  let state = imported.value;
  const started = encodeSnapshot(state);
  if (!started.ok) return started;
  // Best effort: on a full state directory the start goes on without it, so that it can free space.
  const kept = await ctx.host.keepStartedCopy(started.value);
  if (!kept.ok)
    ctx.log.warn({ problem: kept.error.message }, 'could not keep the state as read at this start');

  // Petrel (m): a replace a crash interrupted during its check is kept if the check had
  // passed and rolled back otherwise, before adoption (a tender of the new image is stopped).
  const resolved = resolveReplacements(state);
  state = resolved.state;
  for (const { name, outcome } of resolved.outcomes)
    ctx.log.warn({ name, outcome }, 'replacement pending at the last stop resolved');

  // Petrel (k): the tenders an earlier petreld left under the holder. Those of committed
  // unikernels run on; the others are stopped before anything is cleaned or started.
  const held = await ctx.host.heldTenders();
  if (!held.ok) return held;
  const plan = planAdoption(state.unikernels, held.value);
  for (const { held: tender, reason } of plan.dismiss) {
    const dismissed = await ctx.host.dismissTender(tender);
    if (!dismissed.ok) return dismissed;
    cleanedUp.push(leftover('tender', `${dismissed.value}: ${reason}`));
  }
  const cleaned = await ctx.host.cleanLeftovers({
    names: plan.adopt.map((a) => a.name),
    jailIds: plan.adopt.flatMap((a) => (a.meta.jail === undefined ? [] : [a.meta.jail])),
    taps: plan.adopt.flatMap((a) => a.meta.nets.map((n) => n.tap)),
    files: plan.adopt.flatMap((a) => [a.meta.image, a.meta.fifo]),
  });
  if (!cleaned.ok) return cleaned;
  cleanedUp.push(...cleaned.value);

  // The store: what nothing names goes; a unikernel whose image is gone is dropped, unless its
  // tender runs on (an adopted guest is never stopped for a file; restarting it will fail).
  const store = await ctx.host.cleanStore(
    new Map(state.unikernels.map((u) => [u.image.digest, u.image.size])),
  );
  if (!store.ok) return store;
  cleanedUp.push(...store.value.removed.map((what) => leftover('image', what)));
  const missing = new Map(store.value.missing.map((m) => [m.digest, m.reason]));
  const adopting = new Set(plan.adopt.map((a) => vmKey(a.name)));
  const gone = state.unikernels.filter(
    (u) => missing.has(u.image.digest) && !adopting.has(printName(u.name)),
  );
  for (const u of gone)
    failed.push({ name: printName(u.name), reason: missing.get(u.image.digest) as string });
  for (const a of plan.adopt) {
    const reason = missing.get(a.image.digest);
    if (reason !== undefined)
      ctx.log.error(
        { name: printName(a.name), problem: reason },
        'adopted unikernel runs an image the store lacks',
      );
  }
  state = { ...state, unikernels: state.unikernels.filter((u) => !gone.includes(u)) };

  if (root !== null) {
    const placed = T.addPolicy(ctx.tree(), [], root);
    if (!placed.ok) return err('E_POLICY_RESTORE', `root policy: ${placed.error.message}`);
    ctx.setTree(placed.value);
  }
  for (const { path, policy } of state.policies) {
    if (path.length === 0 && root !== null) continue;
    const inserted = T.addPolicy(ctx.tree(), path, policy);
    if (!inserted.ok) {
      return err(
        'E_POLICY_RESTORE',
        `policy restore error: couldn't insert policy ${printPath(path)}: ${inserted.error.message}`,
      );
    }
    ctx.setTree(inserted.value);
  }

  const adopted: string[] = [];
  const handled = new Set<string>();
  // Taken over all at once: each is admitted before its first await, so the tree stays
  // consistent, and the holder answers the watches in one stream.
  const taken = await Promise.all(plan.adopt.map((adoptable) => adopt(ctx, adoptable)));
  for (const [i, adoptable] of plan.adopt.entries()) {
    const key = vmKey(adoptable.name);
    handled.add(key);
    const outcome = taken[i];
    if (outcome?.ok) {
      adopted.push(key);
      continue;
    }
    // Refused by admission (the host shrank), or gone from the holder meanwhile.
    failed.push({ name: key, reason: outcome?.error.message ?? 'not adopted' });
    const dismissed = await ctx.host.dismissTender(adoptable.held);
    if (dismissed.ok) cleanedUp.push(leftover('tender', dismissed.value));
  }
  for (const away of plan.exited) {
    handled.add(vmKey(away.name));
    if (!missing.has(away.image.digest)) await exitedWhileAway(ctx, away);
  }

  const order = state.unikernels
    .map((entry, index) => ({ entry, index }))
    .filter(({ entry }) => !handled.has(printName(entry.name)))
    .sort((a, b) => (a.entry.config.startup ?? 50) - (b.entry.config.startup ?? 50) || a.index - b.index);
  const running: string[] = [];
  const dropped: string[] = [];
  for (const { entry } of order) {
    const key = printName(entry.name);
    if (entry.name.label === null) {
      failed.push({ name: key, reason: TEXT.pathUsed });
      continue;
    }
    // Present with its size (checked above); its digest is checked when it is next read.
    const stored: ImageInput = { kind: 'stored', image: entry.image, verify: false };
    const run = await ctx.unikernels.start(entry.name as VmName, entry.config, stored, false, false);
    if (run.ok) running.push(key);
    else {
      failed.push({ name: key, reason: run.error.message });
      dropped.push(entry.image.digest);
    }
  }
  for (const f of failed) ctx.log.error(f, 'stored unikernel not restarted; dropped from the state');
  // What a start drops stays in the store until the next start, with petrel.state.started
  // naming it (Albatross #203: a host broken at boot must not lose every unikernel).
  ctx.book.keep(dropped);
  // The state is written anew only when this start changed it (or the journal is torn or
  // long): a start that adopts every guest writes nothing to the state directory. When the
  // write fails (a full disk) the start goes on: the stored state still reads back as it was,
  // and the next commit writes the whole state.
  const now = { ...ctx.currentState(), imported: state.imported };
  if (ctx.book.needsWrite(now)) {
    const shrinks = now.unikernels.length <= committed.value.state.unikernels.length;
    const saved = await ctx.book.replace(now, { freeing: shrinks });
    if (!saved.ok) {
      ctx.log.warn({ problem: saved.error.message }, 'could not write the state at start; kept as it was');
      return ok({ cleaned: cleanedUp, adopted, started: running, failed });
    }
  }
  // Exits dealt with are forgotten only now that the state says what became of them.
  for (const away of plan.exited) await ctx.host.dismissTender(away.held);
  if (committed.value.retire) {
    const retired = await ctx.host.retireLegacyState();
    if (!retired.ok) return retired;
    ctx.log.info(
      { backup: retired.value },
      'the earlier state file is now in the image store; kept as a backup',
    );
  }
  return ok({ cleaned: cleanedUp, adopted, started: running, failed });
}

/**
 * Takes over a running tender of a committed unikernel: admission into the tree, its console
 * (history from the holder's buffer), supervision. Files it runs from are not checked beyond
 * a warning: an adopted guest is never stopped for a file (Petrel (k)).
 */
async function adopt(ctx: RestoreContext, adoptable: Adoptable): Promise<Result<void, PetrelError>> {
  const { name, config, image, meta, held } = adoptable;
  const allocation = allocationOf(config);
  if (!allocation.ok) return allocation;
  const admitted = T.admitUnikernel(ctx.tree(), name, allocation.value);
  if (!admitted.ok) return admitted;
  ctx.setTree(admitted.value);
  const feed = consoleFeed(ctx.hub, name);
  ctx.hub.attach(name, ctx.unikernels.consoleLimit(name.path));
  const taken = await ctx.host.adoptTender(held, feed.sink);
  if (!taken.ok) {
    ctx.hub.detach(name);
    const released = T.releaseUnikernel(ctx.tree(), name);
    if (released.ok) ctx.setTree(released.value);
    return taken;
  }
  feed.attach(taken.value.reader);
  ctx.users.hold(image.digest);
  if (meta.jail !== undefined) await ctx.host.holdJailClaim(meta.jail);
  ctx.exits.supervise({
    name,
    config,
    image,
    imageLink: meta.image,
    fifo: meta.fifo,
    nets: meta.nets,
    jail: meta.jail === undefined ? null : ctx.host.holdJail(meta.jail, blockFiles(ctx, name, config)),
    tender: taken.value.tender,
    reader: taken.value.reader,
    transient: false,
    state: 'running',
  });
  const fields = { name: printName(name), tenderPid: held.pid };
  for (const problem of taken.value.problems)
    ctx.log.warn({ ...fields, problem }, 'adopted unikernel kept despite a missing file');
  ctx.log.info(fields, 'unikernel adopted');
  return ok(undefined);
}

/** The block files of a unikernel's configuration. */
function blockFiles(ctx: RestoreContext, name: VmName, config: KeptConfig): string[] {
  return config.blocks.flatMap((block) => {
    const file = ctx.host.blockPath(childName(name.path, blockLabel(block)));
    return file.ok ? [file.value] : [];
  });
}

/** A committed unikernel whose tender exited while no petreld was attached (Petrel (k)). */
async function exitedWhileAway(
  ctx: RestoreContext,
  { name, config, image, held, meta }: Adoptable,
): Promise<void> {
  const exit: TenderExit = {
    code: held.exit?.code ?? null,
    signal: (held.exit?.signal ?? null) as NodeJS.Signals | null,
    sentSignal: null,
  };
  const exitedAt = held.exitedAt?.getTime() ?? ctx.now();
  // Its jail's limits are read as for an exit seen live (the cgroups are still there).
  const limit =
    meta.jail === undefined
      ? null
      : await ctx.host.jailLimitHit({ id: meta.jail, limits: null, blocks: [] }, exit);
  const fields = {
    name: printName(name),
    tenderPid: held.pid,
    exit: describeExit(exit),
    ...(limit === null ? {} : { limit }),
    exitedAt: held.exitedAt,
  };
  ctx.log.info(fields, 'unikernel exited while petreld was away');
  await ctx.exits.afterExit({ name, config, image }, exit, {
    ranForMs: exitedAt - held.startedAt.getTime(),
    history: NO_HISTORY,
    fields,
    record: { exit: fields.exit, limit, at: exitedAt },
    elapsedMs: ctx.now() - exitedAt,
  });
}

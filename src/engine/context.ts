// What the engine's rooms (lifecycle.ts, supervision.ts, replace.ts, restore.ts) may read of it
// and the steps they may ask of it: a narrow view engine.ts hands out, never the Engine itself.

import type { Logger } from 'pino';
import type { ConsoleHub } from '../console/hub.js';
import type { ImageRef } from '../host/images.js';
import type { PetrelError, Result } from '../resources/errors.js';
import type { Name, Path } from '../resources/name.js';
import type { Tree } from '../resources/tree.js';
import type { TenderKind } from '../tender/elf.js';
import type { TenderExit } from '../tender/process.js';
import type { KeptConfig } from '../wire/petrel-state.js';
import type { Command } from '../wire/types.js';
import type { ExitRecord } from './exits.js';
import type { EngineHost } from './host-types.js';
import type { ImageUsers } from './image-users.js';
import type { RunningVm } from './launch.js';
import type { ImageInput } from './prepare.js';
import type { EngineResponse } from './replies.js';
import type { RestartHistory, RestartOptions } from './restart.js';
import type { RunningSet, Supervised } from './running.js';
import type { VmName } from './types.js';

/**
 * The engine as its rooms see it; each room takes a Pick of it, the members it needs.
 *
 * The writer stays single: the tree, the running set and the state journal change only inside a
 * task of the engine's queue. Every member that changes them (setTree, running.track and
 * running.untrack, users, commit, commitLogged, and the steps of `unikernels`, `exits` and
 * `replacements`, which use them) is called only from code running in the queue: a command's
 * task, a tender exit's or a delayed restart's task, each queued with `serial`, or restore.
 * Code outside the queue (a staging upload, a liveness check, a timer) reaches the state only
 * by queueing a task with `serial`.
 */
export interface EngineContext {
  readonly host: EngineHost;
  readonly hub: ConsoleHub;
  readonly log: Logger;
  /** SIGTERM → SIGKILL grace when stopping a unikernel (ms). */
  readonly stopTimeoutMs: number;
  readonly restart: RestartOptions;
  now(): number;
  /** The tenders this node runs unikernels with (known once the probe has said). */
  runtimes(): readonly TenderKind[];
  /** True once shutdown began: nothing is restarted, replaced or written any more. */
  shuttingDown(): boolean;
  /** The current resource tree. */
  tree(): Tree;
  /** The running unikernels by vmKey; track and untrack change it. Queue only. */
  readonly running: RunningSet;
  /** Who uses each stored image: what is held stays in the store. Queue only. */
  readonly users: ImageUsers;

  /** Runs a task in the queue, then removes stored images nothing uses any more. */
  serial<R>(task: () => Promise<R>): Promise<R>;
  /** Times and logs one command (step 6: its reply). */
  observe(
    name: Name,
    type: Command['type'],
    run: () => Promise<EngineResponse> | EngineResponse,
  ): Promise<EngineResponse>;

  /** Replaces the tree (the fleet reporter hears of it). Queue only. */
  setTree(tree: Tree): void;
  /** Step 5: appends what changed about these unikernels and policy paths to the journal. */
  commit(names: readonly VmName[], paths?: readonly Path[]): Promise<Result<void, PetrelError>>;
  /** commit, with a failure logged instead of returned. */
  commitLogged(names: readonly VmName[]): Promise<void>;

  // The steps the rooms ask of each other: through here, so that no room imports another.
  readonly unikernels: UnikernelSteps;
  readonly exits: ExitSteps;
  readonly replacements: ReplacementSteps;
}

/** The steps every start and stop of a unikernel takes (lifecycle.ts). Queue only. */
export interface UnikernelSteps {
  /** Plan, validate and launch a new unikernel, then commit it (unless `persist` is false). */
  start(
    name: VmName,
    config: KeptConfig,
    image: ImageInput,
    transient: boolean,
    persist?: boolean,
  ): Promise<Result<Supervised, PetrelError>>;
  /** Force-create and restart: the new configuration checked, the old one stopped, the new started. */
  swap(old: Supervised, config: KeptConfig, image: ImageInput): Promise<EngineResponse>;
  /** SIGTERM, SIGKILL after the grace, release. */
  stop(supervised: Supervised): Promise<TenderExit>;
  /** Its host artefacts, its place in the tree and in the running set, its image given back. */
  release(supervised: Supervised, exit: TenderExit): Promise<void>;
  /** How many console rings a unikernel at `path` may keep. */
  consoleLimit(path: Path): number;
}

/** What restart on failure is decided from (supervision.ts). */
export interface AfterExit {
  readonly ranForMs: number;
  readonly history: RestartHistory;
  readonly fields: Record<string, unknown>;
  /** The exit as unikernel-exits reports it. */
  readonly record: ExitRecord;
  /** How long ago it exited, when no petreld saw it (the back-off counts from the exit). */
  readonly elapsedMs?: number;
}

/** Exits and restart on failure (supervision.ts). Queue only. */
export interface ExitSteps {
  /** Tracks a running tender; its exit is handled in a task of the queue. */
  supervise(vm: RunningVm, history?: RestartHistory): Supervised;
  /** Restart on failure for an exit: drop it, retry without --name, or restart it later. */
  afterExit(
    vm: { name: VmName; config: KeptConfig; image: ImageRef },
    exit: TenderExit,
    context: AfterExit,
  ): Promise<void>;
  /** Cancels a restart waiting for its back-off; the name it was for, or null if none waited. */
  cancelPending(key: string): VmName | null;
  /** A new unikernel of this name: an earlier one's dropped exit is no longer its story. */
  forgetDropped(key: string): void;
}

/** Replacements whose check runs (replace.ts). Queue only. */
export interface ReplacementSteps {
  /** A destroy or create of the name gives its replacement up; true if one was being checked. */
  abandon(key: string): boolean;
  /** The new unikernel of a replacement being checked exited (`how`): the check fails at once. */
  newOneExited(key: string, how: string): void;
}

// Step 3 of a create transaction: the host effects that start a prepared unikernel, in
// Albatross' order (image, FIFO, taps, console, tender; semantics §5.3), each pushing its undo,
// and their release once the tender has exited (§5.8 order: image link, FIFO, taps). A received
// image enters the store here; the engine removes stored images nothing refers to any more.

import { consoleFeed } from '../console/feed.js';
import type { ConsoleHub } from '../console/hub.js';
import type { ConsoleReader } from '../console/reader.js';
import { UndoStack } from '../host/undo.js';
import { ok, type PetrelError, type Result } from '../resources/errors.js';
import { childName, printName } from '../resources/name.js';
import { deriveMac, tenderArgv } from '../tender/argv.js';
import type { TenderExit, TenderProcess } from '../tender/process.js';
import { parseMac } from '../wire/config.js';
import { configFingerprint, encodeMeta } from './adopt.js';
import { publishStep } from './events.js';
import type { EngineHost, HeldJail } from './host-types.js';
import { blockLabel, hostBridge, type Prepared } from './prepare.js';
import { TEXT } from './replies.js';
import type { NetAttachment, VmName } from './types.js';

/** `running` until a transaction or an exit takes it over; `released` once its artefacts are gone. */
export type VmState = 'running' | 'stopping' | 'released';

export interface RunningVm {
  readonly name: VmName;
  /** As the client sent it, without the image bytes: persisted, reused by restart. */
  readonly config: Prepared['config'];
  /** The stored image it runs (digest and size: info, get, restart). */
  readonly image: Prepared['image'];
  /** `<run-dir>/<name>.img`, the link to the stored image that the tender was given. */
  readonly imageLink: string;
  readonly fifo: string;
  readonly nets: readonly NetAttachment[];
  /** Its tender's jail (own id, namespaces, limits); null when it runs unjailed. */
  readonly jail: HeldJail | null;
  readonly tender: TenderProcess;
  readonly reader: ConsoleReader;
  /** Not written to the state file (the boot canary). */
  readonly transient: boolean;
  state: VmState;
}

export interface LaunchContext {
  readonly host: EngineHost;
  readonly hub: ConsoleHub;
  /** How many console rings the unikernel's path keeps (semantics §5.3 step 4). */
  readonly consoleLimit: number;
  /** Grace period when a launch is undone after its tender started (ms). */
  readonly stopTimeoutMs: number;
  readonly transient: boolean;
}

export interface Launched {
  readonly vm: RunningVm;
  /** Undo of every effect: run it if the transaction fails after the launch. */
  readonly undo: UndoStack;
}

/** The launch error and what undoing it could not clean (for the log). */
export interface LaunchFailure {
  readonly error: PetrelError;
  readonly leftovers: readonly PetrelError[];
}

export async function launch(
  ctx: LaunchContext,
  prepared: Prepared,
): Promise<Result<Launched, LaunchFailure>> {
  const { host, hub } = ctx;
  const { name, config } = prepared;
  const undo = new UndoStack();
  const fail = async (error: PetrelError): Promise<Result<never, LaunchFailure>> => ({
    ok: false,
    error: { error, leftovers: await undo.rollback() },
  });

  const key = printName(name);
  if (prepared.staged !== null) {
    const stored = await host.storeImage(prepared.staged);
    if (!stored.ok) return fail(stored.error);
    publishStep(key, 'image-stored');
  }
  const link = await host.linkImage(name, prepared.image.digest, prepared.file ?? undefined);
  if (!link.ok) return fail(link.error);
  const imageLink = undo.add('image link', link.value);
  publishStep(key, 'image-linked');

  const fifo = await host.makeFifo(name);
  if (!fifo.ok) return fail(fifo.error);
  const fifoPath = undo.add('fifo', fifo.value);
  publishStep(key, 'fifo-made');

  const blockFiles = config.blocks.map((block) => {
    const path = host.blockPath(childName(name.path, blockLabel(block)));
    return path.ok ? path.value : '';
  });
  // The jail's id first: the taps are made its own.
  const jailed = await host.makeJail({
    kind: prepared.kind,
    tender: prepared.tender,
    memoryMiB: config.memory,
    cpuids: config.cpuids,
    image: imageLink,
    blocks: blockFiles,
    nets: config.bridges.length,
  });
  if (!jailed.ok) return fail(jailed.error);
  const jail = jailed.value.value;
  if (jail !== null) {
    undo.push('jail', jailed.value.undo);
    publishStep(key, 'jail-taken');
  }

  const nets: NetAttachment[] = [];
  for (const net of config.bridges) {
    const tap = await host.createTap(hostBridge(net), jail?.id);
    if (!tap.ok) return fail(tap.error);
    const mac = net.mac ?? parseMac(deriveMac(net.netif, name));
    if (typeof mac !== 'string' && !mac.ok) return fail(mac.error);
    nets.push({
      netif: net.netif,
      bridge: hostBridge(net),
      tap: undo.add(`tap on ${hostBridge(net)}`, tap.value),
      mac: typeof mac === 'string' ? mac : mac.value,
    });
    publishStep(key, 'tap-created');
  }

  const feed = consoleFeed(hub, name);
  const reader = await host.openConsole(fifoPath, feed.sink);
  if (!reader.ok) return fail({ ...reader.error, message: TEXT.consoleFailed });
  feed.attach(reader.value);
  undo.push('console', async () => reader.value.close());
  publishStep(key, 'console-opened');
  hub.attach(name, ctx.consoleLimit);
  undo.push('console registration', async () => hub.detach(name));

  const argv = tenderArgv(
    {
      name,
      kind: prepared.kind,
      memory: config.memory,
      cpuids: config.cpuids,
      nets,
      blocks: config.blocks.map((block, i) => ({
        name: block.device,
        path: blockFiles[i] ?? '',
        sectorSize: block.sectorSize,
      })),
      addName: config.addName,
      args: config.arguments ?? [],
      image: imageLink,
    },
    { tender: prepared.tender },
  );
  if (!argv.ok) return fail(argv.error);

  // What a later petreld needs to take the tender over, kept with it by the holder.
  const meta = encodeMeta({
    fingerprint: configFingerprint(config, prepared.image.digest),
    digest: prepared.image.digest,
    image: imageLink,
    fifo: fifoPath,
    nets,
    ...(jail === null ? {} : { jail: jail.id }),
  });
  // Jailed, petrel-jail pins the CPUs (sched_setaffinity) instead of taskset.
  const command = jail === null ? argv.value : [...jail.prefix, ...argv.value.slice(3)];
  const tender = await host.spawnTender(command, fifoPath, name, meta, jail !== null);
  if (!tender.ok)
    return fail(
      tender.error.code === 'E_HOST_NOSPACE'
        ? tender.error
        : { ...tender.error, message: TEXT.consoleFailed, details: { cause: tender.error.message } },
    );
  undo.push('tender', async () => {
    await tender.value.stop(ctx.stopTimeoutMs);
    tender.value.forget();
  });
  reader.value.start();
  publishStep(key, 'tender-spawned');

  return ok({
    vm: {
      name,
      config,
      image: prepared.image,
      imageLink,
      fifo: fifoPath,
      nets,
      jail: jail === null ? null : { id: jail.id, limits: jail.limits, blocks: jail.blocks },
      tender: tender.value,
      reader: reader.value,
      transient: ctx.transient,
      state: 'running',
    },
    undo,
  });
}

/**
 * How long a console may keep draining after its tender exited before it is closed: long
 * enough for subscribers that read to take a large backlog (flow control pauses the FIFO for
 * them), bounded because a stalled one is closed after a second anyway.
 */
const DRAIN_MS = 10_000;

/**
 * Releases the host artefacts of a unikernel whose tender has exited: the console drains to its
 * end, then image link, FIFO and taps are removed (the stored image stays while the state or
 * another unikernel refers to it). Failures are returned for the log, never thrown.
 */
export async function releaseHost(host: EngineHost, hub: ConsoleHub, vm: RunningVm): Promise<PetrelError[]> {
  const drained = await Promise.race([
    vm.reader.done.then(() => true),
    new Promise<boolean>((resolve) => setTimeout(resolve, DRAIN_MS, false).unref()),
  ]);
  if (!drained) vm.reader.close();
  hub.detach(vm.name);
  const problems: PetrelError[] = [];
  const keep = (result: Result<void, PetrelError>) => {
    if (!result.ok) problems.push(result.error);
  };
  keep(await host.removeImageLink(vm.imageLink));
  keep(await host.removeFifo(vm.fifo));
  for (const net of vm.nets) keep(await host.removeTap(net.tap));
  if (vm.jail !== null) keep(await host.releaseJail(vm.jail));
  return problems;
}

export function describeExit(exit: TenderExit): string {
  if (exit.code !== null) return `exit ${exit.code}`;
  return `signal ${exit.signal}`;
}

export const vmKey = (name: VmName): string => printName(name);

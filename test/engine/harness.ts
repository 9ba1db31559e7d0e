// An engine on real temporary directories, a real network namespace with a bridge, and a host
// port that can be told to fail any step (fault injection), for the engine's tests.

import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { ConsoleHub } from '../../src/console/hub.js';
import { Engine, type EngineResponse } from '../../src/engine/engine.js';
import { createHost, type EngineHost, STATE_FILES } from '../../src/engine/host.js';
import { unwrap } from '../../src/resources/errors.js';
import { DEFAULT_ID_RANGE } from '../../src/resources/jail.js';
import { type Label, type Name, parseName, printName } from '../../src/resources/name.js';
import { loadPetrelState, type PetrelState } from '../../src/wire/petrel-state.js';
import { solo5Config } from '../../src/wire/shapes.js';
import type { Command, UnikernelConfig } from '../../src/wire/types.js';
import { testKvmDevice, testTender } from './guest.js';

export const name = (text: string) => unwrap(parseName(text)) as Name & { label: Label };

const NETNS_PREFIX = 'petrel-e-';
/** Namespaces this process made and has not removed yet; the exit handler removes them. */
const liveNamespaces = new Set<string>();
let sweptAndHooked = false;

/**
 * Namespaces are named `petrel-e-<pid>-<random>`: one left by a test process that is gone (killed
 * by a timeout or by hand, before its `close`) is removed here, and this process removes its own
 * at exit even when a test failed before closing its engine.
 */
function sweepAndHook(): void {
  if (sweptAndHooked) return;
  sweptAndHooked = true;
  const listed = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' }).stdout ?? '';
  for (const line of listed.split('\n')) {
    const ns = line.split(' ')[0] ?? '';
    const pid = /^petrel-e-(\d+)-[0-9a-f]+$/u.exec(ns)?.[1];
    if (pid !== undefined && !existsSync(`/proc/${pid}`)) spawnSync('ip', ['netns', 'del', ns]);
  }
  process.once('exit', () => {
    for (const ns of liveNamespaces) spawnSync('ip', ['netns', 'del', ns]);
  });
}

/** A namespace with bridges `br0` and `service`, removed with everything in it. */
export function makeNetns(): { name: string; destroy: () => void; links: () => string } {
  sweepAndHook();
  const ns = `${NETNS_PREFIX}${process.pid}-${randomBytes(3).toString('hex')}`;
  const ip = (...args: string[]) => {
    const r = spawnSync('ip', args, { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`ip ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  ip('netns', 'add', ns);
  liveNamespaces.add(ns);
  for (const br of ['br0', 'service']) {
    ip('-n', ns, 'link', 'add', br, 'type', 'bridge');
    ip('-n', ns, 'link', 'set', br, 'up');
  }
  return {
    name: ns,
    destroy: () => {
      spawnSync('ip', ['netns', 'del', ns]);
      liveNamespaces.delete(ns);
    },
    links: () =>
      ip('-n', ns, '-o', 'link', 'show')
        .split('\n')
        .map((l) => l.split(':')[1]?.trim().split('@')[0] ?? '')
        .filter((l) => l !== '')
        .sort()
        .join(' '),
  };
}

type Faults = Partial<Record<keyof EngineHost, number | ((...args: unknown[]) => boolean)>>;

/**
 * Wraps a host so that `faults[step]` makes that step fail: a number n fails the n-th call
 * (1-based) from now; a predicate fails the calls it accepts.
 */
export function faulty(host: EngineHost): { host: EngineHost; faults: Faults; calls: Map<string, number> } {
  const faults: Faults = {};
  const calls = new Map<string, number>();
  const wrapped = new Proxy(host, {
    get(target, prop: string) {
      const original = (target as unknown as Record<string, unknown>)[prop];
      if (typeof original !== 'function') return original;
      return (...args: unknown[]) => {
        const n = (calls.get(prop) ?? 0) + 1;
        calls.set(prop, n);
        const fault = faults[prop as keyof EngineHost];
        const fail =
          typeof fault === 'number' ? fault === n : typeof fault === 'function' ? fault(...args) : false;
        if (fail) {
          return Promise.resolve({
            ok: false,
            error: { code: 'E_INJECTED', message: `injected failure in ${prop}` },
          });
        }
        return (original as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { host: wrapped, faults, calls };
}

export interface TestEngine {
  engine: Engine;
  hub: ConsoleHub;
  runDir: string;
  stateDir: string;
  tender: string;
  /** The host the engine runs on, without the fault injection. */
  host: EngineHost;
  netns: ReturnType<typeof makeNetns>;
  faults: Faults;
  calls: Map<string, number>;
  /** Runs a command under a header name. */
  run(text: string, command: Command): Promise<EngineResponse>;
  /** Everything on the host the engine could have touched, for before/after comparisons. */
  snapshot(): Promise<string>;
  /** A fresh engine on the same directories and namespace (a daemon restart), options changed. */
  reopen(change?: Parameters<typeof makeEngine>[0]): Promise<TestEngine>;
  /**
   * The engine goes as a killed petreld would, as far as the host can tell: it lets go of the
   * holder without stopping anything and does nothing more (no timer fires, no exit is
   * handled); `close` then only removes what the test made.
   */
  crash(): Promise<void>;
  close(): Promise<void>;
}

export async function makeEngine(
  options: {
    stopTimeoutMs?: number;
    restart?: ConstructorParameters<typeof Engine>[0]['restart'];
    /** The hvt tender; default the test tender of guest.ts. */
    tenderHvt?: string;
    /** Jail the tenders (default, unless PETREL_TEST_JAIL=0); false for doubles that fork. */
    jail?: boolean;
    /** The KVM device a jail is given (`kvmDevice`); default testKvmDevice of guest.ts. */
    kvmDevice?: string;
    /** Where the engine logs; default silent (PETREL_TEST_LOG sets a level). */
    log?: pino.Logger;
    /** An Albatross state file start-up imports (`--import-albatross-state`). */
    importState?: { bytes: Uint8Array; source: string };
  } = {},
  shared?: { dir: string; netns: ReturnType<typeof makeNetns> },
): Promise<TestEngine> {
  const dir = shared?.dir ?? (await mkdtemp(path.join(tmpdir(), 'petrel-engine-')));
  const netns = shared?.netns ?? makeNetns();
  const runDir = path.join(dir, 'run');
  const stateDir = path.join(dir, 'state');
  const tender = options.tenderHvt ?? (await testTender(dir));
  const log = options.log ?? pino({ level: process.env.PETREL_TEST_LOG ?? 'silent' });
  const real = createHost({
    runDir,
    stateDir,
    // Tenders jailed as petreld jails them by default; PETREL_TEST_JAIL=0 runs them unjailed.
    jail:
      process.env.PETREL_TEST_JAIL === '0' || options.jail === false
        ? null
        : { ids: DEFAULT_ID_RANGE, allow: [], kvmDevice: options.kvmDevice ?? testKvmDevice },
    tapPrefix: 'ptap',
    netns: netns.name,
    tenders: { hvt: tender },
    stopTimeoutMs: 2_000,
  });
  const { host, faults, calls } = faulty(real);
  const hub = new ConsoleHub();
  const engine = new Engine({
    host,
    hub,
    log,
    stopTimeoutMs: options.stopTimeoutMs ?? 2_000,
    ...(options.restart === undefined ? {} : { restart: options.restart }),
  });
  let crashed = false;
  const restored = await engine.restore(
    null,
    options.importState === undefined ? {} : { importState: options.importState },
  );
  if (!restored.ok) throw new Error(`restore failed: ${restored.error.message}`);
  const self: TestEngine = {
    engine,
    hub,
    runDir,
    stateDir,
    tender,
    host: real,
    netns,
    faults,
    calls,
    run: (text, command) => engine.execute({ name: unwrap(parseName(text)), command }),
    async snapshot() {
      const list = async (d: string): Promise<string> => {
        const entries = await readdir(d, { withFileTypes: true, recursive: true }).catch(() => []);
        return (
          entries
            .filter((e) => !e.isDirectory())
            .map((e) => path.relative(dir, path.join(e.parentPath, e.name)))
            // Temporary files and spare FIFOs (src/host/fifo.ts FifoPool) are not artefacts.
            .filter((p) => !p.includes('.petrel-tmp-') && !p.includes('/.spare-'))
            .sort()
            .join(' ')
        );
      };
      const read = (file: string) => readFile(path.join(stateDir, file)).catch(() => Buffer.alloc(0));
      const state = Buffer.concat([await read(STATE_FILES.snapshot), await read(STATE_FILES.journal)]);
      return `links: ${netns.links()}\nrun: ${await list(runDir)}\nstate: ${await list(stateDir)}\nstate bytes: ${state.toString('hex')}`;
    },
    reopen: (change = {}) => makeEngine({ ...options, ...change }, { dir, netns }),
    async crash() {
      crashed = true;
      await engine.shutdown({ keepGuests: true });
    },
    async close() {
      try {
        if (!crashed) await engine.shutdown();
      } finally {
        if (shared === undefined) {
          netns.destroy();
          await rm(dir, { recursive: true, force: true });
        }
      }
    },
  };
  return self;
}

/** Petrel's committed state in `stateDir`, read as a restart reads it (snapshot + journal). */
export async function storedState(stateDir: string): Promise<PetrelState> {
  const read = (file: string) => readFile(path.join(stateDir, file)).catch(() => null);
  const loaded = loadPetrelState(await read(STATE_FILES.snapshot), await read(STATE_FILES.journal));
  if (!loaded.ok) throw new Error(`undecodable state in ${stateDir}: ${loaded.error.message}`);
  return loaded.value.state;
}

/** The names of the unikernels the committed state holds, sorted. */
export async function storedNames(stateDir: string): Promise<string[]> {
  return (await storedState(stateDir)).unikernels.map((u) => printName(u.name)).sort();
}

/** A create [21] command for a canary image. */
/** The host steps of a create, in the order a transaction takes them (faults are injected at each). */
export const CREATE_STEPS = [
  'stageImage',
  'storeImage',
  'linkImage',
  'makeFifo',
  'createTap',
  'openConsole',
  'spawnTender',
  'appendJournal',
] as const satisfies readonly (keyof EngineHost)[];

export function createCommand(config: UnikernelConfig, force = false): Command {
  return { type: 'unikernel-create', force, release: '2.7', config };
}

export async function canaryConfig(
  image: string,
  args: string[],
  change: Partial<UnikernelConfig> = {},
): Promise<UnikernelConfig> {
  return solo5Config(await readFile(image), { addName: false, memory: 4, arguments: args, ...change });
}

/**
 * Polls `check` every 20 ms until it holds (a tender exit, a restart; it may be async) or fails
 * after `ms`, saying `what` was not reached.
 */
export async function until(
  check: () => boolean | Promise<boolean>,
  ms = 10_000,
  what = 'condition',
): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} not reached`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Waits until `probe` finds something (not undefined), polling every 50 ms; throws naming `what` after `ms`. */
export async function waitFor<T>(probe: () => Promise<T | undefined>, what: string, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const found = await probe();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Waits until the console ring of `vm` holds a line containing `text`. */
export async function waitForLine(
  hub: ConsoleHub,
  vm: string,
  text: string,
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ring = hub.ring(name(vm));
    const lines = ring?.last(ring.capacity).map((e) => Buffer.from(e.line).toString()) ?? [];
    if (lines.some((l) => l.includes(text))) return;
    if (Date.now() > deadline)
      throw new Error(
        `no console line with ${JSON.stringify(text)} from ${vm}; saw ${JSON.stringify(lines)}`,
      );
    await new Promise((r) => setTimeout(r, 20));
  }
}

export const replyText = (r: EngineResponse): string =>
  r.kind === 'failure'
    ? `Failure: ${r.message}`
    : r.kind === 'reply' && r.reply.type === 'string'
      ? r.reply.text
      : r.kind;

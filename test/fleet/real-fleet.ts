// A fleet of real petreld processes on one machine for the fleet tests: one PKI (`petrel ca init`
// and delegations), one network namespace, per node its own state and run directories, tap
// prefix and --offer-memory, all reporting to the test's registry; `petrel fleet` run in-process
// or as separate processes. On a host without /dev/kvm, hvt nodes run on the fake-kvm TEST
// DOUBLE (the real petrel-hvt with a scripted /dev/kvm, test/engine/guest.ts); spt is real.

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type pg from 'pg';
import { fleetCommand } from '../../src/cli/commands/fleet.js';
import { Registry } from '../../src/fleet/registry.js';
import { type DaemonProcess, launchDaemon } from '../daemon/process.js';
import { repo, testTender } from '../engine/guest.js';
import { makeNetns } from '../engine/harness.js';
import { petrelCa } from '../tls/petreld.js';

export interface NodeSpec {
  /** `--runtimes`: `hvt`, `spt`, `hvt,spt` or `none`. */
  readonly runtimes: string;
  /** `--offer-memory` in MiB. */
  readonly offerMemory?: number;
  /** `--fleet-heartbeat`. Default 1s. */
  readonly heartbeat?: string;
}

export interface RealNode {
  readonly id: string;
  readonly runDir: string;
  readonly process: DaemonProcess;
  /** Stops it (it withdraws its report) and starts it again on the same directories. */
  restart(spec: NodeSpec): Promise<void>;
  stop(): Promise<void>;
}

export interface CliOutcome {
  readonly code: number;
  readonly out: string;
  readonly err: string;
}

export interface RealFleet {
  readonly dir: string;
  readonly registry: Registry;
  readonly nodes: Map<string, RealNode>;
  /** Starts petreld `id`; resolves once it is ready (it reported to the registry). */
  start(id: string, spec: NodeSpec): Promise<RealNode>;
  /** `petrel fleet ARGS... --db URL` in this process; `create` gets the TLS flags of `delegation`. */
  fleet(args: readonly string[], delegation?: string): Promise<CliOutcome>;
  /** The same as a separate `node dist/src/cli/petrel.js` process. */
  fleetProcess(args: readonly string[], delegation?: string): Promise<CliOutcome>;
  /** The names each node lists in its last report. */
  reported(): Promise<Record<string, string[]>>;
  /** Waits until the registry satisfies `condition` (reports arrive within a fraction of a second). */
  until(condition: () => Promise<boolean>, what: string, timeoutMs?: number): Promise<void>;
  /** Waits until the nodes' reports list all of `names`. */
  untilReported(names: readonly string[]): Promise<void>;
  /** Waits until no reservation is left (each unikernel counted once, in its node's report). */
  untilNoReservation(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A PKI with the delegations given (`petrel ca delegate LABEL ARGS...`), ready for nodes.
 * `close()` stops every node, removes the namespace and the directory.
 */
export async function realFleet(
  db: { readonly url: string; readonly pool: pg.Pool },
  delegations: Record<string, readonly string[]>,
): Promise<RealFleet> {
  const dir = await mkdtemp(path.join(tmpdir(), 'petrel-fleet-'));
  const netns = makeNetns();
  const nodes = new Map<string, RealNode>();
  const ca = path.join(dir, 'ca');
  const close = async () => {
    try {
      await Promise.all([...nodes.values()].map((n) => n.stop()));
    } finally {
      netns.destroy();
      await rm(dir, { recursive: true, force: true });
    }
  };
  try {
    await mkdir(ca);
    await petrelCa('init', '--dir', ca);
    for (const [label, args] of Object.entries(delegations))
      await petrelCa('delegate', label, ...args, '--dir', ca);
  } catch (e) {
    await close();
    throw e;
  }
  const tender = await testTender(dir);

  const launch = (id: string, index: number, spec: NodeSpec) =>
    launchDaemon(
      [
        ...['--state-dir', path.join(dir, id, 'state'), '--run-dir', path.join(dir, id, 'run')],
        ...[
          '--runtimes',
          spec.runtimes,
          '--tender-hvt',
          tender,
          '--tap-prefix',
          `pf${String.fromCharCode(97 + index)}`,
        ],
        ...['--tls-listen', '127.0.0.1:0', '--tls-ca', path.join(ca, 'cacert.pem')],
        ...['--tls-cert', path.join(ca, 'server.pem'), '--tls-key', path.join(ca, 'server.key')],
        ...['--fleet-db', db.url, '--node-id', id, '--fleet-heartbeat', spec.heartbeat ?? '1s'],
        ...(spec.offerMemory === undefined ? [] : ['--offer-memory', String(spec.offerMemory)]),
        ...['--stop-timeout', '2s', '--log-level', 'warn'],
      ],
      { PETREL_TEST_NETNS: netns.name, PETREL_FAKE_KVM: '1' },
    );

  const tlsFlags = (delegation: string) => [
    ...['--tls-ca', path.join(ca, 'cacert.pem'), '--tls-cert', path.join(ca, `${delegation}.pem`)],
    ...['--tls-key', path.join(ca, `${delegation}.key`)],
  ];
  const argv = (args: readonly string[], delegation?: string) => [
    ...args,
    '--db',
    db.url,
    ...(delegation === undefined ? [] : tlsFlags(delegation)),
  ];

  const fleet: RealFleet = {
    dir,
    registry: new Registry(db.pool),
    nodes,
    async start(id, spec) {
      const index = nodes.size;
      let daemon = await launch(id, index, spec);
      const node: RealNode = {
        id,
        runDir: path.join(dir, id, 'run'),
        get process() {
          return daemon;
        },
        async restart(next) {
          await daemon.stop();
          daemon = await launch(id, index, next);
        },
        stop: () => daemon.stop(),
      };
      nodes.set(id, node);
      return node;
    },
    async fleet(args, delegation) {
      let out = '';
      let err = '';
      const io = {
        stdout: (t: string | Uint8Array) => {
          out += typeof t === 'string' ? t : Buffer.from(t).toString();
        },
        stderr: (t: string) => {
          err += t;
        },
        readFile: async (file: string) => new Uint8Array(await readFile(file)),
        writeFile: async () => {},
      };
      const code = await fleetCommand.run(argv(args, delegation), io);
      return { code, out, err };
    },
    fleetProcess(args, delegation) {
      const child: ChildProcess = spawn(
        process.execPath,
        [path.join(repo, 'dist', 'src', 'cli', 'petrel.js'), 'fleet', ...argv(args, delegation)],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let out = '';
      let err = '';
      child.stdout?.on('data', (d) => {
        out += d;
      });
      child.stderr?.on('data', (d) => {
        err += d;
      });
      return new Promise((resolve) => child.once('close', (code) => resolve({ code: code ?? -1, out, err })));
    },
    async reported() {
      const rows = await db.pool.query<{ id: string; unikernels: string[] }>(
        'SELECT id, unikernels FROM nodes ORDER BY id',
      );
      return Object.fromEntries(rows.rows.map((r) => [r.id, [...r.unikernels].sort()]));
    },
    async until(condition, what, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (!(await condition())) {
        if (Date.now() > deadline) throw new Error(`not reached within ${timeoutMs} ms: ${what}`);
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    untilReported: (names) =>
      fleet.until(
        async () => {
          const listed = Object.values(await fleet.reported()).flat();
          return names.every((n) => listed.includes(n));
        },
        `the nodes report ${names.join(', ')}`,
      ),
    untilNoReservation: () =>
      fleet.until(async () => {
        const held = await fleet.registry.reservations();
        return held.ok && held.value.length === 0;
      }, 'every reservation ends'),
    close,
  };
  return fleet;
}

/** realFleet for one test: `test` runs on it, and the fleet is closed after it, whatever happens. */
export async function withRealFleet(
  db: Parameters<typeof realFleet>[0],
  delegations: Parameters<typeof realFleet>[1],
  test: (fleet: RealFleet) => Promise<void>,
): Promise<void> {
  const fleet = await realFleet(db, delegations);
  try {
    await test(fleet);
  } finally {
    await fleet.close();
  }
}

/** How many of `names` each node lists. */
export function countsOf(
  reported: Record<string, string[]>,
  names: readonly string[],
): Record<string, number> {
  return Object.fromEntries(
    Object.entries(reported).map(([id, list]) => [id, list.filter((n) => names.includes(n)).length]),
  );
}

// The Prometheus endpoint of petreld: off unless `metricsListen` is set, and
// meant for loopback. Usage per top-level path is read from the engine's tree at scrape time;
// command latencies and restarts arrive on the engine's diagnostics channels.

import diagnostics from 'node:diagnostics_channel';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino, { type Logger } from 'pino';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { ConsoleHub } from '../console/hub.js';
import type { Engine } from '../engine/engine.js';
import { COMMAND_CHANNEL, type CommandEvent, RESTART_CHANNEL } from '../engine/events.js';
import { fileSystemFree } from '../host/space.js';
import { Gate, type GateCounts, openGates } from '../net/gate.js';
import { admitHttp } from '../net/http.js';
import { printPath } from '../resources/name.js';
import * as T from '../resources/tree.js';
import {
  ADMISSION_DEFAULTS,
  type AdmissionSettings,
  admissionLimits,
  SMALL_HANDSHAKE,
} from '../tls/settings.js';

export interface Metrics {
  /** Records a boot canary's latency. */
  canaryBooted(runtime: string, ms: number): void;
  /** Listens behind the admission gate (`settings`: the configured admission keys). */
  listen(host: string, port: number, settings?: AdmissionSettings): Promise<AddressInfo>;
  close(): Promise<void>;
  /** The exposition text (tests). */
  render(): Promise<string>;
}

export function createMetrics(
  engine: Engine,
  state: { readonly stateDir?: string; readonly hub?: ConsoleHub } = {},
  log: Logger = pino({ level: 'silent' }),
): Metrics {
  const registry = new Registry();
  const { stateDir } = state;
  if (stateDir !== undefined) {
    new Gauge({
      name: 'petrel_state_free_bytes',
      help: 'Free bytes of the file system of the state directory (statfs, as an unprivileged writer sees it)',
      registers: [registry],
      async collect() {
        this.set(await fileSystemFree(stateDir).catch(() => Number.NaN));
      },
    });
  }
  /** Top-level paths and the root: the subtree each one accounts for. */
  const topLevel = () => {
    const paths = new Set<string>(['']);
    for (const [name] of T.foldUnikernels(engine.tree, [])) paths.add(name.path[0] ?? '');
    for (const [name] of T.foldPolicies(engine.tree, []))
      if (name.path.length > 0) paths.add(name.path[0] as string);
    return [...paths];
  };
  const perPath = (metric: string, help: string, value: (usage: T.Usage) => number) =>
    new Gauge({
      name: metric,
      help,
      labelNames: ['path'],
      registers: [registry],
      collect() {
        this.reset();
        for (const path of topLevel()) {
          const usage = T.usageAt(engine.tree, path === '' ? [] : ([path] as never));
          this.set({ path: path === '' ? ':' : `${printPath([path] as never)}:` }, value(usage));
        }
      },
    });
  perPath(
    'petrel_unikernels_running',
    'Running unikernels at or below the path (":" is the whole host)',
    (u) => u.vms,
  );
  perPath(
    'petrel_memory_used_mib',
    'Memory of running unikernels at or below the path, MiB',
    (u) => u.memory,
  );
  perPath('petrel_block_storage_mib', 'Block devices at or below the path, MiB', (u) => u.block);

  const { hub } = state;
  if (hub !== undefined) {
    new Gauge({
      name: 'petrel_console_subscribers',
      help: 'Console subscribers of the unikernels below the top-level path (":" all of them; the web API holds one per unikernel)',
      labelNames: ['path'],
      registers: [registry],
      collect() {
        this.reset();
        for (const [path, n] of hub.subscribersByTopPath()) this.set({ path }, n);
      },
    });
  }

  const latency = new Histogram({
    name: 'petrel_command_duration_seconds',
    help: 'Time from a command entering the engine to its reply',
    labelNames: ['command', 'outcome'],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [registry],
  });
  const restarts = new Counter({
    name: 'petrel_restarts_total',
    help: 'Restarts on failure scheduled',
    registers: [registry],
  });
  const canary = new Gauge({
    name: 'petrel_canary_boot_seconds',
    help: 'Boot latency of the last boot canary of each runtime (create to its console line)',
    labelNames: ['runtime'],
    registers: [registry],
  });

  // Admission of every listener in this process (src/net/gate.ts), read at scrape time.
  const pending = (name: string, help: string, value: (c: GateCounts) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['listener'],
      registers: [registry],
      collect() {
        this.reset();
        for (const gate of openGates) this.set({ listener: gate.counts().listener }, value(gate.counts()));
      },
    });
  pending('petrel_admission_pending', 'Connections pending admission now, per listener', (c) => c.pending);
  pending(
    'petrel_admission_pending_bytes',
    'Bytes read from connections pending admission',
    (c) => c.pendingBytes,
  );
  pending(
    'petrel_admission_pending_bytes_peak',
    'The most bytes pending connections had read at once since the listener opened',
    (c) => c.peakPendingBytes,
  );
  const total = (name: string, help: string, pick: (c: GateCounts) => Readonly<Record<string, number>>) =>
    new Counter({
      name,
      help,
      labelNames: ['listener', 'reason'],
      registers: [registry],
      collect() {
        this.reset();
        for (const gate of openGates) {
          const counts = gate.counts();
          for (const [reason, n] of Object.entries(pick(counts)))
            this.inc({ listener: counts.listener, reason }, n);
        }
      },
    });
  total('petrel_admission_refused_total', 'Connections refused, per listener and reason', (c) => c.refused);
  total(
    'petrel_admission_evicted_total',
    'Pending connections closed, per listener and reason',
    (c) => c.evicted,
  );

  const onCommand = (message: unknown) => {
    const event = message as CommandEvent;
    latency.observe({ command: event.command, outcome: event.outcome }, event.ms / 1000);
  };
  const onRestart = () => restarts.inc();
  diagnostics.subscribe(COMMAND_CHANNEL, onCommand);
  diagnostics.subscribe(RESTART_CHANNEL, onRestart);

  let server: Server | null = null;
  let gate: Gate | null = null;
  return {
    canaryBooted: (runtime, ms) => canary.set({ runtime }, ms / 1000),
    render: () => registry.metrics(),
    listen(host, port, settings = ADMISSION_DEFAULTS) {
      server = createServer((req, res) => {
        if (req.method !== 'GET' || req.url !== '/metrics') {
          res.writeHead(404, { 'content-type': 'text/plain' }).end('only GET /metrics\n');
          return;
        }
        registry.metrics().then(
          (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
          (e: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`${String(e)}\n`),
        );
      });
      const listening = server;
      gate = new Gate('metrics', admissionLimits(settings, SMALL_HANDSHAKE), log);
      admitHttp(listening, gate);
      return new Promise((resolve, reject) => {
        listening.once('error', reject);
        listening.listen(port, host, () => resolve(listening.address() as AddressInfo));
      });
    },
    async close() {
      diagnostics.unsubscribe(COMMAND_CHANNEL, onCommand);
      diagnostics.unsubscribe(RESTART_CHANNEL, onRestart);
      gate?.close();
      gate = null;
      const open = server;
      server = null;
      if (open === null) return;
      // Scrapers keep connections alive; they must not hold the shutdown.
      open.closeAllConnections();
      await new Promise<void>((resolve) => open.close(() => resolve()));
    },
  };
}

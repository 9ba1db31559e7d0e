// The daemon side of the registry: probe, write the whole report, repeat every heartbeat.
// `petreld --fleet-db URL --node-id ID --node-address HOST:PORT` builds one and starts it.
//
//   1. start() probes and reports once and resolves with that outcome; heartbeats follow
//      whatever it was (a registry that is down at start is retried, never fatal here).
//   2. Each heartbeat is scheduled when the previous report has finished: reports never overlap.
//   3. A probe that throws withdraws the report (empty capabilities): an unknown capability is
//      an absent one. A registry that cannot be written is logged; the stored report then ages
//      out of the freshness window by itself.
//   4. stop() cancels the timer, waits for a report in flight and, unless told otherwise,
//      withdraws, so placement stops choosing this node at once rather than after the window.

import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import type { CapabilityReport, FreeResources, ReportError } from './capabilities.js';
import type { DbError } from './db.js';
import { type NodeError, parseNodeAddress, parseNodeId } from './node.js';
import type { Registry } from './registry.js';

/** What the reporter writes to: a Registry, or a fake in tests. */
export type ReportSink = Pick<Registry, 'report' | 'withdraw'>;

/** The pino methods the reporter uses. */
export interface ReporterLogger {
  debug(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

export interface ReporterOptions {
  readonly registry: ReportSink;
  /** `--node-id`. */
  readonly nodeId: string;
  /** `--node-address HOST:PORT`: where clients reach this node's TLS endpoint. */
  readonly address: string;
  /** Probes the host afresh (issue 8's capability probe). */
  readonly probe: () => Promise<CapabilityReport>;
  /** What running unikernels use, subtracted from the probed totals. Default: nothing. */
  readonly usage?: () => FreeResources;
  /** `--fleet-heartbeat`. Default 10 000 ms. */
  readonly heartbeatMs?: number;
  /** Default: no logging. */
  readonly logger?: ReporterLogger;
}

export type ReporterError = PetrelError<'E_FLEET_PROBE' | 'E_FLEET_STOPPED'> | ReportError | DbError;

/** The default heartbeat (`--fleet-heartbeat`). */
export const DEFAULT_HEARTBEAT_MS = 10_000;

const silent: ReporterLogger = { debug: () => {}, warn: () => {}, error: () => {} };

/** Checks the options given on the command line. */
export function createReporter(options: ReporterOptions): Result<FleetReporter, NodeError | PetrelError> {
  const id = parseNodeId(options.nodeId);
  if (!id.ok) return id;
  const address = parseNodeAddress(options.address);
  if (!address.ok) return address;
  const heartbeatMs = options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
  if (!(Number.isSafeInteger(heartbeatMs) && heartbeatMs > 0)) {
    return err('E_FLEET_HEARTBEAT', `invalid heartbeat ${heartbeatMs} ms (a positive integer)`);
  }
  return ok(new FleetReporter({ ...options, heartbeatMs }));
}

export class FleetReporter {
  readonly #options: ReporterOptions & { readonly heartbeatMs: number };
  readonly #log: ReporterLogger;
  #timer: NodeJS.Timeout | undefined;
  #inFlight: Promise<Result<void, ReporterError>> | undefined;
  #started = false;
  #stopped = false;
  #reports = 0;

  /** Prefer createReporter, which checks the options. */
  constructor(options: ReporterOptions & { readonly heartbeatMs: number }) {
    this.#options = options;
    this.#log = options.logger ?? silent;
  }

  /** Successful reports so far. */
  get reports(): number {
    return this.#reports;
  }

  /** Reports once, then every heartbeat until stop(). */
  async start(): Promise<Result<void, ReporterError>> {
    // A second start() reports once more but does not add a second heartbeat.
    const again = this.#started;
    this.#started = true;
    const first = await this.reportNow();
    if (!again) this.#schedule();
    return first;
  }

  /** Probes and writes one report now (after the one in flight, if any). */
  reportNow(): Promise<Result<void, ReporterError>> {
    // After stop() a report would undo the withdrawal.
    if (this.#stopped) return Promise.resolve(err('E_FLEET_STOPPED', 'the fleet reporter was stopped'));
    const previous = this.#inFlight ?? Promise.resolve();
    const next = previous.then(() => this.#reportOnce());
    this.#inFlight = next;
    void next.finally(() => {
      if (this.#inFlight === next) this.#inFlight = undefined;
    });
    return next;
  }

  /** Stops the heartbeat; `withdraw` (default true) empties the stored report afterwards. */
  async stop(options: { readonly withdraw?: boolean } = {}): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#inFlight;
    if (options.withdraw ?? true) {
      const { registry, nodeId, address } = this.#options;
      const withdrawn = await registry.withdraw(nodeId, address);
      if (!withdrawn.ok)
        this.#log.warn({ node: nodeId, code: withdrawn.error.code }, withdrawn.error.message);
    }
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      void this.reportNow().then(() => this.#schedule());
    }, this.#options.heartbeatMs);
    // The heartbeat alone must not keep the daemon alive.
    this.#timer.unref();
  }

  async #reportOnce(): Promise<Result<void, ReporterError>> {
    const { registry, nodeId, address, probe, usage } = this.#options;
    let report: CapabilityReport;
    let used: FreeResources | undefined;
    try {
      report = await probe();
      used = usage?.();
    } catch (e) {
      const message = `capability probe failed: ${e instanceof Error ? e.message : String(e)}`;
      this.#log.error({ node: nodeId, code: 'E_FLEET_PROBE' }, `${message}; withdrawing the report`);
      await registry.withdraw(nodeId, address);
      return err('E_FLEET_PROBE', message);
    }
    const free: FreeResources = {
      cpus: Math.max(0, report.cpus - (used?.cpus ?? 0)),
      memoryMiB: Math.max(0, report.memoryMiB - (used?.memoryMiB ?? 0)),
      blockStorageMiB: Math.max(0, report.blockStorageMiB - (used?.blockStorageMiB ?? 0)),
    };
    const written = await registry.report(nodeId, address, report, free);
    if (!written.ok) {
      this.#log.warn({ node: nodeId, code: written.error.code }, written.error.message);
      return written;
    }
    this.#reports += 1;
    this.#log.debug({ node: nodeId, free }, 'fleet report written');
    return written;
  }
}

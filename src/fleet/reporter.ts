// The daemon side of the registry: probe, write the whole report, repeat every heartbeat; and
// re-send the capacity promptly after every committed change on the node.
// `petreld --fleet-db URL --node-id ID --node-address HOST:PORT` builds one and starts it.
//
//   1. start() probes and reports once and resolves with that outcome; heartbeats follow
//      whatever it was (a registry that is down at start is retried, never fatal here).
//   2. Each heartbeat is scheduled when the previous report has finished: reports never overlap.
//   3. A probe that throws withdraws the report (empty capabilities): an unknown capability is
//      an absent one. A registry that cannot be written is logged; the stored report then ages
//      out of the freshness window by itself.
//   4. changed() (the engine committed a change) writes the capacity alone, without probing:
//      coalesced, at most one write per `changeIntervalMs`, always read when it is written, so
//      the last change is never lost and a burst of changes costs one write.
//   5. stop() cancels the timers, waits for a write in flight and, unless told otherwise,
//      withdraws, so placement stops choosing this node at once rather than after the window.

import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import {
  type CapabilityReport,
  type NodeCapacity,
  type ReportError,
  type TenderKind,
  wholeHost,
} from './capabilities.js';
import type { DbError } from './db.js';
import { type NodeError, parseNodeAddress, parseNodeId } from './node.js';
import type { Registry } from './registry.js';

/** What the reporter writes to: a Registry, or a fake in tests. */
export type ReportSink = Pick<Registry, 'report' | 'withdraw' | 'updateCapacity'>;

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
  /** `https://HOST:PORT` where browsers reach this node's web API (webAddress); '' or none: no web API. */
  readonly webOrigin?: string;
  /** Probes the host afresh (the capability probe petreld runs at start). */
  readonly probe: () => Promise<CapabilityReport>;
  /** `--runtimes`: what the node hosts (empty for none); it serves those the probe finds usable. */
  readonly runtimes: readonly TenderKind[];
  /** The node's capacity now (its root policy minus what is allocated). Default: the probed
   * totals with nothing running, and changed() writes nothing. */
  readonly capacity?: () => NodeCapacity;
  /** `--fleet-heartbeat`. Default 10 000 ms. */
  readonly heartbeatMs?: number;
  /** Shortest time between two capacity writes after changes. Default 250 ms. */
  readonly changeIntervalMs?: number;
  /** Default: no logging. */
  readonly logger?: ReporterLogger;
}

export type ReporterError = PetrelError<'E_FLEET_PROBE' | 'E_FLEET_STOPPED'> | ReportError | DbError;

/** The default heartbeat (`--fleet-heartbeat`). */
export const DEFAULT_HEARTBEAT_MS = 10_000;
/** At most four capacity writes a second, however fast the node changes. */
export const DEFAULT_CHANGE_INTERVAL_MS = 250;

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
  const changeIntervalMs = options.changeIntervalMs ?? DEFAULT_CHANGE_INTERVAL_MS;
  if (!(Number.isSafeInteger(changeIntervalMs) && changeIntervalMs >= 0)) {
    return err(
      'E_FLEET_HEARTBEAT',
      `invalid change interval ${changeIntervalMs} ms (a non-negative integer)`,
    );
  }
  return ok(new FleetReporter({ ...options, heartbeatMs, changeIntervalMs }));
}

type Checked = ReporterOptions & { readonly heartbeatMs: number; readonly changeIntervalMs: number };

export class FleetReporter {
  readonly #options: Checked;
  readonly #log: ReporterLogger;
  #timer: NodeJS.Timeout | undefined;
  #changeTimer: NodeJS.Timeout | undefined;
  #inFlight: Promise<Result<void, ReporterError>> | undefined;
  #started = false;
  #stopped = false;
  #reports = 0;
  #capacityWrites = 0;
  /** performance.now() when the capacity was last read for a write (a report or an update). */
  #capacityReadAt = Number.NEGATIVE_INFINITY;

  /** Prefer createReporter, which checks the options. */
  constructor(options: Checked) {
    this.#options = options;
    this.#log = options.logger ?? silent;
  }

  /** Successful full reports so far. */
  get reports(): number {
    return this.#reports;
  }

  /** Successful capacity-only writes so far. */
  get capacityWrites(): number {
    return this.#capacityWrites;
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
    return this.#enqueue(() => this.#reportOnce());
  }

  /**
   * Something the capacity depends on changed (the engine committed): write the capacity soon,
   * without probing (see 4. above). Before start() the first report will carry it anyway.
   */
  changed(): void {
    if (!this.#started || this.#stopped || this.#changeTimer !== undefined) return;
    if (this.#options.capacity === undefined) return;
    const wait = Math.max(0, this.#capacityReadAt + this.#options.changeIntervalMs - performance.now());
    this.#changeTimer = setTimeout(() => {
      this.#changeTimer = undefined;
      void this.#enqueue(() => this.#updateCapacity());
    }, wait);
    this.#changeTimer.unref();
  }

  #enqueue(write: () => Promise<Result<void, ReporterError>>): Promise<Result<void, ReporterError>> {
    // After stop() a write would undo the withdrawal.
    if (this.#stopped) return Promise.resolve(err('E_FLEET_STOPPED', 'the fleet reporter was stopped'));
    const previous = this.#inFlight ?? Promise.resolve();
    const next = previous.then(() =>
      this.#stopped ? err('E_FLEET_STOPPED', 'the fleet reporter was stopped') : write(),
    );
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
    clearTimeout(this.#changeTimer);
    this.#changeTimer = undefined;
    await this.#inFlight;
    if (options.withdraw ?? true) {
      const { registry, nodeId, address } = this.#options;
      // Stopping: the web API goes with the node, so its origin is withdrawn too.
      const withdrawn = await registry.withdraw(nodeId, address, '');
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
    const { registry, nodeId, address, probe, runtimes, capacity } = this.#options;
    let report: CapabilityReport;
    let now: NodeCapacity;
    try {
      report = await probe();
      this.#capacityReadAt = performance.now();
      now = capacity?.() ?? wholeHost(report);
    } catch (e) {
      const message = `capability probe failed: ${e instanceof Error ? e.message : String(e)}`;
      this.#log.error({ node: nodeId, code: 'E_FLEET_PROBE' }, `${message}; withdrawing the report`);
      await registry.withdraw(nodeId, address, this.#options.webOrigin ?? '');
      return err('E_FLEET_PROBE', message);
    }
    const webOrigin = this.#options.webOrigin ?? '';
    const written = await registry.report(nodeId, address, { ...report, runtimes }, now, webOrigin);
    if (!written.ok) {
      this.#log.warn({ node: nodeId, code: written.error.code }, written.error.message);
      return written;
    }
    this.#reports += 1;
    this.#log.debug({ node: nodeId, free: now.free }, 'fleet report written');
    return written;
  }

  async #updateCapacity(): Promise<Result<void, ReporterError>> {
    const { registry, nodeId, capacity } = this.#options;
    if (capacity === undefined) return ok(undefined);
    this.#capacityReadAt = performance.now();
    const now = capacity();
    const written = await registry.updateCapacity(nodeId, now);
    if (!written.ok) {
      this.#log.warn({ node: nodeId, code: written.error.code }, written.error.message);
      return written;
    }
    // No row yet: the first report failed; the next heartbeat writes the whole report.
    if (written.value) this.#capacityWrites += 1;
    this.#log.debug({ node: nodeId, free: now.free, written: written.value }, 'fleet capacity written');
    return ok(undefined);
  }
}

// The composition root of petreld: probe and preflight (hard-fail naming what is missing), the
// engine restored from the state file, the local sockets, the TLS endpoint, the boot canary,
// then `ready`. Built separately from the CLI so tests start daemons in-process.

import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { ConsoleHub } from '../console/hub.js';
import { Engine } from '../engine/engine.js';
import { createHost, type JailInfo } from '../engine/host.js';
import { countLeftovers } from '../engine/leftovers.js';
import type { FleetReporter } from '../fleet/reporter.js';
import { loadAllocator } from '../host/allocator.js';
import { writeFileAtomic } from '../host/files.js';
import { bundledNativePath } from '../host/native.js';
import { lockStateDir, type StateLock } from '../host/statelock.js';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import { printIdRange } from '../resources/jail.js';
import { MAX_VMS, makePolicy, type Policy } from '../resources/policy.js';
import { type LazyStatsService, lazyStatsService } from '../stats/lazy.js';
import { type CapabilityReport, type ProbeOptions, probeHost } from '../tender/probe.js';
import type { TlsEndpoint, TlsEndpointOptions } from '../tls/endpoint.js';
import type { Service } from '../tls/proxy.js';
import type { AdmissionSettings } from '../tls/settings.js';
import type { WebServer } from '../web/server.js';
import { type CanaryResult, runCanary } from './canary.js';
import type { PetrelConfig, Runtime } from './config.js';
import type { Metrics } from './metrics.js';
import { duplexPair } from './pair.js';
import { type CheckResult, hostedRuntimes, preflight, preflightError, probeOptions } from './preflight.js';
import { type LocalSockets, listenLocalSockets } from './sockets.js';

export interface DaemonOptions {
  readonly config: PetrelConfig;
  readonly log: Logger;
  /** Boot canary images per runtime. Default `native/build/canary.<runtime>` of this package. */
  readonly canaryImages?: Partial<Record<Runtime, string>>;
  /** Network namespace for taps, bridges and tenders (tests). */
  readonly netns?: string;
  /**
   * The host probe. Default: the real one (src/tender/probe.ts). Tests on hosts without KVM
   * wrap it to stand in for /dev/kvm, together with the fake-kvm tender.
   */
  readonly probe?: (options: ProbeOptions) => Promise<CapabilityReport>;
}

export interface StartReport {
  readonly checks: readonly CheckResult[];
  readonly report: CapabilityReport;
  /** One boot canary per configured runtime, in the order of `--runtimes`. */
  readonly canaries: readonly (CanaryResult & { readonly runtime: Runtime })[];
  readonly restored: {
    /** Unikernels whose tenders ran on while no petreld did, taken over (Petrel (k)). */
    readonly adopted: readonly string[];
    readonly started: readonly string[];
    readonly failed: readonly { name: string; reason: string }[];
  };
  readonly tls: { readonly address: string; readonly port: number } | null;
  readonly metrics: { readonly address: string; readonly port: number } | null;
  /** The web API's listener (`webListen`). */
  readonly web: { readonly address: string; readonly port: number } | null;
  /** Process start (or `start()` call) to ready, ms. */
  readonly readyMs: number;
}

export interface StopOptions {
  /**
   * Stop every unikernel (as Albatross does) instead of leaving them running under the holder
   * for the next start to adopt. Default: the configuration's `stopGuestsOnExit`.
   */
  readonly stopGuests?: boolean;
}

export interface Daemon {
  readonly engine: Engine;
  readonly hub: ConsoleHub;
  start(): Promise<Result<StartReport, PetrelError>>;
  stop(options?: StopOptions): Promise<void>;
}

/**
 * The policy of `:` describes this host (albatross-semantics.md §4.6): what the probe found, with
 * memory lowered to `offerMemory` when that is less (the node offers less than the host).
 */
export function rootPolicy(
  report: CapabilityReport,
  offerMemory: number | null = null,
): Result<Policy, PetrelError> {
  return makePolicy({
    vms: MAX_VMS,
    cpuids: Array.from({ length: report.cpus }, (_, i) => i),
    memory: offerMemory === null ? report.memoryMiB : Math.min(report.memoryMiB, offerMemory),
    block: report.blockStorageMiB,
    bridges: report.bridges.map((b) => b.name),
  });
}

/** What node.json says of the jail: off, or the ids and the limits in force (`petrel node info`). */
function nodeJail(config: PetrelConfig, info: JailInfo | null) {
  if (!config.jail || info === null) return { enabled: false };
  return { enabled: true, ids: printIdRange(info.ids), limits: info.limits, cgroups: info.cgroups };
}

export function createDaemon(options: DaemonOptions): Daemon {
  const { config, log } = options;
  const hub = new ConsoleHub({ maxSubscribers: config.maxSubscribers, log });
  const host = createHost({
    runDir: config.runDir,
    stateDir: config.stateDir,
    tapPrefix: config.tapPrefix,
    maxImageBytes: config.maxFrameBytes,
    stopTimeoutMs: config.stopTimeout,
    consoleBufferBytes: config.consoleBuffer,
    reserveBytes: config.stateReserve,
    minFree: config.stateMinFree,
    jail: config.jail ? { ids: config.jailIds, allow: config.jailAllow, kvmDevice: config.kvmDevice } : null,
    tenders: {
      ...(config.tenderHvt === null ? {} : { hvt: config.tenderHvt }),
      ...(config.tenderSpt === null ? {} : { spt: config.tenderSpt }),
    },
    ...(options.netns === undefined ? {} : { netns: options.netns }),
  });
  const engine = new Engine({
    host,
    hub,
    log,
    stopTimeoutMs: config.stopTimeout,
    // With runtimes = "auto" none until the probe has said (see start()).
    runtimes: config.runtimes === 'auto' ? [] : config.runtimes,
    // The fleet registry hears of every change of the tree (the reporter coalesces them).
    onTreeChange: () => fleet?.reporter.changed(),
    compactStateBytes: config.stateJournalMax,
    restart: {
      backoffBaseMs: config.restartBackoffBase,
      backoffMaxMs: config.restartBackoffMax,
      stableAfterMs: config.restartStableAfter,
      maxCount: config.restartMaxCount,
      windowMs: config.restartWindow,
    },
  });
  let sockets: LocalSockets | null = null;
  let tls: TlsEndpoint | null = null;
  let web: WebServer | null = null;
  let fleet: { reporter: FleetReporter; pool: { end(): Promise<void> } } | null = null;
  let metrics: Metrics | null = null;
  let stats: LazyStatsService | null = null;
  let lock: StateLock | null = null;
  const probe = options.probe ?? probeHost;
  const probeNow = () =>
    probe(probeOptions(config, options.netns === undefined ? {} : { netns: options.netns }));

  async function stop(options: StopOptions = {}): Promise<void> {
    await metrics?.close();
    metrics = null;
    await fleet?.reporter.stop();
    await fleet?.pool.end();
    fleet = null;
    await web?.close();
    web = null;
    await tls?.close();
    tls = null;
    stats?.close();
    stats = null;
    await sockets?.close();
    sockets = null;
    await engine.shutdown({ keepGuests: !(options.stopGuests ?? config.stopGuestsOnExit) });
    await lock?.release();
    lock = null;
  }

  async function start(): Promise<Result<StartReport, PetrelError>> {
    const began = performance.now();
    const allocator = loadAllocator();
    if (allocator !== null)
      log.warn({ detail: allocator }, 'memory freed after transfers stays with petreld');
    const probe = options.probe ?? probeHost;
    const report = await probe(
      probeOptions(config, options.netns === undefined ? {} : { netns: options.netns }),
    );
    const results = await preflight(config, report);
    for (const check of results) {
      // A WARN (a limit such as hvt guests that may not use SSE) is said at warn level, with its fix.
      if (check.status === 'PASS') {
        log.info({ check: check.name, status: check.status, detail: check.detail }, 'preflight');
      } else {
        log.warn(
          { check: check.name, status: check.status, detail: check.detail, fix: check.fix },
          'preflight',
        );
      }
    }
    const fatal = preflightError(results);
    if (fatal !== null) return { ok: false, error: fatal };
    const runtimes = hostedRuntimes(config, results);
    engine.hostRuntimes(runtimes);

    const root = rootPolicy(report, config.offerMemory);
    if (!root.ok) return root;
    const probedMs = Math.round(performance.now() - began);
    const locked = await lockStateDir(config.stateDir, config.runDir);
    if (!locked.ok) return locked;
    lock = locked.value;
    const importState = await readImportFile(config.importAlbatrossState);
    if (!importState.ok) {
      await stop();
      return importState;
    }
    const restored = await engine.restore(
      root.value,
      importState.value === null ? {} : { importState: importState.value },
    );
    if (!restored.ok) {
      await stop();
      return restored;
    }
    const restoredMs = Math.round(performance.now() - began);
    // One line for the whole clean-up (a crash can leave dozens of cgroups), each item at debug;
    // what could not be removed is a warning of its own.
    const { cleaned } = restored.value;
    if (cleaned.length > 0) log.info({ leftovers: countLeftovers(cleaned) }, 'start-up cleanup');
    for (const { kind, what, failed } of cleaned)
      if (failed) log.warn({ kind, leftover: what }, 'start-up cleanup could not remove a leftover');
      else log.debug({ kind, leftover: what }, 'start-up cleanup');

    stats = lazyStatsService({
      source: engine,
      interval: config.statsInterval,
      maxQueue: config.maxSubscriberQueue,
      log,
      ...(options.netns === undefined ? {} : { netns: options.netns }),
    });
    sockets = await listenLocalSockets({
      runDir: config.runDir,
      engine,
      hub,
      log,
      maxFrameBytes: config.maxFrameBytes,
      maxSubscriberQueue: config.maxSubscriberQueue,
      maxConnections: config.maxLocalConnections,
      idleTimeoutMs: config.localIdleTimeout,
      frameStallMs: config.frameStallTimeout,
      stats,
    });

    // The listeners petreld hosts reach its handlers by in-memory connections (see openTls).
    const openService = (service: Service): Duplex | null => {
      if (sockets === null) return null;
      const [listenerEnd, daemonEnd] = duplexPair();
      sockets.attach(service === 'vmmd' ? 'engine' : service, daemonEnd);
      return listenerEnd;
    };
    let tlsAddress: StartReport['tls'] = null;
    if (config.tlsListen !== null) {
      const opened = await openTls(config, log, openService);
      if (!opened.ok) {
        await stop({ stopGuests: false });
        return opened;
      }
      tls = opened.value;
      const address = await tls.listen();
      tlsAddress = { address: address.address, port: address.port };
    }

    let webAddress: StartReport['web'] = null;
    if (config.webListen !== null) {
      const opened = await openWeb(config, log, openService);
      if (!opened.ok) {
        await stop({ stopGuests: false });
        return opened;
      }
      web = opened.value;
      const address = await web.listen();
      webAddress = { address: address.address, port: address.port };
    }

    let metricsAddress: StartReport['metrics'] = null;
    if (config.metricsListen !== null) {
      // Optional parts are loaded only when configured: they cost start-up time otherwise.
      const { createMetrics } = await import('./metrics.js');
      metrics = createMetrics(engine, { stateDir: config.stateDir, hub }, log);
      const address = await metrics.listen(
        config.metricsListen.host,
        config.metricsListen.port,
        admissionSettings(config),
      );
      metricsAddress = { address: address.address, port: address.port };
      log.info({ metrics: metricsAddress }, 'metrics endpoint listening');
    }

    const canaries: (CanaryResult & { runtime: Runtime })[] = [];
    for (const runtime of runtimes) {
      const image = options.canaryImages?.[runtime] ?? bundledNativePath(`canary.${runtime}`);
      if (image === null) {
        await stop({ stopGuests: false });
        return err('E_CANARY', `boot canary failed: the canary image canary.${runtime} is not installed`);
      }
      const booted = await runCanary({ engine, hub, image, deadlineMs: config.canaryDeadline });
      if (!booted.ok && booted.error.details?.noSpace === true) {
        // A full run directory: nothing can be created, but the adopted guests must stay
        // manageable (info, console, destroy). Every other canary failure still refuses.
        const { runDir, free } = booted.error.details as { runDir?: string; free?: number };
        log.warn(
          { runtime, runDir, free, problem: booted.error.message },
          'boot canary not run: no space in the run directory; petreld starts, creates are refused until there is',
        );
        continue;
      }
      if (!booted.ok) {
        await stop({ stopGuests: false });
        return err('E_CANARY', `${runtime} ${booted.error.message}`);
      }
      canaries.push({ runtime, ...booted.value });
      metrics?.canaryBooted(runtime, booted.value.bootMs);
      log.info(
        { runtime, bootMs: booted.value.bootMs, tenderPeakRssKiB: booted.value.tenderPeakRssKiB },
        'boot canary ran',
      );
    }

    const node = await writeFileAtomic(
      path.join(config.runDir, 'node.json'),
      Buffer.from(
        `${JSON.stringify({ report, runtimes, canaries, jail: nodeJail(config, host.jailInfo()) }, null, 2)}\n`,
      ),
      { mode: 0o644 },
    );
    // A full run directory does not stop a start that has adopted its guests: said, not fatal.
    if (!node.ok) log.warn({ problem: node.error.message }, 'could not write node.json');
    if (config.fleetDb !== null) {
      const joined = await joinFleet(config, runtimes, engine, probeNow, log, tlsAddress, webAddress);
      if (!joined.ok) {
        await stop({ stopGuests: false });
        return joined;
      }
      fleet = joined.value;
    }

    const readyMs = Math.round(performance.now() - began);
    log.info(
      {
        readyMs,
        probedMs,
        restoredMs,
        runtimes,
        adopted: restored.value.adopted.length,
        started: restored.value.started.length,
        failed: restored.value.failed.length,
        tls: tlsAddress,
      },
      'petreld ready',
    );
    return ok({
      checks: results,
      report,
      canaries,
      restored: {
        adopted: restored.value.adopted,
        started: restored.value.started,
        failed: restored.value.failed,
      },
      tls: tlsAddress,
      metrics: metricsAddress,
      web: webAddress,
      readyMs,
    });
  }

  return { engine, hub, start, stop };
}

/** The Albatross state file `--import-albatross-state` names, if any. */
async function readImportFile(
  file: string | null,
): Promise<Result<{ bytes: Uint8Array; source: string } | null, PetrelError>> {
  if (file === null) return ok(null);
  try {
    return ok({ bytes: await readFile(file), source: file });
  } catch (cause) {
    return err('E_STATE_IMPORT', `import: cannot read ${file}: ${(cause as Error).message}`);
  }
}

/** The admission keys of the configuration, for every network listener petreld opens. */
export function admissionSettings(config: PetrelConfig): AdmissionSettings {
  return {
    maxPendingConnections: config.maxPendingConnections,
    maxPendingPerAddress: config.maxPendingPerAddress,
    maxPendingBytes: config.maxPendingBytes,
    maxPendingBytesPerAddress: config.maxPendingBytesPerAddress,
    firstByteTimeoutMs: config.firstByteTimeout,
    clientHelloTimeoutMs: config.clientHelloTimeout,
    minHandshakeRate: config.minHandshakeRate,
    handshakeStallMs: config.handshakeStallTimeout,
  };
}

/**
 * The endpoint petreld hosts reaches the engine, console and statistics through in-memory
 * connections to the handlers of their sockets (`openService`): the same frames and connection
 * rules as over `<run-dir>/util/*.sock`, without a kernel round trip for each.
 */
async function openTls(
  config: PetrelConfig,
  log: Logger,
  openService: NonNullable<TlsEndpointOptions['openService']>,
): Promise<Result<TlsEndpoint, PetrelError>> {
  if (
    config.tlsCa === null ||
    config.tlsCert === null ||
    config.tlsKey === null ||
    config.tlsListen === null
  ) {
    return err('E_CONFIG', 'tlsListen needs tlsCa, tlsCert and tlsKey');
  }
  const [ca, cert, key] = await Promise.all(
    [config.tlsCa, config.tlsCert, config.tlsKey].map((f) => readFile(f)),
  );
  const { createTlsEndpoint, socketPaths } = await import('../tls/endpoint.js');
  const endpoint = createTlsEndpoint({
    ca: ca as Buffer,
    cert: cert as Buffer,
    key: key as Buffer,
    sockets: socketPaths(config.runDir),
    host: config.tlsListen.host,
    port: config.tlsListen.port,
    maxFrameBytes: config.maxFrameBytes,
    admission: admissionSettings(config),
    maxConnectionsPerIdentity: config.maxConnectionsPerIdentity,
    frameStallTimeoutMs: config.frameStallTimeout,
    logger: log,
    openService,
  });
  return endpoint;
}

/** The web API (docs/web.md), loaded only when `webListen` is set; it reaches the engine as the TLS endpoint does. */
async function openWeb(
  config: PetrelConfig,
  log: Logger,
  openService: (service: Service) => Duplex | null,
): Promise<Result<WebServer, PetrelError>> {
  if (
    config.tlsCa === null ||
    config.webCert === null ||
    config.webKey === null ||
    config.webListen === null
  ) {
    return err('E_CONFIG', 'webListen needs tlsCa, webCert and webKey');
  }
  let files: Buffer[];
  try {
    files = await Promise.all([config.tlsCa, config.webCert, config.webKey].map((f) => readFile(f)));
  } catch (e) {
    return err('E_CONFIG', `webListen: ${(e as Error).message}`);
  }
  const [ca, cert, key] = files as [Buffer, Buffer, Buffer];
  const { createWebServer } = await import('../web/server.js');
  const { socketPaths } = await import('../tls/settings.js');
  const { DENY_LIST_FILE } = await import('../tls/token.js');
  const { USAGE_FILE } = await import('../tls/token-usage.js');
  const revocations = config.fleetDb === null ? undefined : await registryDenyList(config, log);
  const fleet = config.fleetDb === null ? undefined : await registryNodes(config);
  const web = createWebServer({
    ...(revocations === undefined ? {} : { revocations }),
    ...(fleet === undefined ? {} : { fleet }),
    nodeId: config.nodeId,
    ca,
    cert,
    key,
    sockets: socketPaths(config.runDir),
    denyList: path.join(config.stateDir, DENY_LIST_FILE),
    usage: path.join(config.stateDir, USAGE_FILE),
    host: config.webListen.host,
    port: config.webListen.port,
    maxFrameBytes: config.maxFrameBytes,
    maxConnectionsPerIdentity: config.maxConnectionsPerIdentity,
    frameStallTimeoutMs: config.frameStallTimeout,
    sessionIdleTimeoutMs: config.webSessionIdleTimeout,
    statsIntervalMs: config.statsInterval,
    admission: admissionSettings(config),
    logger: log,
    openService,
  });
  if (!web.ok) {
    await revocations?.stop();
    await fleet?.stop();
  }
  return web;
}

/** The registry's fresh nodes and their web origins, for the dashboard's fleet view (web/fleet.ts). */
async function registryNodes(config: PetrelConfig) {
  const [{ openDb }, { Registry }] = await Promise.all([
    import('../fleet/db.js'),
    import('../fleet/registry.js'),
  ]);
  const pool = openDb(config.fleetDb as string, {
    max: 1,
    applicationName: `petreld ${config.nodeId} web fleet`,
    connectTimeoutMs: 5000,
  });
  const registry = new Registry(pool);
  return {
    list: () => registry.webNodes(config.fleetFresh),
    stop: () => pool.end(),
  };
}

/**
 * The fleet registry's deny-list for the web API, read once before the listener opens (a
 * registry down at start refuses tokens until it can be read) and then every fleetRevocationPoll.
 */
async function registryDenyList(config: PetrelConfig, log: Logger) {
  const [{ openDb }, { RevocationPoller }] = await Promise.all([
    import('../fleet/db.js'),
    import('../fleet/revocations.js'),
  ]);
  // A registry that does not answer must not hold the start: its first read fails within 5 s.
  const pool = openDb(config.fleetDb as string, {
    max: 1,
    applicationName: `petreld ${config.nodeId} web`,
    connectTimeoutMs: 5000,
  });
  const poller = new RevocationPoller(pool, config.fleetRevocationPoll, log);
  await poller.start();
  return poller;
}

/**
 * Where browsers reach this node's web API, as the registry keeps it for the dashboard's fleet
 * view: webAddress, else nodeAddress's (or tlsListen's) host with the port webListen bound.
 */
function webOrigin(config: PetrelConfig, nodeHost: string, web: StartReport['web']): string {
  if (web === null) return '';
  const host = config.webAddress?.host ?? nodeHost;
  const port = config.webAddress?.port ?? web.port;
  // As a browser writes an origin: the host in lower case.
  return `https://${host.includes(':') ? `[${host}]` : host}:${port}`.toLowerCase();
}

/**
 * Reports this node's probed capabilities, the runtimes it serves and its capacity (root policy
 * minus allocations) to the fleet registry now and every heartbeat, and its capacity again after
 * every change of the tree, so placement counts what the node holds. A registry that is down is logged and retried,
 * never fatal: the node simply ages out of the freshness window until it can report again.
 */
async function joinFleet(
  config: PetrelConfig,
  runtimes: readonly Runtime[],
  engine: Engine,
  probe: () => Promise<CapabilityReport>,
  log: Logger,
  tls: StartReport['tls'],
  web: StartReport['web'],
): Promise<Result<{ reporter: FleetReporter; pool: { end(): Promise<void> } }, PetrelError>> {
  const endpoint = config.nodeAddress ?? config.tlsListen;
  if (endpoint === null) {
    return err('E_CONFIG', 'fleetDb needs nodeAddress (or tlsListen): where clients reach this node');
  }
  const port = config.nodeAddress === null && tls !== null ? tls.port : endpoint.port;
  const host = endpoint.host.includes(':') ? `[${endpoint.host}]` : endpoint.host;
  const [{ openDb }, { Registry }, { createReporter }, { capacityOf }] = await Promise.all([
    import('../fleet/db.js'),
    import('../fleet/registry.js'),
    import('../fleet/reporter.js'),
    import('../fleet/capacity.js'),
  ]);
  const pool = openDb(config.fleetDb as string, { applicationName: `petreld ${config.nodeId}` });
  const reporter = createReporter({
    registry: new Registry(pool),
    nodeId: config.nodeId,
    address: `${host}:${port}`,
    probe,
    runtimes,
    capacity: () => capacityOf(engine.tree),
    webOrigin: webOrigin(config, endpoint.host, web),
    heartbeatMs: config.fleetHeartbeat,
    logger: log,
  });
  if (!reporter.ok) {
    await pool.end();
    return reporter;
  }
  const first = await reporter.value.start();
  if (!first.ok)
    log.warn({ node: config.nodeId, code: first.error.code }, `fleet report failed: ${first.error.message}`);
  else log.info({ node: config.nodeId }, 'reported to the fleet registry');
  return ok({ reporter: reporter.value, pool });
}

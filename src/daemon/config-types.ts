// What a configuration of petreld is: the validated, frozen PetrelConfig with its value types,
// and the shape of one key's entry in the table of keys (config-table.ts).

import type { PetrelError, Result } from '../resources/errors.js';
import type { IdRange } from '../resources/jail.js';

/** A runtime this node hosts. `--runtimes none` is the empty list: the node only probes and reports. */
export type Runtime = 'hvt' | 'spt';
/**
 * What the configuration asks to host: a list (each one required, start-up fails naming what
 * it lacks), or `auto`: every runtime the probe finds usable, failing only when none is (what a
 * package's conffile can say on any host; see hostedRuntimes()).
 */
export type RuntimeChoice = readonly Runtime[] | 'auto';
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
/** `auto`: human lines when standard output is a terminal, JSON lines otherwise (journald, files). */
export type LogFormat = 'auto' | 'json' | 'pretty';

export interface Endpoint {
  /** An IP address or host name, without brackets. */
  readonly host: string;
  /** 0 lets the system choose (tests). */
  readonly port: number;
}

/**
 * The validated, frozen configuration. Paths are absolute; every duration is in MILLISECONDS
 * (the file and flags take `10s`, `500ms`, `2m` or seconds); null means "not configured".
 */
export interface PetrelConfig {
  readonly stateDir: string;
  readonly runDir: string;
  readonly runtimes: RuntimeChoice;
  readonly kvmDevice: string;
  readonly tenderHvt: string | null;
  readonly tenderSpt: string | null;
  /** An Albatross state file to import at start-up (once). */
  readonly importAlbatrossState: string | null;
  readonly tapPrefix: string;
  readonly bridges: readonly string[];
  /** MiB the root policy offers unikernels; null for all of the host's memory. */
  readonly offerMemory: number | null;
  readonly metricsListen: Endpoint | null;
  readonly logLevel: LogLevel;
  readonly logFormat: LogFormat;
  readonly tlsListen: Endpoint | null;
  readonly tlsCa: string | null;
  readonly tlsCert: string | null;
  readonly tlsKey: string | null;
  /** The web API's HTTPS listener (docs/web.md); tokens lead to tlsCa. */
  readonly webListen: Endpoint | null;
  readonly webCert: string | null;
  readonly webKey: string | null;
  readonly webSessionIdleTimeout: number;
  readonly maxFrameBytes: number;
  /** Admission (petrel-differences.md (c)): sockets and bytes of unauthenticated peers. */
  readonly maxPendingConnections: number;
  readonly maxPendingPerAddress: number;
  readonly maxPendingBytes: number;
  readonly maxPendingBytesPerAddress: number;
  readonly firstByteTimeout: number;
  readonly clientHelloTimeout: number;
  readonly minHandshakeRate: number;
  readonly handshakeStallTimeout: number;
  readonly maxConnectionsPerIdentity: number;
  readonly frameStallTimeout: number;
  readonly maxLocalConnections: number;
  readonly localIdleTimeout: number;
  readonly maxSubscriberQueue: number;
  readonly maxSubscribers: number;
  readonly stopTimeout: number;
  /** Every tender runs jailed (docs/threat-model.md); `--no-jail` turns it off. */
  readonly jail: boolean;
  /** The uids (and gids) jailed tenders get, one per running unikernel. */
  readonly jailIds: IdRange;
  /** Files bound read-only into every jail besides the tender and what it loads (test doubles). */
  readonly jailAllow: readonly string[];
  /** Stop every guest when petreld stops (SIGUSR2 asks for it once); by default they run on. */
  readonly stopGuestsOnExit: boolean;
  /** Console bytes the holder keeps per unikernel while no petreld is attached. */
  readonly consoleBuffer: number;
  readonly stateJournalMax: number;
  /** Bytes kept preallocated in the state directory for freeing commands on a full disk (0: none). */
  readonly stateReserve: number;
  /** Free bytes of the state directory below which writes of unknown size stop and preflight WARNs. */
  readonly stateMinFree: number;
  readonly statsInterval: number;
  readonly canaryDeadline: number;
  readonly restartBackoffBase: number;
  readonly restartBackoffMax: number;
  readonly restartStableAfter: number;
  readonly restartMaxCount: number;
  readonly restartWindow: number;
  /** A PostgreSQL connection string; may hold a password, so never log it. */
  readonly fleetDb: string | null;
  readonly nodeId: string;
  readonly nodeAddress: Endpoint | null;
  /** Where browsers reach this node's web API, as stored in the registry (the fleet view). */
  readonly webAddress: Endpoint | null;
  readonly fleetHeartbeat: number;
  readonly fleetFresh: number;
  readonly fleetRevocationPoll: number;
}

export type ConfigKey = keyof PetrelConfig;
/** TOML tables that group keys; a key's flag is its own name in kebab case, whatever its table. */
export type ConfigTable = 'tls' | 'limits' | 'restart' | 'fleet';

export type ConfigError = PetrelError<'E_CONFIG'>;

/** Where a raw value came from: the file's values are typed TOML, flags are always strings. */
export interface Source {
  readonly flag: boolean;
  /** Relative paths are resolved against this: the config file's directory, or the cwd for flags. */
  readonly baseDir: string;
}

export type Parse<T> = (raw: unknown, source: Source) => Result<T, string>;

export interface ConfigField<T> {
  readonly table: ConfigTable | null;
  /** Placeholder in help: DIR, FILE, N, DURATION, HOST:PORT, LIST, … */
  readonly arg: string;
  readonly defaultValue: T;
  /** The default as a user would write it. */
  readonly defaultText: string;
  readonly help: string;
  readonly parse: Parse<T>;
}

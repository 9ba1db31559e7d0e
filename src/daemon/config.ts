// petreld's configuration: one TOML file (`--config`) and flags that override it, both checked
// against FIELDS below, the single table of every key, its flag, default and meaning.

import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { parse as parseToml } from 'smol-toml';
import { checkInterfaceName } from '../host/ip.js';
import { checkTapPrefix, DEFAULT_TAP_PREFIX } from '../host/tap.js';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import { DEFAULT_ID_RANGE, type IdRange, parseIdRange, printIdRange } from '../resources/jail.js';
import { DEFAULT_RUN_DIR, SOCKET_NAMES as SOCKETS } from './layout.js';

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
  /** The web API's HTTPS listener (issue 24); tokens lead to tlsCa. */
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
  /** Every tender runs jailed (issue 22; docs/threat-model.md); `--no-jail` turns it off. */
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
interface Source {
  readonly flag: boolean;
  /** Relative paths are resolved against this: the config file's directory, or the cwd for flags. */
  readonly baseDir: string;
}

type Parse<T> = (raw: unknown, source: Source) => Result<T, string>;

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

// ---------------------------------------------------------------------------------------------
// Value parsers. Each returns the reason alone; the caller prefixes the key path or flag.

const fail = (reason: string): Result<never, string> => ({ ok: false, error: reason });

function text(raw: unknown, what: string): Result<string, string> {
  if (typeof raw !== 'string' || raw === '' || raw.includes('\0')) return fail(`expected ${what}`);
  return ok(raw);
}

const pathValue: Parse<string> = (raw, source) => {
  const value = text(raw, 'a non-empty path');
  return value.ok ? ok(path.resolve(source.baseDir, value.value)) : value;
};

/** A flag given as `''` unsets what the file set. */
function optional<T>(parse: Parse<T>): Parse<T | null> {
  return (raw, source) => (source.flag && raw === '' ? ok(null) : parse(raw, source));
}

const INT32_MAX = 2 ** 31 - 1;

/** A TOML boolean, or `true`/`false` as a flag. */
const boolean: Parse<boolean> = (raw, source) => {
  if (typeof raw === 'boolean') return ok(raw);
  if (source.flag && (raw === 'true' || raw === 'false')) return ok(raw === 'true');
  return fail('expected true or false');
};

function integer(min: number, max: number): Parse<number> {
  const expected = min === 1 && max === INT32_MAX ? 'a positive integer' : `an integer from ${min} to ${max}`;
  return (raw, source) => {
    const value = source.flag && typeof raw === 'string' && /^\d+$/u.test(raw) ? Number(raw) : raw;
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
      return fail(`expected ${expected}`);
    }
    return ok(value);
  };
}

const DURATION_UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** `10s`, `500ms`, `2m`, `1h`, or a number of seconds (TOML number or bare decimal string). */
export function parseDuration(raw: unknown): Result<number, string> {
  const expected = 'expected a positive duration such as 10s, 500ms, 2m or a number of seconds';
  let ms: number;
  if (typeof raw === 'number') {
    ms = raw * 1000;
  } else if (typeof raw === 'string') {
    const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/u.exec(raw.trim());
    if (match === null) return fail(expected);
    ms = Number(match[1]) * (DURATION_UNITS[match[2] ?? 's'] ?? 1000);
  } else {
    return fail(expected);
  }
  if (!Number.isFinite(ms)) return fail(expected);
  ms = Math.round(ms);
  if (ms <= 0) return fail(expected);
  // Node's timers hold at most 2^31 − 1 ms; a longer one would fire at once.
  if (ms > INT32_MAX) return fail('expected a duration of at most 24 days');
  return ok(ms);
}

const duration: Parse<number> = (raw) => parseDuration(raw);

/** A TOML array of strings, a TOML string with commas, or a comma-separated flag. */
function stringList(raw: unknown): Result<readonly string[], string> {
  if (typeof raw === 'string')
    return ok(
      raw
        .split(',')
        .map((item) => item.trim())
        .filter((item) => item !== ''),
    );
  if (Array.isArray(raw) && raw.every((item): item is string => typeof item === 'string')) return ok(raw);
  return fail('expected a list of strings');
}

const runtimes: Parse<RuntimeChoice> = (raw) => {
  const list = stringList(raw);
  if (!list.ok) return list;
  const expected = 'expected "auto", "none" or a list of runtimes from hvt, spt';
  if (list.value.length === 1 && list.value[0] === 'none') return ok([]);
  if (list.value.length === 1 && list.value[0] === 'auto') return ok('auto');
  if (list.value.length === 0) return fail(expected);
  const chosen = new Set<Runtime>();
  for (const item of list.value) {
    if (item !== 'hvt' && item !== 'spt') return fail(`${expected}, got ${JSON.stringify(item)}`);
    chosen.add(item);
  }
  return ok([...chosen].sort());
};

const idRange: Parse<IdRange> = (raw) =>
  typeof raw === 'string' ? parseIdRange(raw) : fail('expected FIRST-LAST');

const absolutePaths: Parse<readonly string[]> = (raw, source) => {
  const list = stringList(raw);
  if (!list.ok) return list;
  if (list.value.some((item) => item.includes('\0'))) return fail('expected a list of paths');
  return ok(list.value.map((item) => path.resolve(source.baseDir, item)));
};

const bridges: Parse<readonly string[]> = (raw) => {
  const list = stringList(raw);
  if (!list.ok) return list;
  for (const name of list.value) {
    if (!checkInterfaceName(name).ok) return fail(`invalid bridge name ${JSON.stringify(name)}`);
  }
  return ok([...new Set(list.value)].sort());
};

const tapPrefix: Parse<string> = (raw) => {
  const value = text(raw, 'a non-empty string');
  if (!value.ok) return value;
  const checked = checkTapPrefix(value.value);
  return checked.ok ? checked : fail(checked.error.message);
};

/** `HOST:PORT`, `[IPv6]:PORT`, or a bare port on `defaultHost`. */
function endpoint(defaultHost: string): Parse<Endpoint> {
  return (raw) => {
    const expected = 'expected HOST:PORT, [IPv6]:PORT or a port number';
    const value = typeof raw === 'number' ? String(raw) : raw;
    if (typeof value !== 'string') return fail(expected);
    const match = /^(?:(?:\[([0-9A-Fa-f:.]+)\]|([^\s:[\]]+)):)?(\d{1,5})$/u.exec(value);
    const port = Number(match?.[3]);
    if (match === null || port > 65535) return fail(expected);
    return ok({ host: match[1] ?? match[2] ?? defaultHost, port });
  };
}

function oneOf<T extends string>(values: readonly T[]): Parse<T> {
  return (raw) =>
    typeof raw === 'string' && (values as readonly string[]).includes(raw)
      ? ok(raw as T)
      : fail(`expected one of ${values.join(', ')}`);
}

const nodeId: Parse<string> = (raw) => {
  const value = text(raw, 'a node name');
  if (!value.ok) return value;
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$/u.test(value.value)) {
    return fail('expected a node name of letters, digits, ".", "_" and "-" (at most 253)');
  }
  return value;
};

// ---------------------------------------------------------------------------------------------
// The table. Every key, its flag (kebab case of the key), default and meaning (petrel-differences
// (h), issue 8); configHelp(), the flag parser and the file validator are all made from it.

const S = 1000;

function field<T>(spec: ConfigField<T>): ConfigField<T> {
  return Object.freeze(spec);
}

export const CONFIG_FIELDS: { readonly [K in ConfigKey]: ConfigField<PetrelConfig[K]> } = Object.freeze({
  stateDir: field({
    table: null,
    arg: 'DIR',
    defaultValue: '/var/lib/petrel',
    defaultText: '/var/lib/petrel',
    help: 'the state (petrel.state, petrel.journal), image store (images/), block devices (block/) and installed tenders; created 0700 if missing',
    parse: pathValue,
  }),
  runDir: field({
    table: null,
    arg: 'DIR',
    defaultValue: DEFAULT_RUN_DIR,
    defaultText: DEFAULT_RUN_DIR,
    help: 'sockets (util/*.sock), console FIFOs, links to images, tender PID records, node.json; created 0700 if missing',
    parse: pathValue,
  }),
  runtimes: field({
    table: null,
    arg: 'LIST',
    defaultValue: Object.freeze(['hvt'] as const) as RuntimeChoice,
    defaultText: 'hvt',
    help: 'runtimes this node hosts (hvt, spt), start-up fails if one is unusable; auto: those the probe finds usable (fails if none); none: probe and report only',
    parse: runtimes,
  }),
  kvmDevice: field({
    table: null,
    arg: 'PATH',
    defaultValue: '/dev/kvm',
    defaultText: '/dev/kvm',
    help: 'the KVM device: the probe opens it, and an hvt jail gets a node of its number at /dev/kvm',
    parse: pathValue,
  }),
  tenderHvt: field({
    table: null,
    arg: 'PATH',
    defaultValue: null,
    defaultText: 'search',
    help: 'the hvt tender; default: <state-dir>/solo5-hvt.2, PATH, <state-dir>/solo5-hvt, PATH, bundled petrel-hvt',
    parse: optional(pathValue),
  }),
  tenderSpt: field({
    table: null,
    arg: 'PATH',
    defaultValue: null,
    defaultText: 'search',
    help: 'the spt tender (ABI 2); default: <state-dir>/solo5-spt.2, PATH, <state-dir>/solo5-spt, PATH, bundled petrel-spt',
    parse: optional(pathValue),
  }),
  importAlbatrossState: field({
    table: null,
    arg: 'FILE',
    defaultValue: null,
    defaultText: 'none',
    help: 'an Albatross state file (versions 0-6, images inside) whose unikernels and policies start-up adds to the state, once (images go to the store)',
    parse: optional(pathValue),
  }),
  tapPrefix: field({
    table: null,
    arg: 'P',
    defaultValue: DEFAULT_TAP_PREFIX,
    defaultText: DEFAULT_TAP_PREFIX,
    help: 'taps are <prefix><N>; start-up deletes every such interface',
    parse: tapPrefix,
  }),
  bridges: field({
    table: null,
    arg: 'LIST',
    defaultValue: Object.freeze([]),
    defaultText: 'none',
    help: 'bridges this node must offer; start-up fails if one is missing',
    parse: bridges,
  }),
  offerMemory: field({
    table: null,
    arg: 'MIB',
    defaultValue: null,
    defaultText: "the host's memory",
    help: "memory (MiB) the root policy offers unikernels, at most the host's (keep some for the host, or run several nodes on one machine); the fleet report says the same",
    parse: optional(integer(1, INT32_MAX)),
  }),
  metricsListen: field({
    table: null,
    arg: 'HOST:PORT',
    defaultValue: null,
    defaultText: 'off',
    help: 'serve Prometheus /metrics here (a bare port means 127.0.0.1)',
    parse: optional(endpoint('127.0.0.1')),
  }),
  logLevel: field<LogLevel>({
    table: null,
    arg: 'LEVEL',
    defaultValue: 'info',
    defaultText: 'info',
    help: 'fatal, error, warn, info, debug, trace or silent',
    parse: oneOf<LogLevel>(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
  }),
  logFormat: field<LogFormat>({
    table: null,
    arg: 'FORMAT',
    defaultValue: 'auto',
    defaultText: 'auto',
    help: 'json (one JSON object a line), pretty (one human line a line) or auto (pretty on a terminal, json elsewhere)',
    parse: oneOf<LogFormat>(['auto', 'json', 'pretty']),
  }),
  tlsListen: field({
    table: 'tls',
    arg: 'HOST:PORT',
    defaultValue: null,
    defaultText: 'off',
    help: 'TLS endpoint for remote clients (a bare port means ::); needs tlsCa, tlsCert, tlsKey',
    parse: optional(endpoint('::')),
  }),
  tlsCa: field({
    table: 'tls',
    arg: 'FILE',
    defaultValue: null,
    defaultText: 'none',
    help: 'CA certificate (PEM) client chains must lead to',
    parse: optional(pathValue),
  }),
  tlsCert: field({
    table: 'tls',
    arg: 'FILE',
    defaultValue: null,
    defaultText: 'none',
    help: 'server certificate (PEM), signed by the CA',
    parse: optional(pathValue),
  }),
  tlsKey: field({
    table: 'tls',
    arg: 'FILE',
    defaultValue: null,
    defaultText: 'none',
    help: "the server certificate's private key (PEM)",
    parse: optional(pathValue),
  }),
  webListen: field({
    table: 'tls',
    arg: 'HOST:PORT',
    defaultValue: null,
    defaultText: 'off',
    help: 'HTTPS listener of the web API, bearer tokens from petrel ca token (a bare port means ::); needs tlsCa, webCert, webKey',
    parse: optional(endpoint('::')),
  }),
  webCert: field({
    table: 'tls',
    arg: 'FILE',
    defaultValue: null,
    defaultText: 'none',
    help: 'the certificate (PEM) the web API shows browsers: petrel ca web-cert makes one',
    parse: optional(pathValue),
  }),
  webKey: field({
    table: 'tls',
    arg: 'FILE',
    defaultValue: null,
    defaultText: 'none',
    help: "the web certificate's private key (PEM)",
    parse: optional(pathValue),
  }),
  webSessionIdleTimeout: field({
    table: 'tls',
    arg: 'DURATION',
    defaultValue: 60 * 60 * S,
    defaultText: '1h',
    help: "a browser's session of the web API ends after this long without a request (and always with its token)",
    parse: duration,
  }),
  maxFrameBytes: field({
    table: 'limits',
    arg: 'N',
    defaultValue: 64 * 1024 * 1024,
    defaultText: '67108864',
    help: 'a frame announcing more bytes is refused before reading it; must exceed the largest image',
    parse: integer(1, INT32_MAX),
  }),
  maxPendingConnections: field({
    table: 'limits',
    arg: 'N',
    defaultValue: 1024,
    defaultText: '1024',
    help: 'connections not yet authenticated, on every network listener; beyond, the one making the least progress is closed',
    parse: integer(1, INT32_MAX),
  }),
  maxPendingPerAddress: field({
    table: 'limits',
    arg: 'N',
    defaultValue: 64,
    defaultText: '64',
    help: 'the same from one address (an IPv6 /64)',
    parse: integer(1, INT32_MAX),
  }),
  maxPendingBytes: field({
    table: 'limits',
    arg: 'BYTES',
    defaultValue: 64 * 1024 * 1024,
    defaultText: '67108864',
    help: 'bytes read from unauthenticated connections beyond their first 16 KiB, reserved 16.25 MiB at a time',
    parse: integer(1, INT32_MAX),
  }),
  maxPendingBytesPerAddress: field({
    table: 'limits',
    arg: 'BYTES',
    defaultValue: 32 * 1024 * 1024,
    defaultText: '33554432',
    help: 'the same from one address (an IPv6 /64)',
    parse: integer(1, INT32_MAX),
  }),
  firstByteTimeout: field({
    table: 'limits',
    arg: 'DURATION',
    defaultValue: 5 * S,
    defaultText: '5s',
    help: "a connection's first byte must arrive within this",
    parse: duration,
  }),
  clientHelloTimeout: field({
    table: 'limits',
    arg: 'DURATION',
    defaultValue: 10 * S,
    defaultText: '10s',
    help: 'the TLS ClientHello must be complete within this of the accept',
    parse: duration,
  }),
  minHandshakeRate: field({
    table: 'limits',
    arg: 'BYTES',
    defaultValue: 4096,
    defaultText: '4096',
    help: 'bytes per second a TLS handshake must keep up after its ClientHello',
    parse: integer(1, INT32_MAX),
  }),
  handshakeStallTimeout: field({
    table: 'limits',
    arg: 'DURATION',
    defaultValue: 10 * S,
    defaultText: '10s',
    help: 'the longest silence of a TLS handshake after its ClientHello',
    parse: duration,
  }),
  maxConnectionsPerIdentity: field({
    table: 'limits',
    arg: 'N',
    defaultValue: 64,
    defaultText: '64',
    help: "TLS sessions open at once for one identity (its chain's path, e.g. alice:)",
    parse: integer(1, INT32_MAX),
  }),
  frameStallTimeout: field({
    table: 'limits',
    arg: 'DURATION',
    defaultValue: 30 * S,
    defaultText: '30s',
    help: 'a frame that has begun arriving may pause at most this long',
    parse: duration,
  }),
  maxLocalConnections: field({
    table: 'limits',
    arg: 'N',
    defaultValue: 8192,
    defaultText: '8192',
    help: 'connections on the local sockets at once; beyond, the longest idle one is closed',
    parse: integer(1, INT32_MAX),
  }),
  localIdleTimeout: field({
    table: 'limits',
    arg: 'DURATION',
    defaultValue: 60 * S,
    defaultText: '60s',
    help: 'a local connection that has not sent a complete request within this is closed',
    parse: duration,
  }),
  maxSubscriberQueue: field({
    table: 'limits',
    arg: 'N',
    defaultValue: 1024,
    defaultText: '1024',
    help: 'messages queued per console or statistics subscriber before it is closed',
    parse: integer(1, INT32_MAX),
  }),
  maxSubscribers: field({
    table: 'limits',
    arg: 'N',
    defaultValue: 5,
    defaultText: '5',
    help: 'console subscribers per unikernel (Albatross --max-subscribers)',
    parse: integer(1, INT32_MAX),
  }),
  stopTimeout: field({
    table: 'limits',
    arg: 'DURATION',
    defaultValue: 10 * S,
    defaultText: '10s',
    help: 'SIGTERM to SIGKILL grace when stopping a tender',
    parse: duration,
  }),
  jail: field({
    table: null,
    arg: 'BOOL',
    defaultValue: true,
    defaultText: 'true',
    help: 'run every tender jailed: its own uid and gid from jailIds, a private mount namespace holding only its files, IPC and UTS namespaces, no capabilities, resource limits and cgroups (docs/threat-model.md); --no-jail is --jail false',
    parse: boolean,
  }),
  jailIds: field({
    table: null,
    arg: 'FIRST-LAST',
    defaultValue: DEFAULT_ID_RANGE,
    defaultText: printIdRange(DEFAULT_ID_RANGE),
    help: 'the uids and gids jailed tenders get, one per running unikernel; no user, group, subordinate range or other process may use them',
    parse: idRange,
  }),
  jailAllow: field({
    table: null,
    arg: 'LIST',
    defaultValue: Object.freeze([]),
    defaultText: 'none',
    help: 'files bound read-only into every jail besides the tender and what it loads (with what they load): for wrappers such as test doubles',
    parse: absolutePaths,
  }),
  stopGuestsOnExit: field({
    table: null,
    arg: 'BOOL',
    defaultValue: false,
    defaultText: 'false',
    help: 'stopping petreld stops every unikernel (as SIGUSR2 does once); by default they run on under the holder and the next start adopts them',
    parse: boolean,
  }),
  consoleBuffer: field({
    table: 'limits',
    arg: 'BYTES',
    defaultValue: 65_536,
    defaultText: '65536',
    help: 'console bytes the holder keeps per unikernel while no petreld is attached; beyond, the oldest are dropped and counted',
    parse: integer(1024, 16 * 1024 * 1024),
  }),
  stateJournalMax: field({
    table: 'limits',
    arg: 'N',
    defaultValue: 64 * 1024,
    defaultText: '65536',
    help: 'bytes of state journal after which the whole state is written anew as one snapshot (or the snapshot size, if larger)',
    parse: integer(1, INT32_MAX),
  }),
  stateReserve: field({
    table: 'limits',
    arg: 'BYTES',
    defaultValue: 1024 * 1024,
    defaultText: '1048576',
    help: 'bytes kept preallocated in <state-dir>/petrel.reserve and given up when a destroy (or another freeing command) finds the disk full, so its state entry is still written; 0 keeps none',
    parse: integer(0, 1024 * 1024 * 1024),
  }),
  stateMinFree: field({
    table: 'limits',
    arg: 'BYTES',
    defaultValue: 4 * 1024 * 1024,
    defaultText: '4194304',
    help: 'free bytes of the state directory that creates, block devices and image streams leave untouched (refused instead); the preflight WARNs below it',
    parse: integer(0, Number.MAX_SAFE_INTEGER),
  }),
  statsInterval: field({
    table: 'limits',
    arg: 'DURATION',
    defaultValue: 10 * S,
    defaultText: '10s',
    help: 'statistics sampling interval',
    parse: duration,
  }),
  canaryDeadline: field({
    table: 'limits',
    arg: 'DURATION',
    defaultValue: 10 * S,
    defaultText: '10s',
    help: 'the start-up canary must print its line within this',
    parse: duration,
  }),
  restartBackoffBase: field({
    table: 'restart',
    arg: 'DURATION',
    defaultValue: 1 * S,
    defaultText: '1s',
    help: 'delay before the first restart on failure; doubles with each consecutive one',
    parse: duration,
  }),
  restartBackoffMax: field({
    table: 'restart',
    arg: 'DURATION',
    defaultValue: 60 * S,
    defaultText: '60s',
    help: 'longest delay before a restart on failure',
    parse: duration,
  }),
  restartStableAfter: field({
    table: 'restart',
    arg: 'DURATION',
    defaultValue: 60 * S,
    defaultText: '60s',
    help: 'a unikernel that ran this long starts its back-off afresh',
    parse: duration,
  }),
  restartMaxCount: field({
    table: 'restart',
    arg: 'N',
    defaultValue: 10,
    defaultText: '10',
    help: 'restarts per unikernel within restartWindow; beyond that it is dropped',
    parse: integer(1, INT32_MAX),
  }),
  restartWindow: field({
    table: 'restart',
    arg: 'DURATION',
    defaultValue: 600 * S,
    defaultText: '600s',
    help: 'the window restartMaxCount counts in',
    parse: duration,
  }),
  fleetDb: field({
    table: 'fleet',
    arg: 'URL',
    defaultValue: null,
    defaultText: 'off',
    help: 'PostgreSQL connection string of the fleet registry',
    parse: optional((raw) => text(raw, 'a connection string')),
  }),
  nodeId: field({
    table: 'fleet',
    arg: 'NAME',
    defaultValue: safeHostname(),
    defaultText: 'the host name',
    help: 'this node in the fleet registry',
    parse: nodeId,
  }),
  nodeAddress: field({
    table: 'fleet',
    arg: 'HOST:PORT',
    defaultValue: null,
    defaultText: 'tlsListen',
    help: "where clients reach this node's TLS endpoint, as stored in the registry",
    parse: optional(endpoint('::')),
  }),
  webAddress: field({
    table: 'fleet',
    arg: 'HOST:PORT',
    defaultValue: null,
    defaultText: "nodeAddress's host, webListen's port",
    help: "where browsers reach this node's web API (https://HOST:PORT in the registry): the dashboard's fleet view and CORS",
    parse: optional(endpoint('::')),
  }),
  fleetHeartbeat: field({
    table: 'fleet',
    arg: 'DURATION',
    defaultValue: 10 * S,
    defaultText: '10s',
    help: 'how often this node writes its report to the registry',
    parse: duration,
  }),
  fleetFresh: field({
    table: 'fleet',
    arg: 'DURATION',
    defaultValue: 30 * S,
    defaultText: '30s',
    help: 'a node whose last heartbeat is older is not placed on; must exceed fleetHeartbeat',
    parse: duration,
  }),
  fleetRevocationPoll: field({
    table: 'fleet',
    arg: 'DURATION',
    defaultValue: 5 * S,
    defaultText: '5s',
    help: "how often the web API reads the registry's deny-list: a revocation holds on every node within it",
    parse: duration,
  }),
});

function safeHostname(): string {
  const name = os.hostname();
  return nodeId(name, { flag: false, baseDir: '/' }).ok ? name : 'petrel-node';
}

const KEYS = Object.keys(CONFIG_FIELDS) as ConfigKey[];
const TABLES: readonly ConfigTable[] = ['tls', 'limits', 'restart', 'fleet'];

/** `maxFrameBytes` → `max-frame-bytes`. */
export function flagName(key: ConfigKey): string {
  return key.replace(/[A-Z]/gu, (c) => `-${c.toLowerCase()}`);
}

/** `limits.maxFrameBytes`: how the file spells a key, and how errors name it. */
export function keyPath(key: ConfigKey): string {
  const table = CONFIG_FIELDS[key].table;
  return table === null ? key : `${table}.${key}`;
}

// ---------------------------------------------------------------------------------------------
// Building a configuration.

type Draft = { -readonly [K in ConfigKey]?: PetrelConfig[K] };

function assign<K extends ConfigKey>(
  draft: Draft,
  key: K,
  raw: unknown,
  source: Source,
  where: string,
  errors: string[],
): void {
  const parsed = CONFIG_FIELDS[key].parse(raw, source);
  if (parsed.ok) draft[key] = parsed.value;
  else errors.push(`${where}: ${parsed.error}`);
}

/** A plain object: TOML tables (smol-toml makes them without a prototype) and JSON objects, not dates. */
function isTable(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === null || proto === Object.prototype;
}

const isKey = (name: string): name is ConfigKey => Object.hasOwn(CONFIG_FIELDS, name);

/** Keys of earlier releases, and what replaced them. */
const RETIRED: Readonly<Record<string, string>> = {
  maxPendingHandshakes: 'replaced by maxPendingConnections and maxPendingPerAddress (docs/operations.md)',
  handshakeTimeout:
    'replaced by firstByteTimeout, clientHelloTimeout, minHandshakeRate and handshakeStallTimeout (docs/operations.md)',
};

/** Reads a parsed file into `draft`: unknown keys and keys in the wrong table are errors. */
function readDocument(document: unknown, source: Source, draft: Draft, errors: string[]): void {
  if (!isTable(document)) {
    errors.push('(file): expected a table of settings');
    return;
  }
  const visit = (table: ConfigTable | null, entries: Record<string, unknown>): void => {
    for (const [name, raw] of Object.entries(entries)) {
      const where = table === null ? name : `${table}.${name}`;
      if (table === null && (TABLES as readonly string[]).includes(name)) {
        if (isTable(raw)) visit(name as ConfigTable, raw);
        else errors.push(`${where}: expected a table`);
      } else if (name in RETIRED) {
        errors.push(`${where}: no longer a key: ${RETIRED[name]}`);
      } else if (!isKey(name)) {
        errors.push(`${where}: unknown key`);
      } else if (CONFIG_FIELDS[name].table !== table) {
        errors.push(`${where}: unknown key (did you mean ${keyPath(name)}?)`);
      } else {
        assign(draft, name, raw, source, where, errors);
      }
    }
  };
  visit(null, document);
}

/** Checks that involve more than one key, on the merged result. */
function crossCheck(config: PetrelConfig, errors: string[]): void {
  if (config.tlsListen !== null) {
    for (const key of ['tlsCa', 'tlsCert', 'tlsKey'] as const) {
      if (config[key] === null) errors.push(`${keyPath(key)}: required when ${keyPath('tlsListen')} is set`);
    }
  }
  if (config.webListen !== null) {
    for (const key of ['tlsCa', 'webCert', 'webKey'] as const) {
      if (config[key] === null) errors.push(`${keyPath(key)}: required when ${keyPath('webListen')} is set`);
    }
  }
  if (config.restartBackoffMax < config.restartBackoffBase) {
    errors.push(`${keyPath('restartBackoffMax')}: must not be less than ${keyPath('restartBackoffBase')}`);
  }
  if (config.fleetFresh <= config.fleetHeartbeat) {
    errors.push(`${keyPath('fleetFresh')}: must be longer than ${keyPath('fleetHeartbeat')}`);
  }
}

function deepFreeze(config: PetrelConfig): PetrelConfig {
  for (const value of Object.values(config))
    if (typeof value === 'object' && value !== null) Object.freeze(value);
  return Object.freeze(config);
}

export interface BuildInput {
  /** The parsed file (TOML or JSON), if any. */
  readonly document?: unknown;
  /** The file's directory: its relative paths are resolved against it. */
  readonly documentDir?: string;
  /** Flag values by key (strings, as given on the command line). */
  readonly flags?: Readonly<Partial<Record<ConfigKey, string>>>;
  /** Relative paths in flags are resolved against it. Default `process.cwd()`. */
  readonly cwd?: string;
}

/** Defaults, then the file, then flags; every error is collected and names its key path or flag. */
export function buildConfig(input: BuildInput = {}): Result<PetrelConfig, ConfigError> {
  const cwd = input.cwd ?? process.cwd();
  const errors: string[] = [];
  const fromFile: Draft = {};
  if (input.document !== undefined) {
    readDocument(input.document, { flag: false, baseDir: input.documentDir ?? cwd }, fromFile, errors);
  }
  const fromFlags: Draft = {};
  for (const [key, raw] of Object.entries(input.flags ?? {})) {
    if (key in RETIRED) errors.push(`--${flagName(key as ConfigKey)}: no longer a flag: ${RETIRED[key]}`);
    else if (!isKey(key)) errors.push(`--${key}: unknown flag`);
    else if (raw !== undefined)
      assign(fromFlags, key, raw, { flag: true, baseDir: cwd }, `--${flagName(key)}`, errors);
  }
  const merged: Draft = {};
  for (const key of KEYS) pick(merged, key, fromFlags, fromFile);
  const config = merged as PetrelConfig;
  if (errors.length === 0) crossCheck(config, errors);
  if (errors.length > 0) {
    return err('E_CONFIG', `invalid configuration:\n  ${errors.join('\n  ')}`, { errors });
  }
  return ok(deepFreeze(config));
}

function pick<K extends ConfigKey>(merged: Draft, key: K, flags: Draft, file: Draft): void {
  const value = Object.hasOwn(flags, key) ? flags[key] : Object.hasOwn(file, key) ? file[key] : undefined;
  merged[key] = (value === undefined ? CONFIG_FIELDS[key].defaultValue : value) as PetrelConfig[K];
}

/** Parses TOML, or JSON when the file name ends in `.json`. */
export function parseConfigText(fileName: string, body: string): Result<unknown, ConfigError> {
  try {
    return ok(fileName.endsWith('.json') ? JSON.parse(body) : parseToml(body));
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return err('E_CONFIG', `${fileName}: ${reason}`, { file: fileName });
  }
}

export interface LoadedConfig {
  readonly config: PetrelConfig;
  /** Words that are not flags (`petreld check`). */
  readonly positionals: readonly string[];
  /** `--help` / `-h` was given: print configHelp() and exit. */
  readonly help: boolean;
  /** The file read, or null. */
  readonly file: string | null;
}

/** Parses argv (without node and the script), reads `--config FILE`, merges and validates. */
export async function loadConfig(
  argv: readonly string[],
  options: { readonly cwd?: string } = {},
): Promise<Result<LoadedConfig, ConfigError>> {
  const cwd = options.cwd ?? process.cwd();
  const spec: Record<string, { type: 'string' } | { type: 'boolean'; short?: string }> = {
    config: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
    'no-jail': { type: 'boolean' },
  };
  const byFlag = new Map<string, ConfigKey>();
  for (const key of KEYS) {
    spec[flagName(key)] = { type: 'string' };
    byFlag.set(flagName(key), key);
  }
  let parsed: ReturnType<typeof parseArgs<{ options: typeof spec; allowPositionals: true; strict: true }>>;
  try {
    parsed = parseArgs({ args: [...argv], options: spec, allowPositionals: true, strict: true });
  } catch (error) {
    return err('E_CONFIG', error instanceof Error ? error.message : String(error));
  }
  const flags: Partial<Record<ConfigKey, string>> = {};
  for (const [name, value] of Object.entries(parsed.values)) {
    const key = byFlag.get(name);
    if (key !== undefined && typeof value === 'string') flags[key] = value;
  }
  if (parsed.values['no-jail'] === true) {
    if (flags.jail !== undefined) return err('E_CONFIG', '--no-jail and --jail: give one of them');
    flags.jail = 'false';
  }
  const configFlag = parsed.values.config;
  const file = typeof configFlag === 'string' ? path.resolve(cwd, configFlag) : null;
  let document: unknown;
  if (file !== null) {
    let body: string;
    try {
      body = await readFile(file, 'utf8');
    } catch (error) {
      return err(
        'E_CONFIG',
        `--config: cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? error}`,
        {
          file,
        },
      );
    }
    const doc = parseConfigText(file, body);
    if (!doc.ok) return doc;
    document = doc.value;
  }
  const config = buildConfig({
    ...(file === null ? {} : { document, documentDir: path.dirname(file) }),
    flags,
    cwd,
  });
  if (!config.ok) return config;
  return ok({
    config: config.value,
    positionals: parsed.positionals,
    help: parsed.values.help === true,
    file,
  });
}

/** The socket files under `<run-dir>/util` (petrel-differences (f), (h)). */
export const SOCKET_NAMES = Object.freeze([SOCKETS.engine, SOCKETS.console, SOCKETS.stats] as const);

export function socketPaths(runDir: string): readonly string[] {
  return SOCKET_NAMES.map((name) => path.join(runDir, 'util', name));
}

/** The `--help` text: every flag, its file key and default. */
export function configHelp(): string {
  const lines = [
    'usage: petreld [check] [--config FILE] [OPTIONS]',
    '',
    'Every option is also a key of the TOML file given with --config (shown after the flag);',
    'flags override the file. Durations take 10s, 500ms, 2m, 1h or a number of seconds.',
    'Relative paths in the file are taken from its directory, in flags from the working directory.',
    '',
    '  --config FILE',
    '      the configuration file (TOML; JSON when named *.json)',
    '  --no-jail',
    '      run tenders unjailed (as --jail false)',
  ];
  for (const key of KEYS) {
    const spec = CONFIG_FIELDS[key];
    lines.push(`  --${flagName(key)} ${spec.arg}    [${keyPath(key)}, default ${spec.defaultText}]`);
    lines.push(`      ${spec.help}`);
  }
  lines.push('  -h, --help', '      print this help');
  return `${lines.join('\n')}\n`;
}

// Building a configuration: the table's defaults, then a parsed file, then flags, every value
// checked by its key's parser, the keys checked against each other, the result frozen.

import { err, ok, type Result } from '../resources/errors.js';
import { flagName, KEYS, keyPath } from './config-names.js';
import { CONFIG_FIELDS } from './config-table.js';
import type { ConfigError, ConfigKey, ConfigTable, PetrelConfig, Source } from './config-types.js';

const TABLES: readonly ConfigTable[] = ['tls', 'limits', 'restart', 'fleet'];

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

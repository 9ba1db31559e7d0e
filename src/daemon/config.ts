// petreld's configuration as the rest of Petrel imports it: one TOML file (`--config`) and flags
// that override it, both checked against the single table of every key (config-table.ts).
//
// Each part has its own file: the types (config-types.ts), the value parsers (config-values.ts),
// the table, the keys' names (config-names.ts), building from defaults, file and flags
// (config-build.ts), reading the command line and file (config-load.ts) and the help text
// (config-help.ts). They import one another, never this file, so it can name them all.

export { type BuildInput, buildConfig } from './config-build.js';
export { configHelp } from './config-help.js';
export { type LoadedConfig, loadConfig, parseConfigText } from './config-load.js';
export { flagName, keyPath } from './config-names.js';
export { CONFIG_FIELDS } from './config-table.js';
export type {
  ConfigError,
  ConfigField,
  ConfigKey,
  ConfigTable,
  Endpoint,
  LogFormat,
  LogLevel,
  PetrelConfig,
  Runtime,
  RuntimeChoice,
} from './config-types.js';
export { parseDuration } from './config-values.js';
export { SOCKET_NAMES, socketPaths } from './socket-paths.js';

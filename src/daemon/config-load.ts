// petreld's command line to a configuration: its flags parsed, the `--config` file read (TOML,
// or JSON), both handed to buildConfig.

import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { parse as parseToml } from 'smol-toml';
import { err, ok, type Result } from '../resources/errors.js';
import { buildConfig } from './config-build.js';
import { flagName, KEYS } from './config-names.js';
import type { ConfigError, ConfigKey, PetrelConfig } from './config-types.js';

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

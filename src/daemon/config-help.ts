// petreld's `--help` text, made from the table of keys: every flag with its file key, default
// and meaning.

import { flagName, KEYS, keyPath } from './config-names.js';
import { CONFIG_FIELDS } from './config-table.js';

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

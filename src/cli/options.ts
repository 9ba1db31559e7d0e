// The options `petrel` takes on either side of the command: where the command goes (the
// connection flags every client subcommand shares) and --json. The dispatcher moves the ones
// given before the command behind it, so each subcommand parses them as its own.

export const CONNECTION_OPTIONS = {
  'run-dir': { type: 'string' },
  socket: { type: 'string' },
  remote: { type: 'string' },
  ca: { type: 'string' },
  cert: { type: 'string' },
  key: { type: 'string' },
} as const;

/** What may stand before the command name. */
export const LEADING_OPTIONS: Readonly<Record<string, { readonly type: 'string' | 'boolean' }>> = {
  ...CONNECTION_OPTIONS,
  json: { type: 'boolean' },
};

const names = Object.keys(LEADING_OPTIONS)
  .map((name) => `--${name}`)
  .join(', ');

/**
 * Splits `argv` at the command: the leading options (each rewritten as one `--name=value`
 * token, so a value is never taken for an option by the subcommand's parser) and the rest,
 * which starts with the command name. The error is a usage text.
 */
export function splitLeadingOptions(
  argv: readonly string[],
):
  | { readonly ok: true; readonly leading: readonly string[]; readonly rest: readonly string[] }
  | { readonly ok: false; readonly error: string } {
  const leading: string[] = [];
  let at = 0;
  for (; at < argv.length; at++) {
    const arg = argv[at] as string;
    if (!arg.startsWith('--') || arg === '--' || arg === '--help') break;
    const equals = arg.indexOf('=');
    const name = arg.slice(2, equals < 0 ? undefined : equals);
    const option = Object.hasOwn(LEADING_OPTIONS, name) ? LEADING_OPTIONS[name] : undefined;
    if (option === undefined) {
      return { ok: false, error: `unknown option '${arg}' before the command (there: ${names})` };
    }
    if (option.type === 'boolean') {
      if (equals >= 0) return { ok: false, error: `option '--${name}' takes no value` };
      leading.push(arg);
    } else if (equals >= 0) {
      leading.push(arg);
    } else {
      const value = argv[at + 1];
      if (value === undefined || value.startsWith('-')) {
        return {
          ok: false,
          error: `option '--${name}' needs a value (write --${name}=VALUE for one that starts with '-')`,
        };
      }
      leading.push(`--${name}=${value}`);
      at += 1;
    }
  }
  return { ok: true, leading, rest: argv.slice(at) };
}

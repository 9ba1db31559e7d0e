// `petrel consoles [PATH]`: unikernels that stopped but whose console history petreld still
// keeps (console list-inactive, semantics §3.5).

import { printName } from '../../resources/name.js';
import {
  clientCommand,
  EXIT_HELP,
  expectReply,
  parseCommandLine,
  pathArgument,
  positionals,
  Session,
} from '../client/shell.js';
import { CONNECTION_HELP, CONNECTION_OPTIONS } from '../client/target.js';

const USAGE = `usage: petrel consoles [PATH] [--json]

Lists, relative to PATH (default: all), the unikernels that are not running but whose console
history is kept ('petrel console NAME' still shows it), one per line.

${CONNECTION_HELP}
examples:
  petrel consoles
  petrel consoles user --json

${EXIT_HELP}`;

const OPTIONS = { ...CONNECTION_OPTIONS, json: { type: 'boolean' } } as const;

export const consolesCommand = clientCommand('consoles', USAGE, async (args, io) => {
  const { values, positionals: given } = parseCommandLine(args, OPTIONS);
  const session = new Session(io, values);
  const [pathText] = positionals(given, ['PATH'], 1);
  const path = pathArgument(pathText);
  const reply = expectReply(await session.ask(path, { type: 'console-list-inactive' }), 'consoles');
  const names = reply.names.map(printName);
  session.print(
    () => names.map((n) => `${n}\n`).join(''),
    () => names,
  );
  return 0;
});

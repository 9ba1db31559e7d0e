// `petrel destroy NAME`: stops a unikernel (or cancels its pending restart) and forgets it.

import {
  clientCommand,
  EXIT_HELP,
  labelledName,
  parseCommandLine,
  positionals,
  Session,
} from '../client/shell.js';
import { CONNECTION_HELP, CONNECTION_OPTIONS } from '../client/target.js';

const USAGE = `usage: petrel destroy NAME [--json]

Stops the unikernel NAME (SIGTERM, then SIGKILL after petreld's grace period), waits until it
has exited and its resources are released, and removes it from the persisted state. A unikernel
waiting to be restarted after a failure is taken off that list instead.

${CONNECTION_HELP}
examples:
  petrel destroy hello
  petrel destroy user:web --socket /run/petrel/util/vmmd.sock

${EXIT_HELP}`;

const OPTIONS = { ...CONNECTION_OPTIONS, json: { type: 'boolean' } } as const;

export const destroyCommand = clientCommand('destroy', USAGE, async (args, io) => {
  const { values, positionals: given } = parseCommandLine(args, OPTIONS);
  const session = new Session(io, values);
  const [nameText] = positionals(given, ['NAME']) as [string];
  const name = labelledName(nameText);
  session.printText(name, await session.ask(name, { type: 'unikernel-destroy' }));
  return 0;
});

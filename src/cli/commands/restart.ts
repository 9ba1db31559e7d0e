// `petrel restart NAME [configuration]`: restart [14] keeping the configuration, or with
// arguments [14][3] replacing all of it when any configuration flag is given (semantics §5.5).

import { CONFIG_HELP, CONFIG_OPTIONS, configFromFlags, hasConfigFlags } from '../client/config.js';
import {
  clientCommand,
  EXIT_HELP,
  labelledName,
  parseCommandLine,
  positionals,
  Session,
} from '../client/shell.js';
import { CONNECTION_HELP, CONNECTION_OPTIONS } from '../client/target.js';

const USAGE = `usage: petrel restart NAME [configuration] [--json]

Stops the running unikernel NAME and starts it again with the same image. Without configuration
flags it keeps its configuration. With any of them the whole configuration is replaced by the
flags, the defaults standing in for what is not given (as with create); petreld checks the new
configuration against the policy and the image's manifest before stopping the old one.

${CONFIG_HELP}
${CONNECTION_HELP}
examples:
  petrel restart hello
  petrel restart user:web --mem 128 --net service:br0 --arg=--ipv4=10.0.0.2/24

${EXIT_HELP}`;

const OPTIONS = { ...CONFIG_OPTIONS, ...CONNECTION_OPTIONS, json: { type: 'boolean' } } as const;

export const restartCommand = clientCommand('restart', USAGE, async (args, io) => {
  const { values, positionals: given } = parseCommandLine(args, OPTIONS);
  const session = new Session(io, values);
  const [nameText] = positionals(given, ['NAME']) as [string];
  const name = labelledName(nameText);
  const reply = await session.ask(
    name,
    hasConfigFlags(values)
      ? { type: 'unikernel-restart', form: '2.7', args: configFromFlags(values) }
      : { type: 'unikernel-restart', form: 'keep' },
  );
  session.printText(name, reply);
  return 0;
});

// `petrel info [NAME|PATH]`: the running unikernels at or below a path, or one by name.

import { formatUnikernels, unikernelsJson } from '../client/format.js';
import {
  CLIENT_EXIT,
  clientCommand,
  EXIT_HELP,
  expectReply,
  listingName,
  parseCommandLine,
  positionals,
  Session,
  Stop,
} from '../client/shell.js';
import { CONNECTION_HELP, CONNECTION_OPTIONS } from '../client/target.js';

const USAGE = `usage: petrel info [NAME|PATH] [--json]

Lists running unikernels: all of them (no argument or ':'), those at or below PATH (user:,
names relative to it), or the one named NAME (hello, user:web). Columns: memory, vCPUs@CPU ids,
networks (netif[:bridge]@mac), block devices (name[:device] size/sector), failure behaviour,
start time, image SHA-256 (first 12 hex digits) and arguments. --json prints every field.

${CONNECTION_HELP}
examples:
  petrel info
  petrel info user:
  petrel info hello --json

${EXIT_HELP}`;

const OPTIONS = { ...CONNECTION_OPTIONS, json: { type: 'boolean' } } as const;

export const infoCommand = clientCommand('info', USAGE, async (args, io) => {
  const { values, positionals: given } = parseCommandLine(args, OPTIONS);
  const session = new Session(io, values);
  const [text] = positionals(given, ['NAME|PATH'], 1);
  const name = listingName(text);
  const reply = expectReply(
    await session.ask(name, { type: 'unikernel-info', release: '2.7' }),
    'unikernel-info',
  );
  if (reply.release !== '2.7')
    throw new Stop(CLIENT_EXIT.PROTOCOL, `petreld answered the ${reply.release} info shape`);
  session.print(
    () => formatUnikernels(reply.entries),
    () => unikernelsJson(reply.entries),
  );
  return 0;
});

// `petrel stats NAME|PATH`: resource usage samples of running unikernels every interval of
// petreld's (stats subscribe on stat.sock, semantics §12.3) until Ctrl-C.

import { follow } from '../client/follow.js';
import { statsJson, statsLine } from '../client/format.js';
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

const USAGE = `usage: petrel stats NAME|PATH [--json]

Follows the resource usage of the running unikernel NAME, or of every unikernel at or below
PATH (user:, or ':' for all), one line per unikernel each time petreld samples (its
statsInterval, default 10 s), until interrupted (Ctrl-C, exit 0). Names are relative to PATH.
A line holds CPU time (user, system), memory (resident pages, virtual size) and each network's
packet and byte counters; --json prints each sample as one JSON object per line.

${CONNECTION_HELP}
examples:
  petrel stats hello
  petrel stats user: --json

${EXIT_HELP}`;

const OPTIONS = { ...CONNECTION_OPTIONS, json: { type: 'boolean' } } as const;

export const statsCommand = clientCommand('stats', USAGE, async (args, io) => {
  const { values, positionals: given } = parseCommandLine(args, OPTIONS);
  const session = new Session(io, values);
  const [text] = positionals(given, ['NAME|PATH']) as [string];
  const name = listingName(text);
  const { reply, stream } = await session.subscribe(name, { type: 'stats-subscribe' });
  if (reply.type !== 'string') stream.close();
  io.stderr(`petrel stats: ${expectReply(reply, 'string').text}\n`);
  return follow(io, stream, (from, data) => {
    if (data.type !== 'statistics') {
      throw new Stop(CLIENT_EXIT.PROTOCOL, `petreld sent ${data.type} data on a statistics subscription`);
    }
    const now = new Date();
    io.stdout(session.json ? statsJson(now, from, data.stats) : statsLine(now, from, data.stats));
  });
});

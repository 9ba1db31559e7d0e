// `petrel info [NAME|PATH]`: the running unikernels at or below a path, or one by name, each
// with its last exit, and the recently exited ones that no longer run (Petrel (l)).

import { EXITS_UNKNOWN, formatInfoView, type InfoView, infoViewJson } from '../client/exits.js';
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

Last exits (petreld only: Albatross does not keep them): a table after the listing gives each
unikernel's last exit: the running ones restarted on failure, those waiting for a restart, and
the last 256 dropped (not restarted, so gone: a limit of its jail ended it, exit 1, a crash
loop…), with the exit ("exit 3", "signal SIGXFSZ"), the jail limit that ended it
(RLIMIT_FSIZE, memory cgroup…), when, the restarts on failure within restartWindow, and what
followed (restart time, or why it was dropped). petreld keeps them in memory: its own restart
forgets them. --json adds "state" and "lastExit" ({exit, limit, at, restarts} or null) to each
running entry and lists the others after them as {name, state: "restarting" (with restartAt)
or "dropped" (with reason), lastExit}, so "petrel info NAME --json" says why NAME is gone.
Against Albatross or an older petreld the listing is printed as it was, without "state" and
"lastExit", and stderr says that nothing is known of exits.

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
  // Asked second, so the plain listing never depends on the extension.
  const exits = await session.askExtension(name, { type: 'unikernel-exits' });
  if (exits.ok && exits.reply.type !== 'unikernel-exits')
    throw new Stop(
      CLIENT_EXIT.PROTOCOL,
      `petreld answered ${exits.reply.type} where unikernel-exits was expected`,
    );
  if (!exits.ok) io.stderr(`petrel info: ${EXITS_UNKNOWN} (${exits.reason})\n`);
  const view: InfoView = {
    running: reply.entries,
    exits: exits.ok && exits.reply.type === 'unikernel-exits' ? exits.reply.entries : null,
  };
  session.print(
    () => formatInfoView(view),
    () => infoViewJson(view),
  );
  return 0;
});

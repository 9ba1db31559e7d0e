// `petrel console NAME`: a unikernel's console history, then its live lines until Ctrl-C, or
// with --no-follow the history alone (console subscribe on console.sock, semantics §11.3).

import type { ConsoleSelect, Data, Name } from '../../wire/types.js';
import { follow } from '../client/follow.js';
import { consoleLineJson, consoleLineText } from '../client/format.js';
import {
  CLIENT_EXIT,
  clientCommand,
  EXIT_HELP,
  expectReply,
  labelledName,
  parseCommandLine,
  positionals,
  Session,
  Stop,
  usageError,
  wholeNumber,
} from '../client/shell.js';
import { CONNECTION_HELP, CONNECTION_OPTIONS } from '../client/target.js';

const USAGE = `usage: petrel console NAME [--count N | --since TIME] [--no-follow] [--json]

Prints the last console lines of the unikernel NAME, then follows new ones until interrupted
(Ctrl-C), which closes the subscription cleanly (exit 0). The subscription outlives restarts
and force-creates of NAME; for a name not running yet it waits for it. Lines are
'TIMESTAMP LINE'; --json prints one JSON object per line ({name, timestamp, line}).
The subscription's status goes to stderr.

  --count N     history: the last N lines (0 to 1024, default 20)
  --since TIME  history: lines since TIME, an ISO 8601 time (2024-05-01T12:00:00Z) or a
                duration ago (90s, 5m, 2h, 1d)
  --no-follow   print the history and exit 0: once petreld has replied, petrel unsubscribes
                (it sends a zero frame); petreld sends the history it queued with the reply
                and any line printed until it read that, then closes. The lines are the
                history at that moment (with --count N, the last N of them)

${CONNECTION_HELP}
examples:
  petrel console hello
  petrel console user:web --since 10m --json
  petrel console hello --count 0
  petrel console hello --count 100 --no-follow > hello.log

${EXIT_HELP}`;

const OPTIONS = {
  ...CONNECTION_OPTIONS,
  count: { type: 'string' },
  since: { type: 'string' },
  'no-follow': { type: 'boolean' },
  json: { type: 'boolean' },
} as const;

const UNITS: Readonly<Record<string, number>> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** An ISO 8601 time or a duration before `now`. */
export function parseSince(text: string, now: number = Date.now()): Date {
  const ago = /^(\d{1,9})([smhd])$/u.exec(text);
  if (ago !== null) return new Date(now - Number(ago[1]) * (UNITS[ago[2] as string] as number));
  const at = /^\d{4}-\d{2}-\d{2}(?:[T ][\d:.]+)?(?:Z|[+-]\d{2}:?\d{2})?$/u.test(text) ? new Date(text) : null;
  if (at === null || Number.isNaN(at.getTime())) {
    throw usageError(`--since ${text}: expected an ISO 8601 time or a duration like 90s, 5m, 2h, 1d`);
  }
  return at;
}

export const consoleCommand = clientCommand('console', USAGE, async (args, io) => {
  const { values, positionals: given } = parseCommandLine(args, OPTIONS);
  const session = new Session(io, values);
  const [nameText] = positionals(given, ['NAME']) as [string];
  const name = labelledName(nameText);
  if (values.count !== undefined && values.since !== undefined)
    throw usageError('give --count or --since, not both');
  const select: ConsoleSelect =
    values.since === undefined
      ? { kind: 'count', count: wholeNumber(values.count ?? '20', '--count', 0, 1024) }
      : { kind: 'since', since: parseSince(values.since) };
  const { reply, stream } = await session.subscribe(name, {
    type: 'console-subscribe',
    release: '2.1',
    select,
  });
  if (reply.type !== 'string') stream.close();
  io.stderr(`petrel console: ${expectReply(reply, 'string').text}\n`);
  const line = (from: Name, data: Data): string => {
    if (data.type !== 'console' && data.type !== 'console-old') {
      throw new Stop(CLIENT_EXIT.PROTOCOL, `petreld sent ${data.type} data on a console subscription`);
    }
    return session.json
      ? consoleLineJson(from, data.timestamp, data.line)
      : consoleLineText(data.timestamp, data.line);
  };
  if (values['no-follow'] !== true) return follow(io, stream, (from, data) => io.stdout(line(from, data)));
  // The wire marks no end of the history: our unsubscribe marks it. Every history
  // line was queued before the reply was sent; a line the unikernel printed in the round trip
  // after it is, by the time petreld reads our unsubscribe, part of the history too, and of the last N
  // lines only the newest N are.
  stream.finish();
  const lines: string[] = [];
  const status = await follow(io, stream, (from, data) => lines.push(line(from, data)), 'server');
  const keep = select.kind === 'count' ? lines.slice(Math.max(0, lines.length - select.count)) : lines;
  io.stdout(keep.join(''));
  return status;
});

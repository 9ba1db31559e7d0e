// `petrel block add|remove|info|set|dump`: block devices (semantics §7). Contents travel as
// streams of raw chunks (set) and Data block frames (dump), never whole in memory.

import { printName } from '../../resources/name.js';
import { readPieces, writePieces, zlib } from '../client/files.js';
import { blocksJson, formatBlocks } from '../client/format.js';
import {
  CLIENT_EXIT,
  clientCommand,
  EXIT_HELP,
  expectReply,
  labelledName,
  listingName,
  parseCommandLine,
  positionals,
  Session,
  Stop,
  usageError,
  wholeNumber,
} from '../client/shell.js';
import { CONNECTION_HELP, CONNECTION_OPTIONS } from '../client/target.js';
import type { Stream } from '../client/transport.js';

const USAGE = `usage:
  petrel block add NAME SIZE
  petrel block remove NAME
  petrel block info [NAME|PATH] [--json]
  petrel block set NAME FILE [--compress]
  petrel block dump NAME [--level L] [--out FILE]

add     creates the block device NAME (disk or user:disk) of SIZE MiB, zero-filled.
remove  deletes it; it must not be in use by a unikernel.
info    lists block devices (all, those below PATH, or NAME) with size and state.
set     replaces the content with FILE ('-' = standard input), streamed in chunks; the rest
        of the device is zero-filled. --compress sends it zlib-compressed.
dump    writes the content to FILE or standard output; --level 1..9 has petreld compress it
        on the way (default 0), it is decompressed here.
set and dump need the device not to be in use. On a terminal, the progress of transfers
above 1 MB is shown on stderr (not with --json).

${CONNECTION_HELP}
examples:
  petrel block add user:disk 100
  petrel block set user:disk disk.img --compress
  petrel block dump user:disk --level 6 --out disk.img
  petrel block info user: --json

${EXIT_HELP}`;

const OPTIONS = {
  ...CONNECTION_OPTIONS,
  compress: { type: 'boolean' },
  level: { type: 'string' },
  out: { type: 'string', short: 'o' },
  json: { type: 'boolean' },
} as const;

const ONLY: Readonly<Record<string, string>> = { compress: 'set', level: 'dump', out: 'dump' };

export const blockCommand = clientCommand('block', USAGE, async (args, io) => {
  const { values, positionals: given } = parseCommandLine(args, OPTIONS);
  const session = new Session(io, values);
  const [action, ...rest] = given;
  for (const [flag, owner] of Object.entries(ONLY)) {
    if (values[flag as keyof typeof values] !== undefined && action !== owner) {
      throw usageError(`--${flag} is for block ${owner}`);
    }
  }
  switch (action) {
    case 'add': {
      const [nameText, sizeText] = positionals(rest, ['NAME', 'SIZE']) as [string, string];
      const name = labelledName(nameText);
      const size = wholeNumber(sizeText, 'SIZE (MiB)', 1);
      session.printText(name, await session.ask(name, { type: 'block-add', size }));
      return 0;
    }
    case 'remove': {
      const [nameText] = positionals(rest, ['NAME']) as [string];
      const name = labelledName(nameText);
      session.printText(name, await session.ask(name, { type: 'block-remove' }));
      return 0;
    }
    case 'info': {
      const [text] = positionals(rest, ['NAME|PATH'], 1);
      const name = listingName(text);
      const reply = expectReply(await session.ask(name, { type: 'block-info' }), 'block-devices');
      session.print(
        () => formatBlocks(reply.entries),
        () => blocksJson(reply.entries),
      );
      return 0;
    }
    case 'set': {
      const [nameText, file] = positionals(rest, ['NAME', 'FILE']) as [string, string];
      const name = labelledName(nameText);
      const compressed = values.compress === true;
      const source = await readPieces(io, file);
      // Compressed, what travels is smaller than the file by a ratio known only at the end.
      const total = compressed ? null : source.size;
      const reply = await session.withProgress(`block set ${printName(name)}`, 'sent', total, () =>
        session.ask(
          name,
          { type: 'block-set', compressed },
          compressed ? zlib(source.chunks, 'deflate') : source.chunks,
        ),
      );
      session.printText(name, reply);
      return 0;
    }
    case 'dump': {
      const [nameText] = positionals(rest, ['NAME']) as [string];
      const name = labelledName(nameText);
      const level = wholeNumber(values.level ?? '0', '--level', 0, 9);
      if (values.out === undefined && io.isTty?.stdout === true) {
        throw usageError('standard output is a terminal: give --out FILE or redirect it');
      }
      return session.withProgress(`block dump ${printName(name)}`, 'received', null, () =>
        dump(session, name, level, values.out),
      );
    }
    default:
      throw usageError(
        action === undefined ? 'missing add, remove, info, set or dump' : `unknown action '${action}'`,
      );
  }
});

/** The Data block frames up to `no-data`; a Failure or a break before it stops the dump. */
async function* blockData(stream: Stream): AsyncGenerator<Uint8Array> {
  try {
    for await (const event of stream.events) {
      if (event.kind === 'broken') throw new Stop(CLIENT_EXIT.PROTOCOL, event.error.message);
      if (event.kind === 'failure') throw new Stop(CLIENT_EXIT.REFUSED, event.message);
      if (event.data.type !== 'block') {
        throw new Stop(CLIENT_EXIT.PROTOCOL, `petreld sent ${event.data.type} data in a block dump`);
      }
      if (event.data.data === null) return;
      yield event.data.data;
    }
    throw new Stop(CLIENT_EXIT.PROTOCOL, 'petreld closed the connection before the end of the dump');
  } finally {
    stream.close();
  }
}

async function dump(
  session: Session,
  name: ReturnType<typeof labelledName>,
  level: number,
  out: string | undefined,
) {
  const { reply, stream } = await session.subscribe(name, { type: 'block-dump', level });
  if (reply.type !== 'block-device-image') stream.close();
  const image = expectReply(reply, 'block-device-image');
  const data = blockData(stream);
  await writePieces(session.io, out, image.compressed ? zlib(data, 'inflate') : data);
  return 0;
}

// `petrel get NAME`: the image a unikernel runs, as stored by petreld (semantics §5.2),
// decompressed here when it travelled compressed.

import { createHash } from 'node:crypto';
import { inflateSync } from 'node:zlib';
import { printName } from '../../resources/name.js';
import { writePieces } from '../client/files.js';
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

const USAGE = `usage: petrel get NAME [--level L] [--out FILE] [--json]

Fetches the image of the running unikernel NAME and writes it, uncompressed, to FILE or to
standard output. --level 1..9 has petreld send it zlib-compressed at that level (less to carry,
more work for both sides; default 0). With --json, --out is required and a summary (size,
SHA-256) is printed. On a terminal, the progress of an image above 1 MB is shown on stderr
(not with --json).

${CONNECTION_HELP}
examples:
  petrel get hello --out hello.hvt
  petrel get user:web --level 9 > web.hvt

${EXIT_HELP}`;

const OPTIONS = {
  ...CONNECTION_OPTIONS,
  level: { type: 'string' },
  out: { type: 'string', short: 'o' },
  json: { type: 'boolean' },
} as const;

export const getCommand = clientCommand('get', USAGE, async (args, io) => {
  const { values, positionals: given } = parseCommandLine(args, OPTIONS);
  const session = new Session(io, values);
  const [nameText] = positionals(given, ['NAME']) as [string];
  const name = labelledName(nameText);
  const level = wholeNumber(values.level ?? '0', '--level', 0, 9);
  if (session.json && values.out === undefined) throw usageError('--json needs --out FILE for the image');
  if (values.out === undefined && io.isTty?.stdout === true) {
    throw usageError('standard output is a terminal: give --out FILE or redirect it');
  }
  const reply = expectReply(
    await session.withProgress(`get ${printName(name)}`, 'received', null, () =>
      session.ask(name, { type: 'unikernel-get', level }),
    ),
    'unikernel-image',
  );
  let image: Uint8Array;
  try {
    image = reply.compressed ? inflateSync(reply.image) : reply.image;
  } catch (e) {
    throw new Stop(CLIENT_EXIT.PROTOCOL, `the image petreld sent does not decompress: ${String(e)}`);
  }
  await writePieces(
    io,
    values.out,
    (async function* () {
      yield image;
    })(),
  );
  if (session.json) {
    const digest = createHash('sha256').update(image).digest('hex');
    io.stdout(
      `${JSON.stringify({ name: printName(name), out: values.out, size: image.length, sha256: digest }, null, 2)}\n`,
    );
  }
  return 0;
});

// `petrel create NAME IMAGE [configuration]`: a 2.7 unikernel create [20] (or force-create [21]),
// the image read from a file, its manifest checked against the devices before anything is sent.

import { deflateSync } from 'node:zlib';
import { printName } from '../../resources/name.js';
import { readSolo5Notes } from '../../tender/elf.js';
import { CONFIG_HELP, CONFIG_OPTIONS, checkDevices, configFromFlags } from '../client/config.js';
import { readWhole } from '../client/files.js';
import {
  clientCommand,
  EXIT_HELP,
  labelledName,
  parseCommandLine,
  positionals,
  Session,
  usageError,
} from '../client/shell.js';
import { CONNECTION_HELP, CONNECTION_OPTIONS } from '../client/target.js';

const USAGE = `usage: petrel create NAME IMAGE [configuration] [--force] [--compress] [--json]

Starts the solo5 unikernel IMAGE (a file) as NAME: hello (the same as :hello) or user:web.
The image's manifest must name exactly the --net and --block devices given; this is checked
before connecting. --force replaces a running unikernel of that name (its resources count as
free for the replacement; if the new one fails to start, the old one is started again).
--compress sends the image zlib-compressed. On a terminal, the progress of an image above 1 MB
is shown on stderr (not with --json).

${CONFIG_HELP}
${CONNECTION_HELP}
examples:
  petrel create hello hello.hvt
  petrel create web web.hvt --mem 64 --net service:br0 --arg=--ipv4=10.0.0.2/24
  petrel create user:db db.hvt --block storage:db-disk@4096 --restart-on-fail --exit-code 2
  petrel create hello hello.hvt --force --run-dir /var/run/petrel

${EXIT_HELP}`;

const OPTIONS = {
  ...CONFIG_OPTIONS,
  ...CONNECTION_OPTIONS,
  force: { type: 'boolean', short: 'f' },
  compress: { type: 'boolean' },
  json: { type: 'boolean' },
} as const;

export const createCommand = clientCommand('create', USAGE, async (args, io) => {
  const { values, positionals: given } = parseCommandLine(args, OPTIONS);
  const session = new Session(io, values);
  const [nameText, imagePath] = positionals(given, ['NAME', 'IMAGE']) as [string, string];
  const name = labelledName(nameText);
  const config = configFromFlags(values);
  const image = await readWhole(io, imagePath);
  const notes = readSolo5Notes(image, imagePath);
  if (!notes.ok) throw usageError(notes.error.message);
  checkDevices(notes.value.devices, config);
  const compressed = values.compress === true;
  const sent = compressed ? deflateSync(image, { level: 9 }) : image;
  const reply = await session.withProgress(`create ${printName(name)}`, 'sent', sent.length, () =>
    session.ask(name, {
      type: 'unikernel-create',
      force: values.force === true,
      release: '2.7',
      config: { typ: 'solo5', compressed, image: sent, ...config },
    }),
  );
  session.printText(name, reply);
  return 0;
});

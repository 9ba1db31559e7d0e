// `petrel replace NAME IMAGE --http-check URL | --tcp-check HOST:PORT | --console-line REGEX`:
// Petrel's replace [29] (differences (m)): force-create, a liveness check run by petreld, and
// the previous unikernel brought back when the check fails within --within.

import { deflateSync } from 'node:zlib';
import { livenessCheck, parseWithin } from '../../resources/liveness.js';
import { printName } from '../../resources/name.js';
import { readSolo5Notes } from '../../tender/elf.js';
import {
  CONFIG_HELP,
  CONFIG_OPTIONS,
  checkDevices,
  configFromFlags,
  hasConfigFlags,
} from '../client/config.js';
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

const USAGE = `usage: petrel replace NAME IMAGE CHECK [--within 30s] [configuration] [--compress] [--json]

Replaces the running unikernel NAME by the image IMAGE (a file) and checks that the new one is
alive; if it is not within --within, petreld brings back the previous image and configuration
and the command fails (exit 117), saying why. petreld runs the check, from its host, also over
--remote; the command returns once the check passed or the rollback is done.

Without configuration flags the new image runs with the old unikernel's configuration. With any
of them the whole configuration is the flags', the defaults standing in for what is not given
(as with create). A destroy or create of NAME during the check gives the replacement up. If
petreld stops or crashes during the check, its next start brings the previous unikernel back.

check (exactly one):
  --http-check URL            GET URL from petreld's host; a 2xx or 3xx status passes
  --tcp-check HOST:PORT       a TCP connection to HOST:PORT ([IPV6]:PORT) that is accepted passes
  --console-line REGEX        a line of the new unikernel's console matching REGEX (JavaScript
                              syntax, at most 256 characters, no back-references or repeated
                              groups holding a repetition) passes
  --within DURATION           how long it has to pass: 1s to 10m (default 30s); HTTP and TCP
                              are tried every 250 ms until then

${CONFIG_HELP}
${CONNECTION_HELP}
examples:
  petrel replace web web-v2.hvt --http-check http://10.0.0.2/health
  petrel replace web web-v2.hvt --tcp-check 10.0.0.2:443 --within 1m
  petrel replace user:dns dns-v2.hvt --console-line '^dns: ready' --mem 64 --net service:br0

${EXIT_HELP}`;

const OPTIONS = {
  ...CONFIG_OPTIONS,
  ...CONNECTION_OPTIONS,
  'http-check': { type: 'string' },
  'tcp-check': { type: 'string' },
  'console-line': { type: 'string' },
  within: { type: 'string' },
  compress: { type: 'boolean' },
  json: { type: 'boolean' },
} as const;

/** The CLI names the command already ("petrel replace: …"). */
const unprefixed = (message: string) => message.replace(/^replace: /u, '');

export const replaceCommand = clientCommand('replace', USAGE, async (args, io) => {
  const { values, positionals: given } = parseCommandLine(args, OPTIONS);
  const session = new Session(io, values);
  const [nameText, imagePath] = positionals(given, ['NAME', 'IMAGE']) as [string, string];
  const name = labelledName(nameText);
  const within = values.within === undefined ? undefined : parseWithin(values.within);
  if (within !== undefined && !within.ok) throw usageError(unprefixed(within.error.message));
  const check = livenessCheck({
    http: values['http-check'],
    tcp: values['tcp-check'],
    console: values['console-line'],
    ...(within === undefined ? {} : { withinMs: within.value }),
  });
  if (!check.ok) throw usageError(unprefixed(check.error.message));
  const keepConfig = !hasConfigFlags(values);
  const config = configFromFlags(values);
  const image = await readWhole(io, imagePath);
  const notes = readSolo5Notes(image, imagePath);
  if (!notes.ok) throw usageError(notes.error.message);
  // With the old configuration, petreld checks the manifest against it.
  if (!keepConfig) checkDevices(notes.value.devices, config);
  const compressed = values.compress === true;
  const sent = compressed ? deflateSync(image, { level: 9 }) : image;
  const reply = await session.withProgress(`replace ${printName(name)}`, 'sent', sent.length, () =>
    session.ask(name, {
      type: 'unikernel-create',
      force: true,
      release: '2.7',
      config: { typ: 'solo5', compressed, image: sent, ...config },
      check: { ...check.value, keepConfig },
    }),
  );
  session.printText(name, reply);
  return 0;
});

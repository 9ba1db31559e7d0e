// `petrel wire decode|encode`: a thin shell over src/wire/tool.ts (argument parsing and files).

import { parseArgs } from 'node:util';
import type { WireError } from '../../wire/errors.js';
import type { Json } from '../../wire/json.js';
import { decodeToJson, encodeFromJson, WIRE_MODES, type WireMode } from '../../wire/tool.js';
import { type CliCommand, type CliIo, EXIT } from '../command.js';

const USAGE = `usage:
  petrel wire decode FILE [--framed|--der|--cert|--state] [--json] [--max-frame BYTES]
  petrel wire encode [FILE] [--framed|--der|--cert|--state] [--out FILE]

decode reads FILE ('-' = standard input) and prints what it holds:
  --framed   frames: 4-byte big-endian length + DER message (default)
  --der      one DER message without a length prefix
  --cert     the command in a certificate's Albatross extension (DER or PEM)
  --state    a state file (any version)
  --json     print the decoded values as JSON (otherwise one summary line per message)
  --max-frame BYTES   refuse frames above this size (default 67108864)

encode reads the JSON that decode --json prints (from FILE or standard input) and writes the
bytes to standard output or --out FILE. --cert writes the extension value (extnValue content);
--state writes a version 6 state file, upgrading older versions.

Exit status: 0 on success, 1 when the input cannot be decoded or encoded, 2 on a usage error.
`;

const OPTIONS = {
  framed: { type: 'boolean' },
  der: { type: 'boolean' },
  cert: { type: 'boolean' },
  state: { type: 'boolean' },
  json: { type: 'boolean' },
  'max-frame': { type: 'string' },
  out: { type: 'string', short: 'o' },
  help: { type: 'boolean', short: 'h' },
} as const;

export const wireCommand: CliCommand = {
  name: 'wire',
  usage: USAGE,
  run: async (args, io) => {
    let parsed: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>;
    try {
      parsed = parseArgs({ args: [...args], options: OPTIONS, allowPositionals: true, strict: true });
    } catch (e) {
      return usageError(io, e instanceof Error ? e.message : String(e));
    }
    const { values, positionals } = parsed;
    if (values.help === true) {
      io.stdout(USAGE);
      return EXIT.OK;
    }
    const modes = WIRE_MODES.filter((mode) => values[mode] === true);
    if (modes.length > 1) return usageError(io, `choose one of --${modes.join(', --')}`);
    const mode: WireMode = modes[0] ?? 'framed';
    const [action, file, ...extra] = positionals;
    if (extra.length > 0) return usageError(io, `unexpected argument '${extra[0]}'`);
    if (action === 'decode') {
      if (file === undefined) return usageError(io, 'decode needs a FILE');
      if (values.out !== undefined) return usageError(io, '--out is for encode');
      const maxFrame = values['max-frame'] === undefined ? undefined : Number(values['max-frame']);
      if (maxFrame !== undefined && !(Number.isSafeInteger(maxFrame) && maxFrame > 0)) {
        return usageError(io, '--max-frame must be a positive integer');
      }
      return decode(io, file, mode, values.json === true, maxFrame);
    }
    if (action === 'encode') {
      if (values.json === true || values['max-frame'] !== undefined) {
        return usageError(io, '--json and --max-frame are for decode');
      }
      return encode(io, file ?? '-', mode, values.out);
    }
    return usageError(io, action === undefined ? 'missing decode or encode' : `unknown action '${action}'`);
  },
};

function usageError(io: CliIo, message: string): number {
  io.stderr(`petrel wire: ${message}\n\n${USAGE}`);
  return EXIT.USAGE;
}

function failure(io: CliIo, file: string, error: WireError): number {
  io.stderr(`petrel wire: ${file}: ${error.code}: ${error.message}\n`);
  return EXIT.FAILURE;
}

async function readInput(io: CliIo, file: string): Promise<Uint8Array | string> {
  try {
    return await io.readFile(file);
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  }
}

async function decode(
  io: CliIo,
  file: string,
  mode: WireMode,
  json: boolean,
  maxFrame: number | undefined,
): Promise<number> {
  const bytes = await readInput(io, file);
  if (typeof bytes === 'string') {
    io.stderr(`petrel wire: cannot read ${file}: ${bytes}\n`);
    return EXIT.FAILURE;
  }
  const decoded = decodeToJson(bytes, mode, maxFrame === undefined ? {} : { maxFrame });
  if (!decoded.ok) return failure(io, file, decoded.error);
  io.stdout(json ? `${JSON.stringify(decoded.value, null, 2)}\n` : summary(decoded.value, mode));
  return EXIT.OK;
}

async function encode(io: CliIo, file: string, mode: WireMode, out: string | undefined): Promise<number> {
  const input = await readInput(io, file);
  if (typeof input === 'string') {
    io.stderr(`petrel wire: cannot read ${file}: ${input}\n`);
    return EXIT.FAILURE;
  }
  const bytes = encodeFromJson(Buffer.from(input).toString('utf8'), mode);
  if (!bytes.ok) return failure(io, file, bytes.error);
  if (out === undefined) io.stdout(bytes.value);
  else {
    try {
      await io.writeFile(out, bytes.value);
    } catch (e) {
      io.stderr(`petrel wire: cannot write ${out}: ${e instanceof Error ? e.message : String(e)}\n`);
      return EXIT.FAILURE;
    }
  }
  return EXIT.OK;
}

// --- one line per message for people --------------------------------------------------------

type JsonObject = { readonly [key: string]: Json };
const field = (value: Json | undefined, key: string): Json | undefined =>
  typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as JsonObject)[key]
    : undefined;

function describeWire(wire: Json): string {
  const header = field(wire, 'header');
  const payload = field(wire, 'payload');
  const kind = String(field(payload, 'kind'));
  const inner = field(payload, kind === 'failure' ? 'message' : kind);
  const what = kind === 'failure' ? JSON.stringify(inner) : describeInner(inner);
  return `${kind} ${what} name=${String(field(header, 'name'))} sequence=${String(field(header, 'sequence'))}`;
}

function describeInner(inner: Json | undefined): string {
  const type = String(field(inner, 'type'));
  const release = field(inner, 'release') ?? field(inner, 'form');
  return release === undefined ? type : `${type} (${String(release)})`;
}

function summary(value: Json, mode: WireMode): string {
  switch (mode) {
    case 'framed': {
      const frames = Array.isArray(value) ? value : [];
      const lines = frames.map((f, i) => {
        const end = field(f, 'end');
        return `frame ${i}: ${end === undefined ? describeWire(f) : `end of stream (length ${String(end)})`}`;
      });
      return `${lines.join('\n')}\n`;
    }
    case 'der':
      return `${describeWire(value)}\n`;
    case 'cert': {
      const certs = Array.isArray(value) ? value : [value];
      const lines = certs.map((c) =>
        c === null ? 'no Albatross extension' : `command ${describeInner(field(c, 'command'))}`,
      );
      return `${lines.join('\n')}\n`;
    }
    case 'state': {
      const unikernels = field(value, 'unikernels');
      const policies = field(value, 'policies');
      const count = (list: Json | undefined) => (Array.isArray(list) ? list.length : 0);
      return `state version ${String(field(value, 'version'))}: ${count(unikernels)} unikernel(s), ${count(policies)} policy(ies)\n`;
    }
  }
}

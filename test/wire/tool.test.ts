// `petrel wire decode|encode`: bytes → JSON → the same bytes, for every captured frame, certificate
// and state file; clear errors and exit codes otherwise. The CLI runs with injected I/O.

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import type { CliIo } from '../../src/cli/command.js';
import { runPetrel } from '../../src/cli/dispatch.js';
import { decodeToJson, encodeFromJson } from '../../src/wire/tool.js';
import { failed, hex, ok, steps, toHex, VECTORS } from './helpers.js';

const framed = steps().flatMap((step) =>
  readdirSync(join(VECTORS, step))
    .filter((f) => f.endsWith('.bin'))
    .map((f) => join(step, f)),
);

describe('decodeToJson / encodeFromJson', () => {
  test('every captured frame survives bytes → JSON → bytes', () => {
    for (const file of framed) {
      const bytes = new Uint8Array(readFileSync(join(VECTORS, file)));
      const json = JSON.stringify(ok(decodeToJson(bytes, 'framed')));
      expect(toHex(ok(encodeFromJson(json, 'framed'))), file).toBe(toHex(bytes));
    }
  });

  test('a console line that is not UTF-8 is written as hex and comes back the same', () => {
    const der = hex(
      '30 2e 30 13 02 01 05 04 08 00×8 0c 04 3a 66 6f 6f a3 17 a3 15 30 13 18 0f 32 30 32 34 30 31 30 32 30 33 30 34 30 35 5a 0c 00'.replace(
        '0c 00',
        '0c 00',
      ),
    );
    const json = ok(decodeToJson(der, 'der'));
    const withBadLine = JSON.stringify(json).replace('"line":""', '"line":{"hex":"ff00"}');
    const bytes = ok(encodeFromJson(withBadLine, 'der'));
    expect(JSON.stringify(ok(decodeToJson(bytes, 'der')))).toContain('"line":{"hex":"ff00"}');
  });

  test('certificates (DER and PEM) give {critical, command}; encode gives the extension value', () => {
    const der = new Uint8Array(readFileSync(join(VECTORS, 'pki', 'sub.der')));
    const json = ok(decodeToJson(der, 'cert'));
    expect(json).toEqual({
      critical: false,
      command: {
        type: 'policy-add',
        policy: { vms: '2', memory: 256, cpuids: [0], block: 100, bridges: ['service'] },
      },
    });
    expect(ok(decodeToJson(new Uint8Array(readFileSync(join(VECTORS, 'pki', 'sub.pem'))), 'cert'))).toEqual(
      json,
    );
    expect(
      ok(decodeToJson(new Uint8Array(readFileSync(join(VECTORS, 'pki', 'cacert.der'))), 'cert')),
    ).toBeNull();
    expect(toHex(ok(encodeFromJson(JSON.stringify(json), 'cert')))).toBe(
      '30 23 02 01 05 a4 1e a1 1c 30 1a 30 03 02 01 00 02 01 02 02 02 01 00 02 01 64 30 09 0c 07 73 65 72 76 69 63 65',
    );
  });

  test('state files: decoded in their version, written as version 6', () => {
    expect(ok(decodeToJson(hex('a3 02 30 00'), 'state'))).toEqual({ version: 3, unikernels: [] });
    expect(toHex(ok(encodeFromJson('{"version":3,"unikernels":[]}', 'state')))).toBe(
      'a6 06 30 04 30 00 30 00',
    );
  });

  test('errors carry the offset within the file', () => {
    // The local client's `remove-policy` frame: 00 00 00 1f 30 1d 30 13 02 01 05 …
    const bytes = hex(
      '00 00 00 1f 30 1d 30 13 02 01 05 04 08 00×8 0c 04 73 75 62 3a a0 06 a4 04 a2 02 05 00',
    );
    const broken = Uint8Array.from(bytes);
    broken[10] = 0x06; // the version's value; its INTEGER starts at byte 8 of the file
    const error = failed(decodeToJson(broken, 'framed'), 'E_WIRE_VERSION');
    expect(error.message).toBe('unknown version number 0x6 at byte 8');
  });

  test.each([
    ['not JSON', '{', /invalid JSON input/],
    [
      'an unknown command',
      '{"header":{"version":5,"sequence":"0","name":":"},"payload":{"kind":"command","command":{"type":"nope"}}}',
      /cannot encode command nope/,
    ],
    [
      'a field too many',
      '{"header":{"version":5,"sequence":"0","name":":","extra":1},"payload":{"kind":"command","command":{"type":"policy-info"}}}',
      /field header.extra/,
    ],
    [
      'a bigint as a number',
      '{"header":{"version":5,"sequence":0,"name":":"},"payload":{"kind":"command","command":{"type":"policy-info"}}}',
      /field header.sequence/,
    ],
    [
      'a missing field',
      '{"header":{"version":5,"sequence":"0","name":":"},"payload":{"kind":"command","command":{"type":"block-add"}}}',
      /not an integer/,
    ],
    [
      'an invalid name',
      '{"header":{"version":5,"sequence":"0","name":"a::b"},"payload":{"kind":"failure","message":"x"}}',
      /invalid name/,
    ],
    [
      'a bad hex image',
      '{"header":{"version":5,"sequence":"0","name":":"},"payload":{"kind":"reply","reply":{"type":"unikernel-image","compressed":false,"image":"xyz"}}}',
      /hex string/,
    ],
    ['no message at all', '42', /does not describe a message/],
  ])('encode refuses %s', (_title, json, text) => {
    expect(failed(encodeFromJson(json, 'der'), 'E_WIRE_JSON').message).toMatch(text);
  });
});

/** In-memory I/O for the CLI. */
function fakeIo(files: Record<string, Uint8Array | string> = {}) {
  const out: (string | Uint8Array)[] = [];
  const err: string[] = [];
  const written: Record<string, Uint8Array> = {};
  const io: CliIo = {
    stdout: (chunk) => out.push(chunk),
    stderr: (text) => err.push(text),
    readFile: async (path) => {
      const content = files[path];
      if (content === undefined) throw new Error(`ENOENT: no such file, open '${path}'`);
      return typeof content === 'string' ? new TextEncoder().encode(content) : content;
    },
    writeFile: async (path, data) => {
      written[path] = data;
    },
  };
  return {
    io,
    out,
    err,
    written,
    text: () => out.map((c) => (typeof c === 'string' ? c : `<${c.length} bytes>`)).join(''),
  };
}

describe('petrel CLI', () => {
  const info = new Uint8Array(
    readFileSync(
      join(
        VECTORS,
        framed.find((f) => f.startsWith('15-') && f.includes('client') && f.endsWith('tls-read.bin')) ?? '',
      ),
    ),
  );

  test('petrel --help lists the subcommands; petrel with nothing is a usage error', async () => {
    const help = fakeIo();
    expect(await runPetrel(['--help'], help.io)).toBe(0);
    expect(help.text()).toMatch(/wire\s+decode and encode/);
    const none = fakeIo();
    expect(await runPetrel([], none.io)).toBe(2);
    const unknown = fakeIo();
    expect(await runPetrel(['fly'], unknown.io)).toBe(2);
    expect(unknown.err.join('')).toMatch(/unknown command 'fly'/);
  });

  test('petrel wire --help and petrel help wire print the wire usage', async () => {
    for (const argv of [
      ['wire', '--help'],
      ['help', 'wire'],
    ]) {
      const run = fakeIo();
      expect(await runPetrel(argv, run.io)).toBe(0);
      expect(run.text()).toMatch(/petrel wire decode FILE/);
    }
  });

  test('decode prints a summary, or JSON with --json', async () => {
    const run = fakeIo({ 'info.bin': info });
    expect(await runPetrel(['wire', 'decode', 'info.bin'], run.io)).toBe(0);
    expect(run.text()).toBe('frame 0: reply unikernel-info (2.1) name=sub: sequence=0\n');
    const json = fakeIo({ 'info.bin': info });
    expect(await runPetrel(['wire', 'decode', 'info.bin', '--json'], json.io)).toBe(0);
    expect(JSON.parse(json.text())[0].payload.reply.entries[0].name).toBe(':ctl');
  });

  test('encode turns the JSON back into the same bytes, to stdout or --out', async () => {
    const json = fakeIo({ 'info.bin': info });
    await runPetrel(['wire', 'decode', 'info.bin', '--json'], json.io);
    const run = fakeIo({ 'info.json': json.text() });
    expect(await runPetrel(['wire', 'encode', 'info.json', '--framed'], run.io)).toBe(0);
    expect(toHex(run.out[0] as Uint8Array)).toBe(toHex(info));
    const toFile = fakeIo({ '-': json.text() });
    expect(await runPetrel(['wire', 'encode', '--out', 'x.bin'], toFile.io)).toBe(0);
    expect(toHex(toFile.written['x.bin'] ?? new Uint8Array())).toBe(toHex(info));
  });

  test('undecodable input exits 1 with the code and offset; bad usage exits 2', async () => {
    const bad = fakeIo({ 'bad.bin': hex('00 00 00 02 31 00') });
    expect(await runPetrel(['wire', 'decode', 'bad.bin'], bad.io)).toBe(1);
    expect(bad.err.join('')).toBe('petrel wire: bad.bin: E_WIRE_TAG: not a sequence at byte 4\n');
    const missing = fakeIo();
    expect(await runPetrel(['wire', 'decode', 'nope.bin'], missing.io)).toBe(1);
    expect(missing.err.join('')).toMatch(/cannot read nope.bin/);
    const huge = fakeIo({ 'big.bin': hex('00 00 10 00') });
    expect(await runPetrel(['wire', 'decode', 'big.bin', '--max-frame', '16'], huge.io)).toBe(1);
    expect(huge.err.join('')).toMatch(/E_WIRE_FRAME_TOO_LARGE/);
    for (const argv of [
      ['wire'],
      ['wire', 'decode'],
      ['wire', 'decode', 'a', '--der', '--cert'],
      ['wire', 'decode', 'a', '--bogus'],
      ['wire', 'frobnicate'],
      ['wire', 'decode', 'a', '--max-frame', 'lots'],
    ]) {
      const run = fakeIo();
      expect(await runPetrel(argv, run.io), argv.join(' ')).toBe(2);
    }
  });
});

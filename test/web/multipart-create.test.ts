// A create sent as multipart/form-data, over REAL HTTPS against a REAL petreld (test/tls/petreld.ts,
// the fake-kvm TEST DOUBLE standing in for KVM where it is missing): the parts before the image are
// the create's parameters, the image part is streamed; malformed bodies (no boundary, no image
// part, a part too large, truncated, a part after the image) are refused with 400 and a message
// naming what is wrong, and nothing is created or left in the store. Responses are checked
// against docs/openapi.json.

import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canaryImage } from '../engine/guest.js';
import { mintToken, type Petreld, startPetreld } from '../tls/petreld.js';
import { type ApiReply, callApi, type WebClient, webClient } from './client.js';

const ONE = '/api/v1/unikernels/{name}';
const BOUNDARY = '----petrel-test-7d1f';
let petreld: Petreld;
let web: WebClient;
let image: Buffer;

type Part = { readonly name: string; readonly filename?: string; readonly data: Buffer | string };

/** The multipart body of `parts`, in pieces: each part's head, its data, and the end. */
function form(parts: readonly Part[], close = true): Buffer[] {
  const out: Buffer[] = [];
  for (const p of parts) {
    const file = p.filename === undefined ? '' : `; filename="${p.filename}"`;
    const type = p.filename === undefined ? '' : '\r\nContent-Type: application/octet-stream';
    out.push(
      Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${p.name}"${file}${type}\r\n\r\n`),
    );
    const data = Buffer.isBuffer(p.data) ? p.data : Buffer.from(p.data);
    // A file in 64 KiB pieces, as a client streams it.
    for (let at = 0; at < data.length; at += 65_536) out.push(data.subarray(at, at + 65_536));
    out.push(Buffer.from('\r\n'));
  }
  if (close) out.push(Buffer.from(`--${BOUNDARY}--\r\n`));
  return out;
}

function send(method: string, name: string, body: Buffer[], type?: string, query = ''): Promise<ApiReply> {
  return callApi({
    ...web,
    method,
    url: `/api/v1/unikernels/${name}${query}`,
    template: ONE,
    headers: {
      'content-type': type ?? `multipart/form-data; boundary=${BOUNDARY}`,
      'content-length': String(body.reduce((n, b) => n + b.length, 0)),
    },
    body,
  });
}

const error = (reply: ApiReply) => (reply.json as { error: { code: string; message: string } }).error;
const running = () => [...petreld.daemon.engine.running].sort();
const stored = async () => (await readdir(path.join(petreld.stateDir, 'images'))).sort();

beforeAll(async () => {
  petreld = await startPetreld({ erin: ['--vms', '3', '--mem', '64'] }, {}, { web: true });
  web = await webClient(petreld, await mintToken(petreld, 'erin', 'form'));
  image = await readFile(canaryImage);
});
afterAll(async () => {
  await petreld?.stop();
});

describe('multipart create', () => {
  it('POST and PUT: the parts before the image are its parameters, the image part is streamed', async () => {
    const made = await send(
      'POST',
      'formed',
      form([
        { name: 'mem', data: '8' },
        { name: 'arg', data: 'wait' },
        { name: 'arg', data: 'second one' },
        { name: 'no-add-name', data: 'true' },
        { name: 'image', filename: 'canary.hvt', data: image },
      ]),
    );
    expect(made).toMatchObject({ status: 201, json: { name: 'formed', reply: 'created unikernel' } });
    const info = await web.call('GET', '/api/v1/unikernels/formed', ONE);
    expect(info.json).toMatchObject({
      memory: 8,
      arguments: ['wait', 'second one'],
      digest: createHash('sha256').update(image).digest('hex'),
    });
    // Query parameters and parts add up (here the memory from the query, the arguments from a part).
    const put = await send(
      'PUT',
      'mixed',
      form([
        { name: 'arg', data: 'wait' },
        { name: 'image', data: image },
      ]),
      undefined,
      '?mem=10',
    );
    expect(put.status).toBe(201);
    expect(running()).toEqual(['erin:formed', 'erin:mixed']);
  });

  it('refuses malformed multipart with 400 and why, creating nothing', async () => {
    const before = await stored();
    const refused = async (reply: Promise<ApiReply>, code: string, message: RegExp) => {
      const r = await reply;
      expect(r.status).toBe(400);
      expect(error(r).code).toBe(code);
      expect(error(r).message).toMatch(message);
    };
    const withImage = form([
      { name: 'mem', data: '8' },
      { name: 'arg', data: 'wait' },
      { name: 'image', data: image },
    ]);
    const imageLast = (first: { name: string; data: string }) =>
      form([first, { name: 'image', data: image }]);
    // Each: the unikernel's name, the body, its content type (undefined: the form's), the refusal.
    const cases: [string, Buffer[], string | undefined, string, RegExp][] = [
      ['bad1', withImage, 'multipart/form-data', 'E_WEB_MULTIPART', /no boundary/],
      ['bad2', form([{ name: 'mem', data: '8' }]), undefined, 'E_WEB_MULTIPART', /no part named "image"/],
      [
        'bad3',
        imageLast({ name: 'arg', data: 'x'.repeat(70_000) }),
        undefined,
        'E_WEB_MULTIPART',
        /"arg" is too large/,
      ],
      // Cut after the image's bytes, before the closing delimiter: the image had gone to petreld.
      ['bad4', form([{ name: 'image', data: image }], false), undefined, 'E_WEB_MULTIPART', /truncated/],
      [
        'bad5',
        form([
          { name: 'image', data: image },
          { name: 'mem', data: '8' },
        ]),
        undefined,
        'E_WEB_MULTIPART',
        /image must be the last part/,
      ],
      ['bad6', imageLast({ name: 'mem', data: 'lots' }), undefined, 'E_WEB_CONFIG', /mem/],
      [
        'bad7',
        imageLast({ name: 'colour', data: 'red' }),
        undefined,
        'E_WEB_QUERY',
        /unknown parameter "colour"/,
      ],
    ];
    for (const [name, body, type, code, message] of cases)
      await refused(send('PUT', name, body, type), code, message);
    expect(running()).toEqual(['erin:formed', 'erin:mixed']);
    expect(await stored()).toEqual(before);
    const audits = petreld.logs.filter(
      (l) => l.event === 'web.audit' && String(l.unikernel).startsWith('erin:bad'),
    );
    expect(audits.map((l) => l.status)).toEqual([400, 400, 400, 400, 400, 400, 400]);
  });
});

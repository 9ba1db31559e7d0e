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
import { type ApiReply, callApi } from './client.js';

const ONE = '/api/v1/unikernels/{name}';
const BOUNDARY = '----petrel-test-7d1f';
let petreld: Petreld;
let cacert: Buffer;
let token = '';
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
    port: petreld.webPort as number,
    ca: cacert,
    token,
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
  cacert = await readFile(path.join(petreld.ca, 'cacert.pem'));
  token = await mintToken(petreld, 'erin', 'form');
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
    const info = await callApi({
      port: petreld.webPort as number,
      ca: cacert,
      token,
      method: 'GET',
      url: '/api/v1/unikernels/formed',
      template: ONE,
    });
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
    await refused(send('PUT', 'bad1', withImage, 'multipart/form-data'), 'E_WEB_MULTIPART', /no boundary/);
    await refused(
      send('PUT', 'bad2', form([{ name: 'mem', data: '8' }])),
      'E_WEB_MULTIPART',
      /no part named "image"/,
    );
    await refused(
      send(
        'PUT',
        'bad3',
        form([
          { name: 'arg', data: 'x'.repeat(70_000) },
          { name: 'image', data: image },
        ]),
      ),
      'E_WEB_MULTIPART',
      /"arg" is too large/,
    );
    // Cut after the image's bytes, before the closing delimiter: the image had gone to petreld.
    await refused(
      send('PUT', 'bad4', form([{ name: 'image', data: image }], false)),
      'E_WEB_MULTIPART',
      /truncated/,
    );
    await refused(
      send(
        'PUT',
        'bad5',
        form([
          { name: 'image', data: image },
          { name: 'mem', data: '8' },
        ]),
      ),
      'E_WEB_MULTIPART',
      /image must be the last part/,
    );
    await refused(
      send(
        'PUT',
        'bad6',
        form([
          { name: 'mem', data: 'lots' },
          { name: 'image', data: image },
        ]),
      ),
      'E_WEB_CONFIG',
      /mem/,
    );
    await refused(
      send(
        'PUT',
        'bad7',
        form([
          { name: 'colour', data: 'red' },
          { name: 'image', data: image },
        ]),
      ),
      'E_WEB_QUERY',
      /unknown parameter "colour"/,
    );
    expect(running()).toEqual(['erin:formed', 'erin:mixed']);
    expect(await stored()).toEqual(before);
    const audits = petreld.logs.filter(
      (l) => l.event === 'web.audit' && String(l.unikernel).startsWith('erin:bad'),
    );
    expect(audits.map((l) => l.status)).toEqual([400, 400, 400, 400, 400, 400, 400]);
  });
});

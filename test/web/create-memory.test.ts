// A 50 MB image created through the web API of petreld as its own process (its RSS is its own):
// the body is streamed to the store as it arrives, so petreld's resident memory (sampled after a
// collection and trim, test/memory.ts) peaks well under the image's size, and the stored image
// is those bytes exactly; the same for the image part of a multipart/form-data create. Guests run under the fake-kvm TEST DOUBLE where KVM is missing.

import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { request } from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { launchDaemon } from '../daemon/process.js';
import { canaryImage, testTender } from '../engine/guest.js';
import { makeNetns, storedState } from '../engine/harness.js';
import { peakRise, transferAllowance } from '../memory.js';
import { petrelCa } from '../tls/petreld.js';

const netns = makeNetns();
const base = await mkdtemp(path.join(tmpdir(), 'petrel-web-memory-'));
afterAll(async () => {
  netns.destroy();
  await rm(base, { recursive: true, force: true });
});

const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });

/** The canary followed by `bytes` of hash-chained filler (the loader ignores what follows). */
async function imageOf(seed: string, bytes: number): Promise<Buffer> {
  const tail = Buffer.alloc(bytes);
  let block = createHash('sha256').update(seed).digest();
  for (let at = 0; at < bytes; at += block.length) {
    block.copy(tail, at);
    block = createHash('sha256').update(block).digest();
  }
  return Buffer.concat([await readFile(canaryImage), tail]);
}

const BOUNDARY = 'petrel-memory-3b9e';

/** `image` as the last part of a multipart/form-data body, after a parameter part. */
function multipart(image: Buffer): Buffer[] {
  const head = Buffer.from(
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="arg"\r\n\r\nwait\r\n` +
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="image"; filename="big.hvt"\r\n\r\n`,
  );
  return [head, image, Buffer.from(`\r\n--${BOUNDARY}--\r\n`)];
}

/** A create of `image`: raw, or (`form`) as multipart/form-data. */
function put(
  port: number,
  ca: Buffer,
  token: string,
  name: string,
  image: Buffer,
  form = false,
): Promise<{ status: number; body: string }> {
  const pieces = form ? multipart(image) : [image];
  const length = pieces.reduce((n, p) => n + p.length, 0);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: 'PUT',
        path: `/api/v1/unikernels/${name}?mem=16${form ? '' : '&arg=wait'}`,
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': form ? `multipart/form-data; boundary=${BOUNDARY}` : 'application/octet-stream',
          'content-length': length,
        },
        ca,
        agent: false,
      },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => {
          body += c.toString('utf8');
        });
        res.on('end', () => resolve({ status: res.statusCode as number, body }));
      },
    );
    req.on('error', reject);
    // In 1 MiB writes, as a client streaming a file does.
    for (const piece of pieces)
      for (let at = 0; at < piece.length; at += 1024 * 1024) req.write(piece.subarray(at, at + 1024 * 1024));
    req.end();
  });
}

it('a 50 MB create through the web API is stored as it arrives, never held whole', async () => {
  const ca = path.join(base, 'ca');
  await mkdir(ca, { recursive: true });
  await petrelCa('init', '--dir', ca);
  await petrelCa('delegate', 'alice', '--vms', '3', '--mem', '64', '--dir', ca);
  await petrelCa('web-cert', '127.0.0.1', '--dir', ca);
  const token = (
    await petrelCa('token', '--cert', `${ca}/alice.pem`, '--key', `${ca}/alice.key`, '--name', 'ci')
  ).trim();
  const port = await freePort();
  const dir = path.join(base, 'petreld');
  const flags = [
    '--state-dir',
    `${dir}/state`,
    '--run-dir',
    `${dir}/run`,
    '--tender-hvt',
    await testTender(base),
  ];
  flags.push('--runtimes', 'hvt', '--stop-timeout', '2s', '--canary-deadline', '10s', '--log-level', 'warn');
  flags.push('--web-listen', `127.0.0.1:${port}`, '--tls-ca', `${ca}/cacert.pem`);
  flags.push('--web-cert', `${ca}/web.pem`, '--web-key', `${ca}/web.key`);
  const daemon = await launchDaemon(
    flags,
    { PETREL_TEST_NETNS: netns.name, PETREL_FAKE_KVM: '1' },
    undefined,
    120_000,
  );
  try {
    const cacert = await readFile(`${ca}/cacert.pem`);
    // A first create loads and compiles what the path needs: not what is measured.
    expect((await put(port, cacert, token, 'warm', await imageOf('warm', 4_000_000))).status).toBe(201);
    const image = await imageOf('big', 50_000_000);
    const created = await peakRise(daemon, () => put(port, cacert, token, 'big', image));
    expect(created.value).toEqual({
      status: 201,
      body: JSON.stringify({ name: 'big', reply: 'created unikernel' }),
    });
    expect(created.bytes, 'RSS rise during a 50 MB create through the web API').toBeLessThan(
      transferAllowance(image.length),
    );
    // The same as multipart/form-data: the image part streamed as it arrives too.
    const formImage = await imageOf('form', 50_000_000);
    const formed = await peakRise(daemon, () => put(port, cacert, token, 'form', formImage, true));
    expect(formed.value).toEqual({
      status: 201,
      body: JSON.stringify({ name: 'form', reply: 'created unikernel' }),
    });
    expect(formed.bytes, 'RSS rise during a 50 MB multipart create').toBeLessThan(
      transferAllowance(formImage.length),
    );
    const state = await storedState(`${dir}/state`);
    for (const [label, bytes] of [
      ['big', image],
      ['form', formImage],
    ] as const) {
      const stored = state.unikernels.find((u) => u.name.label === label);
      expect(stored?.image).toEqual({
        digest: createHash('sha256').update(bytes).digest('hex'),
        size: bytes.length,
      });
    }
    console.log(
      `web create of ${image.length} bytes: petreld's RSS rose ${(created.bytes / 1e6).toFixed(1)} MB; ` +
        `multipart: ${(formed.bytes / 1e6).toFixed(1)} MB`,
    );
  } finally {
    await daemon.stop();
  }
}, 120_000);

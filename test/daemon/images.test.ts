// Images through petreld as its own process (its RSS is its own): 40 unikernels with distinct
// images come back from the store after a restart; a 50 MB image is sent by `get` from the store
// (exact bytes, raw and at level 9), and through the TLS endpoint received by a streamed create
// and sent back by `get`, each while petreld's resident memory (sampled after a collection and
// trim) peaks well under the image's size (test/memory.ts: never held whole); the
// state exported offline imports into another petreld with the same unikernels and digests.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import path from 'node:path';
import { inflateSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unwrap } from '../../src/resources/errors.js';
import { parseName } from '../../src/resources/name.js';
import { createRemoteTransport } from '../../src/tls/client.js';
import type { Answer } from '../../src/wire/exchange.js';
import { chunkFrames } from '../../src/wire/framing.js';
import type { Command, Payload, UnikernelConfig, Wire } from '../../src/wire/types.js';
import { canaryImage, repo } from '../engine/guest.js';
import { canaryConfig, createCommand, makeNetns, storedState } from '../engine/harness.js';
import { peakRise, transferAllowance } from '../memory.js';
import { petrelCa } from '../tls/petreld.js';
import { commandFrame, open, request, said } from './client.js';
import type { DaemonProcess } from './process.js';
import { processTests } from './process-tests.js';

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const name = (text: string) => unwrap(parseName(text));
const create = (config: UnikernelConfig): Command => createCommand(config);

const suite = processTests('images');
let canary: Buffer;
const netns = makeNetns();
beforeAll(async () => {
  canary = await readFile(canaryImage);
});
afterAll(() => {
  netns.destroy();
});

const start = (dir: string, extra: readonly string[] = []): Promise<DaemonProcess> =>
  suite.launch(dir, netns.name, {
    flags: ['--runtimes', 'hvt', '--canary-deadline', '10s', ...extra],
    readyMs: 120_000,
  });

/** The canary followed by `bytes` bytes that differ for every `seed` (the tender ignores them). */
function imageOf(seed: string, bytes: number): Buffer {
  const tail = Buffer.alloc(bytes);
  let block = createHash('sha256').update(seed).digest();
  for (let at = 0; at < bytes; at += block.length) {
    block.copy(tail, at);
    block = createHash('sha256').update(block).digest();
  }
  return Buffer.concat([canary, tail]);
}

/** A create on vmmd.sock with an empty image, the image following as raw chunks (Petrel (j)). */
async function streamedCreate(socket: string, vm: string, config: UnikernelConfig): Promise<Wire[]> {
  const exchange = open(socket, commandFrame(vm, create({ ...config, image: new Uint8Array(0) })));
  for (const chunk of chunkFrames(config.image)) exchange.write(chunk);
  await exchange.closed;
  return exchange.messages;
}

/** The image a get's answer carries, inflated. */
function imageIn(p: Payload | Answer | undefined): Buffer {
  if (p?.kind !== 'reply' || p.reply.type !== 'unikernel-image')
    throw new Error(`not an image: ${JSON.stringify(p?.kind)}`);
  return p.reply.compressed ? inflateSync(p.reply.image) : Buffer.from(p.reply.image);
}

describe('images through a petreld process', () => {
  it('40 unikernels with distinct images survive a restart, restored from the store', async () => {
    const dir = await mkdtemp(path.join(suite.base, 'forty-'));
    const socket = `${dir}/run/util/vmmd.sock`;
    const images = Array.from({ length: 40 }, (_, i) => imageOf(`forty ${i}`, 64));
    let daemon = await start(dir);
    try {
      for (const [i, image] of images.entries()) {
        const config = await canaryConfig(canaryImage, ['wait', `vm${i}`], { image });
        expect((await request(socket, `:vm${i}`, create(config))).map(said)).toEqual(['created unikernel']);
      }
      await daemon.stop(); // every guest stopped: the next start boots them from the store
      daemon = await start(dir);
      const info = await request(socket, ':', { type: 'unikernel-info', release: '2.7' });
      const p = info[0]?.payload;
      const entries = p?.kind === 'reply' && p.reply.type === 'unikernel-info' ? p.reply.entries : [];
      const digests = Object.fromEntries(
        entries.map((e) => [e.name.label, Buffer.from(e.info.digest).toString('hex')]),
      );
      expect(digests).toEqual(Object.fromEntries(images.map((image, i) => [`vm${i}`, sha256(image)])));
      expect((await readdir(`${dir}/state/images`)).sort()).toEqual(images.map(sha256).sort());
    } finally {
      await daemon.stop();
    }
  }, 300_000);

  it('get of a 50 MB image streams it from the store, raw and at level 9, in bounded memory', async () => {
    const dir = await mkdtemp(path.join(suite.base, 'get-'));
    const socket = `${dir}/run/util/vmmd.sock`;
    const image = imageOf('fifty', 50 * 1000 * 1000);
    const daemon = await start(dir);
    try {
      const config = await canaryConfig(canaryImage, ['wait', 'big'], { image });
      // The image follows the create on vmmd.sock as raw chunks, as the TLS endpoint sends it.
      const local = await peakRise(daemon, () => streamedCreate(socket, ':big', config));
      expect(local.value.map(said)).toEqual(['created unikernel']);
      expect(local.bytes, 'RSS rise during a 50 MB streamed create on vmmd.sock').toBeLessThan(
        transferAllowance(image.length),
      );
      for (const level of [0, 9]) {
        const got = await peakRise(daemon, () => request(socket, ':big', { type: 'unikernel-get', level }));
        expect(imageIn(got.value[0]?.payload).equals(image)).toBe(true);
        expect(got.bytes, `RSS rise during a get at level ${level}`).toBeLessThan(
          transferAllowance(image.length),
        );
      }
    } finally {
      await daemon.stop();
    }
  }, 300_000);

  it("a 50 MB image through the TLS endpoint, streamed in and got back, raises petreld's memory by well under the image's size each way", async () => {
    const dir = await mkdtemp(path.join(suite.base, 'tls-'));
    const ca = path.join(dir, 'ca');
    await mkdir(ca, { recursive: true });
    await petrelCa('init', '--dir', ca);
    await petrelCa('delegate', 'alice', '--vms', '2', '--mem', '64', '--dir', ca);
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as { port: number };
        probe.close(() => resolve(port));
      });
    });
    const tls = ['--tls-listen', `127.0.0.1:${port}`, '--tls-ca', `${ca}/cacert.pem`];
    tls.push('--tls-cert', `${ca}/server.pem`, '--tls-key', `${ca}/server.key`);
    const daemon = await start(dir, tls);
    try {
      const alice = createRemoteTransport({
        host: '127.0.0.1',
        port,
        ca: `${ca}/cacert.pem`,
        cert: `${ca}/alice.pem`,
        key: `${ca}/alice.key`,
      });
      // A first streamed create loads and compiles what the path needs: not what is measured.
      const small = await canaryConfig(canaryImage, ['wait', 'w'], {
        image: imageOf('warm', 4 * 1000 * 1000),
      });
      expect(await alice.request(name('warm'), create(small))).toMatchObject({ ok: true });
      expect(await alice.request(name('warm'), { type: 'unikernel-destroy' })).toMatchObject({ ok: true });
      const image = imageOf('streamed', 50 * 1000 * 1000);
      const config = await canaryConfig(canaryImage, ['wait', 'tls'], { image });
      const created = await peakRise(daemon, () => alice.request(name('big'), create(config)));
      expect(created.value).toMatchObject({
        ok: true,
        value: { kind: 'reply', reply: { text: 'created unikernel' } },
      });
      expect(created.bytes, 'RSS rise during a 50 MB streamed create').toBeLessThan(
        transferAllowance(image.length),
      );
      const state = await storedState(`${dir}/state`);
      expect(state.unikernels.map((u) => [u.name.label, u.image])).toEqual([
        ['big', { digest: sha256(image), size: image.length }],
      ]);
      // A get: the endpoint relays the image as the engine reads it from the store.
      for (const level of [0, 9]) {
        const got = await peakRise(daemon, () =>
          alice.request(name('big'), { type: 'unikernel-get', level }),
        );
        if (!got.value.ok) throw new Error(`get at level ${level}: ${got.value.error.message}`);
        expect(imageIn(got.value.value).equals(image)).toBe(true);
        expect(got.bytes, `RSS rise during a get through TLS at level ${level}`).toBeLessThan(
          transferAllowance(image.length),
        );
      }
    } finally {
      await daemon.stop();
    }
  }, 300_000);

  it('export-state runs offline only; what it writes imports elsewhere with the same digests', async () => {
    const dir = await mkdtemp(path.join(suite.base, 'export-'));
    const socket = `${dir}/run/util/vmmd.sock`;
    const out = path.join(dir, 'albatross-state');
    const petreld = (...args: string[]) =>
      spawnSync(process.execPath, [path.join(repo, 'dist', 'src', 'cli', 'petreld.js'), ...args], {
        encoding: 'utf8',
      });
    const images = [imageOf('a', 10), imageOf('b', 20)];
    let daemon = await start(dir);
    try {
      for (const [i, image] of images.entries()) {
        const config = await canaryConfig(canaryImage, ['wait', `x${i}`], { image, compressed: false });
        await request(socket, `:x${i}`, create(config));
      }
      const refused = petreld('export-state', '--state-dir', `${dir}/state`, out);
      expect(refused.status).toBe(1);
      expect(refused.stderr).toMatch(new RegExp(`petreld ${daemon.pid} is using .*; stop it first`));
    } finally {
      await daemon.stop();
    }
    const exported = petreld('export-state', '--state-dir', `${dir}/state`, out);
    expect(exported.stderr).toBe('');
    expect(exported.stdout).toMatch(/^exported 2 unikernels/);

    const other = await mkdtemp(path.join(suite.base, 'import-'));
    daemon = await start(other, ['--import-albatross-state', out]);
    try {
      const state = await storedState(`${other}/state`);
      expect(Object.fromEntries(state.unikernels.map((u) => [u.name.label, u.image.digest]))).toEqual({
        x0: sha256(images[0] as Buffer),
        x1: sha256(images[1] as Buffer),
      });
      expect((await readdir(`${other}/state/images`)).sort()).toEqual(images.map(sha256).sort());
    } finally {
      await daemon.stop();
    }
  }, 300_000);
});

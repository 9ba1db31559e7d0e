// Commands whose payload travels inside the leaf certificate, as the stock albatross-client 2.1
// and 2.7 send them, against petreld as its own process (spt canaries padded to 5, 15 and 30 MB),
// with the endpoint inside petreld and as `petreld tls-endpoint`: create and force-create are
// accepted, the unikernel runs, `get` returns the exact bytes, a restart of petreld brings it
// back; block add and set carry their data; a 15 MB create raises petreld's peak RSS by at most
// 3 × the certificate + 16 MiB and leaves it within 16 MiB of where it was (both sampled after
// collections and a trim, test/memory.ts); no log line carries a
// certificate.
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { deflateSync, inflateSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unwrap } from '../../src/resources/errors.js';
import { importPrivateKey } from '../../src/tls/keys.js';
import type { Command, UnikernelConfig, Wire } from '../../src/wire/types.js';
import { repo, sptCanary } from '../engine/guest.js';
import { canaryConfig, makeNetns, storedState } from '../engine/harness.js';
import { keptResident, peakRise } from '../memory.js';
import {
  type AlbatrossCa,
  type AlbatrossRelease,
  albatrossCreate,
  albatrossLeaf,
  albatrossSession,
} from '../tls/albatross-client.js';
import { petrelCa } from '../tls/petreld.js';
import { commandFrame, open, said, subscribeCommand } from './client.js';
import { type DaemonProcess, launchDaemon } from './process.js';

const MB = 1000 * 1000;
const MIB = 1024 * 1024;
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

let base: string;
let canary: Buffer;
const netns = makeNetns();
beforeAll(async () => {
  base = await mkdtemp(path.join(tmpdir(), 'petrel-embedded-'));
  canary = await readFile(sptCanary);
});
afterAll(async () => {
  netns.destroy();
  await rm(base, { recursive: true, force: true });
});

/** The spt canary padded to `bytes` with random bytes (the loader ignores what follows its segments). */
function plainImage(bytes: number): Buffer {
  return Buffer.concat([canary, randomBytes(bytes - canary.length)]);
}

/**
 * The canary padded to `bytes` with blocks of 4 KiB random then 6 KiB zero bytes: deflate keeps
 * the random 40 % and little of the rest, so 30 MB becomes about 12 MB (zeros alone would
 * deflate 1000:1 and test nothing).
 */
function mixedImage(bytes: number): Buffer {
  const tail = Buffer.alloc(bytes - canary.length);
  for (let at = 0; at < tail.length; at += 10 * 1024) randomBytes(4 * 1024).copy(tail, at);
  return Buffer.concat([canary, tail]);
}

const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });

interface Site {
  readonly dir: string;
  readonly ca: AlbatrossCa;
  readonly serverCa: string;
  readonly files: { ca: string; cert: string; key: string };
}

/** A PKI made by `petrel ca` with the delegation alice; alice signs the stock client's leaves. */
async function site(label: string): Promise<Site> {
  const dir = await mkdtemp(path.join(base, `${label}-`));
  const caDir = path.join(dir, 'ca');
  await mkdir(caDir, { recursive: true });
  await petrelCa('init', '--dir', caDir);
  await petrelCa('delegate', 'alice', '--vms', '4', '--mem', '64', '--block', '40', '--dir', caDir);
  const alicePem = await readFile(path.join(caDir, 'alice.pem'), 'utf8');
  const der = Buffer.from(alicePem.replace(/-----[^-]+-----|\s/g, ''), 'base64');
  const key = unwrap(await importPrivateKey(await readFile(path.join(caDir, 'alice.key'))));
  const files = {
    ca: path.join(caDir, 'cacert.pem'),
    cert: path.join(caDir, 'server.pem'),
    key: path.join(caDir, 'server.key'),
  };
  return { dir, ca: { der: new Uint8Array(der), key }, serverCa: await readFile(files.ca, 'utf8'), files };
}

function startPetreld(s: Site, tlsPort: number | null): Promise<DaemonProcess> {
  const flags = ['--state-dir', `${s.dir}/state`, '--run-dir', `${s.dir}/run`, '--runtimes', 'spt'];
  flags.push('--stop-timeout', '2s', '--canary-deadline', '10s', '--log-level', 'info');
  if (tlsPort !== null) {
    flags.push('--tls-listen', `127.0.0.1:${tlsPort}`, '--tls-ca', s.files.ca);
    flags.push('--tls-cert', s.files.cert, '--tls-key', s.files.key);
  }
  return launchDaemon(flags, { PETREL_TEST_NETNS: netns.name }, undefined, 120_000);
}

/** `petreld tls-endpoint` on the run directory of `s`; resolves once it listens. */
async function startEndpoint(s: Site, port: number): Promise<{ child: ChildProcess; output(): string }> {
  const args = ['tls-endpoint', '--run-dir', `${s.dir}/run`, '--ip', '127.0.0.1', '--port', String(port)];
  args.push('--ca', s.files.ca, '--cert', s.files.cert, '--key', s.files.key);
  const child = spawn(process.execPath, [path.join(repo, 'dist', 'src', 'cli', 'petreld.js'), ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stderr?.on('data', (d) => {
    output += d;
  });
  await new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`tls-endpoint exited ${code}: ${output}`)));
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      output += `${line}\n`;
      if (line.includes('"tls.listening"')) resolve();
    });
  });
  return { child, output: () => output };
}

/** One stock-client command on the leaf; the replies. */
async function stock(s: Site, port: number, label: string, command: Command): Promise<Wire[]> {
  const leaf = await albatrossLeaf(s.ca, label, command);
  const session = await albatrossSession(port, s.serverCa, s.ca, leaf);
  if (session.frames.length === 0) throw new Error(`no reply: ${session.error?.message ?? 'closed'}`);
  return session.frames;
}

async function config(word: string, image: Buffer): Promise<UnikernelConfig> {
  return canaryConfig(sptCanary, ['wait', word], { image });
}

/** The image a stock client's `get` brings back (level 0: as stored), inflated if it came deflated. */
async function got(s: Site, port: number, label: string): Promise<Buffer> {
  const [reply] = await stock(s, port, label, { type: 'unikernel-get', level: 0 });
  const p = reply?.payload;
  if (p?.kind !== 'reply' || p.reply.type !== 'unikernel-image') throw new Error(`get: ${said(reply)}`);
  return p.reply.compressed ? inflateSync(p.reply.image) : Buffer.from(p.reply.image);
}

/** Waits until `vm` (under alice) printed `word` on its console since `since`. */
async function prints(s: Site, vm: string, word: string, since: Date): Promise<void> {
  const watch = open(
    `${s.dir}/run/util/console.sock`,
    commandFrame(`alice:${vm}`, subscribeCommand({ kind: 'since', since })),
  );
  const lines = () =>
    watch.messages.flatMap((m) =>
      m.payload.kind === 'data' && m.payload.data.type === 'console'
        ? [Buffer.from(m.payload.data.line).toString()]
        : [],
    );
  const deadline = Date.now() + 10_000;
  while (!lines().some((l) => l.includes(word)) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
  }
  watch.close();
  expect(
    lines().some((l) => l.includes(word)),
    `${vm} printed ${word}`,
  ).toBe(true);
}

/** The state's digests, by label. */
async function digests(s: Site): Promise<Record<string, string>> {
  const state = await storedState(`${s.dir}/state`);
  return Object.fromEntries(state.unikernels.map((u) => [u.name.label ?? '', u.image.digest]));
}

/** No log line holds a certificate, a key or a piece of an image: short lines, no PEM. */
function expectNoCertificates(logs: string): void {
  expect(logs).not.toMatch(/BEGIN|PRIVATE/);
  const longest = Math.max(0, ...logs.split('\n').map((l) => l.length));
  expect(longest, 'the longest log line').toBeLessThan(2000);
}

const created = (replies: Wire[]) => replies.map(said);

describe('the image inside the leaf, as albatross-client 2.1 and 2.7 send it', () => {
  it('endpoint in petreld: 5 MB and 15 MB plain (2.7), 30 MB deflated to ~12 MB (2.1); create, force-create, run, get, restart', async () => {
    const s = await site('in');
    const port = await freePort();
    let daemon = await startPetreld(s, port);
    try {
      const five = plainImage(5 * MB);
      expect(
        created(await stock(s, port, 'five', albatrossCreate('2.7', await config('five', five)))),
      ).toEqual(['created unikernel']);

      // A 15 MB force-create, its memory measured: the certificate is the size of the image plus
      // a few hundred bytes.
      const big = plainImage(15 * MB);
      const bigCreate = albatrossCreate('2.7', await config('big', big), { force: true });
      const leaf = await albatrossLeaf(s.ca, 'big', bigCreate);
      // Sampled after collections and a trim (test/memory.ts), before and after, so a busy
      // machine's late collections count neither way; the bound is issue 21's, relative to the
      // certificate.
      const {
        value: session,
        bytes: peak,
        before,
      } = await peakRise(daemon, () => albatrossSession(port, s.serverCa, s.ca, leaf));
      expect(created(session.frames)).toEqual(['created unikernel']);
      expect(peak, `peak RSS rise for a ${leaf.der.length}-byte certificate`).toBeLessThanOrEqual(
        3 * leaf.der.length + 16 * MIB,
      );
      // Once the transfer's buffers are collected and trimmed, petreld is back where it was.
      const after = await keptResident(daemon);
      expect(after - before, 'RSS after the create, above before').toBeLessThan(16 * MIB);

      const mixed = mixedImage(30 * MB);
      const packed = albatrossCreate('2.1', await config('packed', mixed));
      const packedImage = packed.type === 'unikernel-create' ? packed.config.image : new Uint8Array();
      expect(packedImage.length).toBeGreaterThan(10 * MB);
      expect(packedImage.length).toBeLessThan(14 * MB);
      expect(created(await stock(s, port, 'packed', packed))).toEqual(['created unikernel']);
      // The same name again, as 2.1's `create -f`: the old one is replaced.
      const repacked = albatrossCreate('2.1', await config('packed', mixed), { force: true });
      expect(created(await stock(s, port, 'packed', repacked))).toEqual(['created unikernel']);

      const started = new Date(Date.now() - 60_000);
      await prints(s, 'five', 'five', started);
      await prints(s, 'big', 'big', started);
      await prints(s, 'packed', 'packed', started);
      expect((await got(s, port, 'five')).equals(five)).toBe(true);
      expect((await got(s, port, 'big')).equals(big)).toBe(true);
      expect(await digests(s)).toEqual({ five: sha256(five), big: sha256(big), packed: sha256(mixed) });
      expectNoCertificates(daemon.stderr());

      await daemon.stop(); // every guest stopped: the next start boots them from the store
      const restarted = new Date();
      daemon = await startPetreld(s, port);
      for (const vm of ['five', 'big', 'packed']) await prints(s, vm, vm, restarted);
      expect((await got(s, port, 'packed')).equals(mixed)).toBe(true);
    } finally {
      await daemon.stop();
    }
  }, 300_000);

  it('petreld tls-endpoint: 15 MB (2.1, deflated) created, force-created with 30 MB deflated to ~12 MB (2.7), run, get, restart; block add and set with their data', async () => {
    const s = await site('apart');
    const port = await freePort();
    let daemon = await startPetreld(s, null);
    const endpoint = await startEndpoint(s, port);
    try {
      const release: AlbatrossRelease = '2.1';
      const big = plainImage(15 * MB);
      expect(
        created(await stock(s, port, 'vm', albatrossCreate(release, await config('first', big)))),
      ).toEqual(['created unikernel']);
      const started = new Date(Date.now() - 60_000);
      await prints(s, 'vm', 'first', started);
      expect((await got(s, port, 'vm')).equals(big)).toBe(true);

      const mixed = mixedImage(30 * MB);
      const replace = albatrossCreate('2.7', await config('second', mixed), { force: true, deflate: true });
      expect(created(await stock(s, port, 'vm', replace))).toEqual(['created unikernel']);
      await prints(s, 'vm', 'second', started);
      expect((await got(s, port, 'vm')).equals(mixed)).toBe(true);
      expect(await digests(s)).toEqual({ vm: sha256(mixed) });

      await daemon.stop();
      const restarted = new Date();
      daemon = await startPetreld(s, null);
      await prints(s, 'vm', 'second', restarted);
      // The endpoint reconnects per session: the restored unikernel's image through it.
      expect((await got(s, port, 'vm')).equals(mixed)).toBe(true);

      // 2.0-2.4 clients' block add and set carry the data in the leaf too: 3 MB deflated, 4 MB
      // plain, then the old-style dump brings the device back whole.
      const first = randomBytes(3 * MB);
      const add: Command = {
        type: 'block-add-old',
        size: 10,
        compressed: true,
        data: new Uint8Array(deflateSync(first)),
      };
      expect(created(await stock(s, port, 'disk', add))).toEqual(['added block device']);
      const second = randomBytes(4 * MB);
      const set: Command = { type: 'block-set-old', compressed: false, data: second };
      expect(created(await stock(s, port, 'disk', set))).toEqual(['set block device']);
      const [dumped] = await stock(s, port, 'disk', { type: 'block-dump-old', level: 0 });
      const p = dumped?.payload;
      const device =
        p?.kind === 'reply' && p.reply.type === 'block-image-old' ? Buffer.from(p.reply.image) : null;
      expect(device?.length).toBe(10 * MIB);
      expect(device?.subarray(0, second.length).equals(second)).toBe(true);
      expect(device?.subarray(second.length).every((b) => b === 0)).toBe(true);
      expectNoCertificates(daemon.stderr());
      expectNoCertificates(endpoint.output());
    } finally {
      endpoint.child.kill('SIGTERM');
      await daemon.stop();
    }
  }, 300_000);
});

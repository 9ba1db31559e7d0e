// End to end over REAL TLS on 127.0.0.1 against a REAL petreld (test/tls/petreld.ts), every
// command sent as the `petrel --remote` client sends it (src/tls/client.ts): delegations made by
// `petrel ca delegate`, canary guests (on hosts without KVM: the fake-kvm TEST DOUBLE of
// test/engine/guest.ts stands in for KVM), the delegated policies enforced by the engine.

import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { connect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Result } from '../../src/resources/errors.js';
import { printName } from '../../src/resources/name.js';
import { decodeDer } from '../../src/tls/certs.js';
import { createRemoteTransport } from '../../src/tls/client.js';
import { exportPrivateKey, generateKey, importPrivateKey } from '../../src/tls/keys.js';
import { type Issuer, issue, validityFor } from '../../src/tls/pki.js';
import { x509 } from '../../src/tls/x509.js';
import type { Answer, Transport } from '../../src/wire/exchange.js';
import { FrameReader } from '../../src/wire/index.js';
import type { Command, UnikernelConfig } from '../../src/wire/types.js';
import { petrel } from '../cli/io.js';
import { request, subscribeCommand } from '../daemon/client.js';
import { canaryImage } from '../engine/guest.js';
import { canaryConfig, createCommand, storedState } from '../engine/harness.js';
import { albatrossLeaf, albatrossSession } from './albatross-client.js';
import { DESTROY, delegate, INFO, name, policy } from './helpers.js';
import { consoleHistory, type Petreld, startPetreld } from './petreld.js';

const create = async (vm: string, change: { image?: Uint8Array } = {}): Promise<Command> =>
  createCommand(await canaryConfig(canaryImage, ['wait', vm], { memory: 16, ...change }));

/** The text of a string reply or a Failure; anything else by its kind. */
function said(answer: Result<Answer, { code: string; message: string }>): string {
  if (!answer.ok) return `${answer.error.code}: ${answer.error.message}`;
  const a = answer.value;
  if (a.kind === 'failure') return `Failure: ${a.message}`;
  return a.reply.type === 'string' ? a.reply.text : a.reply.type;
}

/** The names `info` lists, as the reply carries them. */
async function listed(client: Transport): Promise<string[]> {
  const answer = await client.request(name(':'), INFO);
  if (!answer.ok || answer.value.kind !== 'reply' || answer.value.reply.type !== 'unikernel-info') {
    throw new Error(`info: ${said(answer)}`);
  }
  return answer.value.reply.entries.map((e) => printName(e.name)).sort();
}

async function issuer(petreld: Petreld, label: string): Promise<Issuer> {
  const pem = await readFile(path.join(petreld.ca, `${label}.pem`), 'utf8');
  const key = await importPrivateKey(await readFile(path.join(petreld.ca, `${label}.key`)));
  if (!key.ok) throw new Error(key.error.message);
  return { chain: decodeDer(pem).map((der) => new x509.X509Certificate(der)), key: key.value };
}

describe('alice and bob, delegated by certificate, against one real petreld', () => {
  let petreld: Petreld;
  beforeAll(async () => {
    petreld = await startPetreld({
      alice: ['--vms', '2', '--mem', '64'],
      bob: ['--vms', '1', '--mem', '32'],
    });
  });
  afterAll(async () => {
    await petreld?.stop();
  });

  it('alice runs two canaries; the third is refused by her policy; console and destroy work', async () => {
    const alice = petreld.remote('alice');
    expect(said(await alice.request(name('vm1'), await create('vm1')))).toBe('created unikernel');
    // The full name is the same as the relative one for alice's CA.
    expect(said(await alice.request(name('alice:vm2'), await create('vm2')))).toBe('created unikernel');
    expect(said(await alice.request(name('vm3'), await create('vm3')))).toBe(
      'Failure: maximum amount of unikernels (2) reached',
    );
    expect([...petreld.daemon.engine.running].sort()).toEqual(['alice:vm1', 'alice:vm2']);
    expect(await listed(alice)).toEqual([':vm1', ':vm2']);

    const watch = await alice.stream(name('vm1'), subscribeCommand({ kind: 'count', count: 10 }));
    if (!watch.ok) throw new Error(watch.error.message);
    expect(watch.value.answer).toMatchObject({ kind: 'reply' });
    let line = '';
    for await (const event of watch.value.events) {
      if (event.kind !== 'data' || event.data.type !== 'console') throw new Error(`unexpected ${event.kind}`);
      line = `${printName(event.name)} ${Buffer.from(event.data.line).toString()}`;
      watch.value.close();
    }
    expect(line).toBe('alice:vm1 petrel-canary vm1');
    // `petrel console --no-follow` over TLS: our end of the subscription, and the history comes
    // whole, then the end (issue 25).
    const lines = await consoleHistory(alice, 'vm1', 10);
    expect(lines.at(-1)).toBe('petrel-canary vm1');

    // bob sees none of alice's unikernels and cannot name them: his names are under bob:.
    const bob = petreld.remote('bob');
    expect(await listed(bob)).toEqual([]);
    expect(said(await bob.request(name('vm1'), DESTROY))).toMatch(/^Failure: .*not found/);
    expect(said(await bob.request(name('alice:vm1'), DESTROY))).toMatch(
      /^E_CLIENT_UNSUPPORTED: non-empty path/,
    );
    // A leaf naming alice's unikernel directly is refused by the endpoint (a CN is one label).
    const forged = await forgedLeaf(petreld, await issuer(petreld, 'bob'), 'alice:vm1', DESTROY);
    expect(forged).toEqual({ frames: 0 });
    expect(petreld.logs.filter((l) => l.event === 'tls.refused').map((l) => l.code)).toContain('E_TLS_NAME');
    expect([...petreld.daemon.engine.running].sort()).toEqual(['alice:vm1', 'alice:vm2']);

    expect(said(await alice.request(name('vm1'), DESTROY))).toBe('destroyed unikernel');
    expect(await listed(alice)).toEqual([':vm2']);
    expect(said(await alice.request(name('vm2'), DESTROY))).toBe('destroyed unikernel');
    expect(await listed(alice)).toEqual([]);
  });

  it("a tenant's last exits over TLS: petrel info --remote shows its dropped unikernel, to it alone", async () => {
    const alice = petreld.remote('alice');
    const config = await canaryConfig(canaryImage, ['exit', '2'], { memory: 16 });
    const created = await alice.request(name('brief'), {
      type: 'unikernel-create',
      force: false,
      release: '2.7',
      config,
    });
    expect(said(created)).toBe('created unikernel');
    const exitsOf = async (client: Transport) => {
      const answer = await client.request(name(':'), { type: 'unikernel-exits' });
      if (!answer.ok || answer.value.kind !== 'reply' || answer.value.reply.type !== 'unikernel-exits')
        throw new Error(`unikernel-exits: ${said(answer)}`);
      return answer.value.reply.entries;
    };
    const deadline = Date.now() + 20_000;
    while ((await exitsOf(alice)).length === 0 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    const [entry, ...more] = await exitsOf(alice);
    expect(more).toEqual([]);
    expect(entry && printName(entry.name)).toBe(':brief');
    expect(entry?.info).toMatchObject({ exit: 'exit 2', outcome: { kind: 'dropped' } });
    // bob's leaf carries the same command and sees nothing of alice's.
    expect(await exitsOf(petreld.remote('bob'))).toEqual([]);
    const key = (file: string) => path.join(petreld.ca, file);
    const remote = ['--remote', `127.0.0.1:${petreld.port}`, '--ca', key('cacert.pem')];
    const run = await petrel([
      'info',
      '--json',
      ...remote,
      '--cert',
      key('alice.pem'),
      '--key',
      key('alice.key'),
    ]);
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toEqual([
      {
        name: ':brief',
        state: 'dropped',
        reason: 'exit code 2 does not restart',
        lastExit: { exit: 'exit 2', limit: null, at: entry?.info.at.toISOString(), restarts: 0 },
      },
    ]);
  });

  it('a 1 MB image is streamed after the leaf (not embedded in it) and boots', async () => {
    const alice = petreld.remote('alice');
    const canary = await readFile(canaryImage);
    // Trailing bytes after the ELF's segments are ignored by the loader.
    const image = Buffer.concat([canary, Buffer.alloc(1024 * 1024)]);
    expect(said(await alice.request(name('big'), await create('big', { image })))).toBe('created unikernel');
    expect(said(await alice.request(name('big'), DESTROY))).toBe('destroyed unikernel');
  });

  it("a create petreld refuses before taking all its image gets petreld's reason at once, embedded or streamed", async () => {
    // petreld stops reading an image that does not inflate: the endpoint must not wait for the
    // rest of it to drain (a session that hung for good), but answer with petreld's reason.
    const alice = await readFile(path.join(petreld.ca, 'alice.pem'), 'utf8');
    const key = await importPrivateKey(await readFile(path.join(petreld.ca, 'alice.key')));
    if (!key.ok) throw new Error(key.error.message);
    const ca = { der: decodeDer(alice)[0] as Uint8Array, key: key.value };
    const serverCa = await readFile(path.join(petreld.ca, 'cacert.pem'), 'utf8');
    const port = petreld.port ?? 0;
    const ask = async (command: Command) => {
      const session = await albatrossSession(port, serverCa, ca, await albatrossLeaf(ca, 'bad', command));
      return session.frames.map((f) =>
        f.payload.kind === 'failure' ? `Failure: ${f.payload.message}` : f.payload.kind,
      );
    };
    // 2 MB that do not inflate, marked deflated; then a plain image above alice's memory.
    const config = (change: Partial<UnikernelConfig>) => canaryConfig(canaryImage, ['wait', 'bad'], change);
    const createOf = async (change: Partial<UnikernelConfig>): Promise<Command> =>
      createCommand(await config(change));
    const garbage = await createOf({ image: new Uint8Array(2_000_000).fill(0xff), compressed: true });
    expect(await ask(garbage)).toEqual([expect.stringMatching(/^Failure: /)]);
    expect(said(await petreld.remote('alice').request(name('bad'), garbage))).toMatch(/^Failure: /);
    const tooMuch = await createOf({ image: new Uint8Array(2_000_000), memory: 128 });
    expect(await ask(tooMuch)).toEqual([expect.stringMatching(/^Failure: .*memory/)]);
    expect(await listed(petreld.remote('alice'))).not.toContain('alice:bad');
  });

  it('load: 50 concurrent clients × 20 sequential sessions of info, all answered, no error', async () => {
    const alice = petreld.remote('alice');
    const failures: string[] = [];
    let answered = 0;
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        for (let i = 0; i < 20; i++) {
          const answer = await alice.request(name(':'), INFO);
          if (answer.ok && answer.value.kind === 'reply') answered++;
          else failures.push(said(answer));
        }
      }),
    );
    expect(failures).toEqual([]);
    expect(answered).toBe(1000);
    const refused = petreld.logs.filter((l) => l.event === 'tls.refused' && l.code !== 'E_TLS_NAME');
    expect(refused).toEqual([]);
  }, 180_000);
});

describe('a delegation that exceeds its parent, on a fresh petreld', () => {
  let petreld: Petreld;
  beforeAll(async () => {
    petreld = await startPetreld({
      alice: ['--vms', '2', '--mem', '64'],
      huge: ['--vms', '2', '--mem', '100000000'],
    });
  });
  afterAll(async () => {
    await petreld?.stop();
  });

  const policies = async () => {
    const replies = await request(path.join(petreld.runDir, 'util', 'vmmd.sock'), ':', {
      type: 'policy-info',
    });
    const p = replies[0]?.payload;
    if (p?.kind !== 'reply' || p.reply.type !== 'policies') throw new Error('policy info failed');
    return p.reply.entries.map((e) => printName(e.name));
  };

  it('above its parent delegation: refused before petreld hears of it; nothing inserted or persisted', async () => {
    const before = await storedState(petreld.stateDir);
    const policiesBefore = await policies();
    // alice:big (4 VMs) under alice (2 VMs): `petrel ca delegate` refuses to sign this, so it is
    // signed without the check, as a careless or hostile CA holder could.
    const big = await delegate(
      await issuer(petreld, 'alice'),
      'big',
      policy({ vms: 4, memory: 64, bridges: [], block: null }),
    );
    const client = createRemoteTransport({
      host: '127.0.0.1',
      port: petreld.port ?? 0,
      ca: path.join(petreld.ca, 'cacert.pem'),
      cert: Buffer.from(big.chain.map((c) => c.toString('pem')).join('\n')),
      key: Buffer.from(await exportPrivateKey(big.key)),
    });
    const answer = await client.request(name('vm'), await create('vm'));
    expect(answer).toMatchObject({ ok: false, error: { code: 'E_CLIENT_AUTH' } });
    expect(petreld.logs.find((l) => l.event === 'tls.refused')).toMatchObject({ code: 'E_TLS_POLICY' });
    expect(petreld.logs.filter((l) => l.event === 'tls.session')).toEqual([]);
    expect(await policies()).toEqual(policiesBefore);
    expect(policiesBefore).not.toContain('alice:');
    expect(await storedState(petreld.stateDir)).toEqual(before);
  });

  it('larger than this host: installed (one chain serves many hosts), but the host bounds what runs', async () => {
    // Petrel (a): policy insertion never compares with the root's policy; admission does.
    const huge = petreld.remote('huge');
    const hostMiB = petreld.report.report.memoryMiB;
    const config = await canaryConfig(canaryImage, ['wait', 'vm'], { memory: hostMiB + 1 });
    const answer = await huge.request(name('vm'), {
      type: 'unikernel-create',
      force: false,
      release: '2.7',
      config,
    });
    expect(said(answer)).toMatch(/^Failure: maximum allowed memory .* \(policy of :\)$/);
    expect(await policies()).toContain('huge:');
    expect(petreld.daemon.engine.running).toEqual([]);
  });

  it('a policy removed on the local socket between two sessions is installed again by the second', async () => {
    // Whether a chain's policy is already installed is decided by the engine when the session's
    // policy add runs, never remembered by the endpoint.
    const alice = petreld.remote('alice');
    const installs = () =>
      petreld.logs.filter(
        (l) => l.msg === 'command done' && l.command === 'policy-add' && l.name === 'alice:',
      );
    expect(await listed(alice)).toEqual([]);
    expect(await policies()).toContain('alice:');
    expect(installs()).toHaveLength(1);
    const written = await stateFiles(petreld.stateDir);
    expect(await listed(alice)).toEqual([]); // installed and unchanged: nothing written or logged
    expect(installs()).toHaveLength(1);
    expect(await stateFiles(petreld.stateDir)).toEqual(written);

    const vmmd = path.join(petreld.runDir, 'util', 'vmmd.sock');
    const removed = await request(vmmd, 'alice:', { type: 'policy-remove' });
    expect(removed.map((w) => w.payload.kind)).toEqual(['reply']);
    expect(await policies()).not.toContain('alice:');
    const policyPaths = async () =>
      (await storedState(petreld.stateDir)).policies.map((p) => p.path.join(':'));
    expect(await policyPaths()).not.toContain('alice');

    expect(await listed(alice)).toEqual([]);
    expect(await policies()).toContain('alice:');
    expect(installs()).toHaveLength(2);
    expect(await policyPaths()).toContain('alice');
  });
});

/** Every file under the state directory with its bytes, to see that nothing was written. */
async function stateFiles(dir: string): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for (const name of await readdir(dir, { recursive: true })) {
    const file = path.join(dir, name);
    if ((await stat(file)).isFile()) files[name] = (await readFile(file)).toString('base64');
  }
  return files;
}

/** One TLS session presenting a leaf with any CN (the client refuses to make such leaves). */
async function forgedLeaf(
  petreld: Petreld,
  by: Issuer,
  cn: string,
  command: Command,
): Promise<{ frames: number }> {
  const key = await generateKey('ed25519');
  const leaf = await issue({
    profile: 'command',
    commonName: cn,
    publicKey: key.publicKey,
    validity: validityFor(new Date(), 300_000),
    command,
    issuer: by,
  });
  const pem = await exportPrivateKey(key);
  return new Promise((resolve, reject) => {
    const socket = connect({
      host: '127.0.0.1',
      port: petreld.port ?? 0,
      ca: by.chain.at(-1)?.toString('pem'),
      rejectUnauthorized: false,
      cert: leaf.chain.map((c) => c.toString('pem')).join('\n'),
      key: pem,
    });
    let frames = 0;
    const reader = new FrameReader();
    socket.on('data', (chunk: Buffer) => {
      const events = reader.push(chunk);
      if (events.ok) frames += events.value.length;
    });
    socket.on('error', reject);
    socket.on('close', () => resolve({ frames }));
  });
}

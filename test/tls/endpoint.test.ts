// The endpoint over REAL TLS on 127.0.0.1 with certificates from our own PKI, in front of
// FakePetreld: a small unix-socket frame server standing in for petreld (which is being written
// at the same time). Refused clients must reach it not at all; accepted ones must bring it
// exactly the policy adds and the command, and get back the reply with Albatross' headers.

import { randomBytes } from 'node:crypto';
import { type ConnectionOptions, connect } from 'node:tls';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { printName } from '../../src/resources/name.js';
import { encodePem } from '../../src/tls/certs.js';
import type { TlsEndpointOptions } from '../../src/tls/endpoint.js';
import { exportPrivateKey, generateKey } from '../../src/tls/keys.js';
import { type Issuer, issue, validityFor } from '../../src/tls/pki.js';
import { x509 } from '../../src/tls/x509.js';
import { chunkFrames, END_OF_STREAM, encodeWire, frame } from '../../src/wire/index.js';
import { solo5Config } from '../../src/wire/shapes.js';
import type { Command, UnikernelConfig, Wire } from '../../src/wire/types.js';
import { subscribeCommand } from '../daemon/client.js';
import { endpointBeforeFake, type FakeFronted } from './fake-petreld.js';
import {
  type Client,
  current,
  DESTROY,
  delegate,
  expired,
  forge,
  future,
  INFO,
  leaf,
  policy,
  rootCa,
  serverIdentity,
} from './helpers.js';
import { credentialsOf, tlsSession } from './session.js';

let root: Issuer;
let server: { cert: string; key: string };

beforeAll(async () => {
  root = await rootCa();
  server = await serverIdentity(root);
});

type Running = FakeFronted;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const start = (options: Partial<TlsEndpointOptions> = {}): Promise<Running> =>
  endpointBeforeFake(root, server, cleanups, {
    admission: { firstByteTimeoutMs: 2000, clientHelloTimeoutMs: 2000, handshakeStallMs: 2000 },
    ...options,
  });

interface Talk {
  readonly frames: Wire[];
  readonly error: Error | null;
}

/** One TLS session: send `frames` after the handshake, read until the server closes. */
async function talk(
  port: number,
  client: Client | null,
  options: { send?: Uint8Array[]; tls?: Partial<ConnectionOptions>; stopAfter?: number } = {},
): Promise<Talk> {
  const credentials = client === null ? {} : { credentials: await credentialsOf(client) };
  return tlsSession(port, root.chain[0]?.toString('pem'), { ...credentials, ...options });
}

const refusals = (logs: Record<string, unknown>[]) => logs.filter((l) => l.event === 'tls.refused');

/** A refusal: no reply frame, nothing at the daemon, one logged reason with this code. */
async function expectRefused(running: Running, result: Talk, code: string): Promise<void> {
  expect(result.frames).toEqual([]);
  await settle();
  expect(running.fake.connections).toEqual([]);
  expect(refusals(running.logs).map((l) => l.code)).toContain(code);
  expect(JSON.stringify(running.logs)).not.toMatch(/BEGIN|PRIVATE/);
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 50));

const createCommand = (image: Uint8Array): Command => {
  const config: UnikernelConfig = solo5Config(image);
  return { type: 'unikernel-create', force: false, release: '2.7', config };
};

describe('accepted requests', () => {
  it('installs the chain policy, then sends the command; the reply comes back with sequence 0', async () => {
    const running = await start();
    const alice = await delegate(root, 'alice', policy({ vms: 2, memory: 64 }));
    const result = await talk(running.port, await leaf(alice, 'web', INFO));
    expect(result.error).toBe(null);
    const vmmd = running.fake.connections;
    expect(vmmd).toHaveLength(1);
    const received = vmmd[0]?.received.map((r) => (r.kind === 'message' ? r.wire : r));
    expect(received).toEqual([
      {
        header: { version: 5, sequence: 0n, name: { path: ['alice'], label: null } },
        payload: { kind: 'command', command: { type: 'policy-add', policy: policy({ vms: 2, memory: 64 }) } },
      },
      {
        header: { version: 5, sequence: 1n, name: { path: ['alice'], label: 'web' } },
        payload: { kind: 'command', command: INFO },
      },
    ]);
    expect(result.frames).toEqual([
      {
        header: { version: 5, sequence: 0n, name: { path: ['alice'], label: 'web' } },
        payload: { kind: 'reply', reply: { type: 'string', text: 'ok unikernel-info' } },
      },
    ]);
    expect(running.logs.filter((l) => l.event === 'tls.session')).toMatchObject([
      { name: 'alice:web', command: 'unikernel-info', outcome: 'replied', failure: null },
    ]);
    // One line at info per session, whatever it took (a policy install, the command, the reply).
    const info = running.logs.filter((l) => (l.level as number) >= 30 && l.event !== 'tls.listening');
    expect(info.map((l) => l.event)).toEqual(['tls.session']);
  });

  it('a leaf signed by the root: no policy, the command alone', async () => {
    const running = await start();
    const result = await talk(running.port, await leaf(root, 'web', DESTROY));
    expect(running.fake.messages()).toEqual([['vmmd', ':web', 'unikernel-destroy']]);
    expect(result.frames.map((f) => printName(f.header.name))).toEqual([':web']);
  });

  it('forwards an image streamed after the handshake as chunks after the create, never joined', async () => {
    const running = await start();
    const alice = await delegate(root, 'alice');
    const image = new TextEncoder().encode('unikernel image bytes');
    const result = await talk(running.port, await leaf(alice, 'web', createCommand(new Uint8Array())), {
      send: chunkFrames(image, 5),
    });
    expect(result.frames.map((f) => f.payload)).toEqual([
      { kind: 'reply', reply: { type: 'string', text: 'ok unikernel-create' } },
    ]);
    const [, create, ...chunks] = running.fake.connections[0]?.received ?? [];
    expect(create?.kind === 'message' && create.wire.payload).toEqual({
      kind: 'command',
      command: createCommand(new Uint8Array()),
    });
    expect(create?.kind === 'message' && create.wire.header.sequence).toBe(1n);
    expect(chunks).toEqual([
      ...chunkFrames(image, 5)
        .slice(0, -1)
        .map((f) => ({ kind: 'chunk', bytes: f.subarray(4) })),
      { kind: 'end' },
    ]);
  });

  it('forwards block data chunks and the end of the stream', async () => {
    const running = await start();
    const alice = await delegate(root, 'alice');
    const set: Command = { type: 'block-set', compressed: false };
    const result = await talk(running.port, await leaf(alice, 'disk', set), {
      send: [frame(Uint8Array.of(1, 2)), frame(Uint8Array.of(3)), END_OF_STREAM],
    });
    expect(running.fake.connections[0]?.received.slice(2)).toEqual([
      { kind: 'chunk', bytes: Uint8Array.of(1, 2) },
      { kind: 'chunk', bytes: Uint8Array.of(3) },
      { kind: 'end' },
    ]);
    expect(result.frames.map((f) => f.payload)).toEqual([
      { kind: 'reply', reply: { type: 'string', text: 'set block device' } },
    ]);
  });

  it('console: no policy add, replies forwarded with the daemon header until the client leaves', async () => {
    const running = await start();
    const alice = await delegate(root, 'alice');
    const subscribe: Command = subscribeCommand({ kind: 'count', count: 20 });
    const result = await talk(running.port, await leaf(alice, 'web', subscribe), { stopAfter: 3 });
    expect(running.fake.messages()).toEqual([['console', 'alice:web', 'console-subscribe']]);
    expect(result.frames.map((f) => [f.header.sequence, f.payload.kind])).toEqual([
      [0n, 'reply'],
      [0n, 'data'],
      [0n, 'data'],
    ]);
    await settle();
    expect(running.fake.connections[0]?.closed).toBe(true);
  });

  it('block dump: data forwarded, the no-data frame is the final reply', async () => {
    const running = await start();
    const alice = await delegate(root, 'alice');
    const first = await talk(running.port, await leaf(alice, 'web', INFO));
    expect(first.frames).toHaveLength(1);
    const result = await talk(running.port, await leaf(alice, 'disk', { type: 'block-dump', level: 0 }));
    // The counter is per endpoint: 0, 1 for the first request, 2, 3 now.
    expect(result.frames.map((f) => [f.header.sequence, f.payload.kind])).toEqual([
      [3n, 'reply'],
      [0n, 'data'],
      [0n, 'data'],
      [0n, 'data'],
    ]);
    expect(result.frames.at(-1)?.payload).toEqual({ kind: 'data', data: { type: 'block', data: null } });
  });

  it('a policy the daemon refuses: Failure in Albatross words, and the command is never sent', async () => {
    const running = await start();
    running.fake.script.policyAdd = () => ({
      kind: 'failure',
      message: 'policy above allows 2 unikernels, which is fewer than 4',
    });
    const alice = await delegate(root, 'alice');
    const result = await talk(running.port, await leaf(alice, 'web', INFO));
    expect(running.fake.messages()).toEqual([['vmmd', 'alice:', 'policy-add']]);
    expect(result.frames.map((f) => [f.header.sequence, f.payload])).toEqual([
      [
        0n,
        {
          kind: 'failure',
          message:
            'expected success when adding policy, got: host [unikernel: alice:]: command failed policy above allows 2 unikernels, which is fewer than 4',
        },
      ],
    ]);
  });

  it('an unreachable daemon: Failure "couldn\'t reach service"', async () => {
    const running = await start({
      sockets: { vmmd: '/nonexistent/a', console: '/nonexistent/b', stats: '/x' },
    });
    const result = await talk(running.port, await leaf(root, 'web', INFO));
    expect(result.frames.map((f) => f.payload)).toEqual([
      { kind: 'failure', message: "couldn't reach service" },
    ]);
  });

  it('a daemon frame above the cap is refused: Failure "error reading from fd"', async () => {
    const running = await start({ maxFrameBytes: 1 << 16 });
    running.fake.script.hugeReply = true;
    const result = await talk(running.port, await leaf(root, 'web', INFO));
    expect(result.frames.map((f) => f.payload)).toEqual([
      { kind: 'failure', message: 'error reading from fd' },
    ]);
  });

  it('a look-alike intermediate appended after the real one is ignored: only the real policy is installed', async () => {
    const running = await start();
    const alice = await delegate(root, 'alice', policy({ vms: 1 }));
    const lookAlike = await delegate(root, 'alice', policy({ vms: 100 }));
    const client = await leaf(alice, 'web', INFO);
    await talk(running.port, {
      key: client.key,
      chain: [...client.chain, lookAlike.chain[0] as x509.X509Certificate],
    });
    const policies = running.fake.connections.flatMap((c) =>
      c.received.flatMap((r) =>
        r.kind === 'message' &&
        r.wire.payload.kind === 'command' &&
        r.wire.payload.command.type === 'policy-add'
          ? [r.wire.payload.command.policy.vms]
          : [],
      ),
    );
    expect(policies).toEqual([1n]);
  });
});

describe('refused connections reach nothing and are logged', () => {
  it('expired and not-yet-valid leaves', async () => {
    const running = await start();
    await expectRefused(
      running,
      await talk(running.port, await leaf(root, 'web', INFO, expired())),
      'E_TLS_EXPIRED',
    );
    await expectRefused(
      running,
      await talk(running.port, await leaf(root, 'web', INFO, future())),
      'E_TLS_NOT_YET_VALID',
    );
  });

  it('expired and not-yet-valid intermediates', async () => {
    const running = await start();
    const old = await delegate(root, 'alice', policy(), expired());
    await expectRefused(running, await talk(running.port, await leaf(old, 'web')), 'E_TLS_EXPIRED');
    const early = await delegate(root, 'alice', policy(), future());
    await expectRefused(running, await talk(running.port, await leaf(early, 'web')), 'E_TLS_NOT_YET_VALID');
  });

  it('after a verified session: a look-alike of its intermediate, or the same chain once expired', async () => {
    let now = Date.now();
    const running = await start({ clock: () => new Date(now) });
    const alice = await delegate(root, 'alice', policy(), {
      notBefore: new Date(now - 60_000),
      notAfter: new Date(now + 3_600_000),
    });
    const genuine = await leaf(alice, 'web', INFO, {
      notBefore: new Date(now - 60_000),
      notAfter: new Date(now + 86_400_000),
    });
    const first = await talk(running.port, genuine);
    expect(first.frames.map((f) => f.payload.kind)).toEqual(['reply']);
    const served = running.fake.connections.length;

    // Same subject and key as the cached intermediate, signed by a CA that only shares our
    // CA's name: the client's key verifies the leaf, nothing verifies the intermediate.
    const sameKey = await forge({
      issuer: await rootCa('ca'),
      cn: 'alice',
      key: alice.key,
      command: { type: 'policy-add', policy: policy({ vms: 100 }) },
    });
    const lookAlike = await talk(running.port, await leaf(sameKey, 'web'));
    expect(lookAlike.frames).toEqual([]);
    expect(refusals(running.logs).at(-1)).toMatchObject({ code: 'E_TLS_SIGNATURE' });

    now += 2 * 3_600_000; // alice expired; the leaf is still valid
    const expiredNow = await talk(running.port, genuine);
    expect(expiredNow.frames).toEqual([]);
    expect(refusals(running.logs).at(-1)).toMatchObject({
      code: 'E_TLS_EXPIRED',
      reason: expect.stringContaining('CN=alice expired'),
    });
    await settle();
    expect(running.fake.connections).toHaveLength(served);
  });

  it('a chain to another CA', async () => {
    const running = await start();
    const other = await delegate(await rootCa('other'), 'alice');
    await expectRefused(running, await talk(running.port, await leaf(other, 'web')), 'E_TLS_UNTRUSTED');
  });

  it('an intermediate without CA:TRUE', async () => {
    const running = await start();
    const add: Command = { type: 'policy-add', policy: policy() };
    const notCa = await forge({ issuer: root, cn: 'alice', ca: false, command: add });
    await expectRefused(running, await talk(running.port, await leaf(notCa, 'web')), 'E_TLS_NOT_CA');
  });

  it('an intermediate without keyCertSign', async () => {
    const running = await start();
    const add: Command = { type: 'policy-add', policy: policy() };
    const usage = x509.KeyUsageFlags.digitalSignature;
    const noSign = await forge({ issuer: root, cn: 'alice', keyUsage: usage, command: add });
    // OpenSSL does not even hand it over (its issuer check wants keyCertSign), so the leaf
    // arrives alone and has no issuer; chain.test.ts refuses the whole chain as E_TLS_KEY_USAGE.
    await expectRefused(running, await talk(running.port, await leaf(noSign, 'web')), 'E_TLS_UNTRUSTED');
  });

  it('a critical Albatross extension', async () => {
    const running = await start();
    const add: Command = { type: 'policy-add', policy: policy() };
    const critical = await forge({ issuer: root, cn: 'alice', command: add, critical: true });
    await expectRefused(
      running,
      await talk(running.port, await leaf(critical, 'web')),
      'E_TLS_CRITICAL_EXTENSION',
    );
  });

  it('an extension that does not decode', async () => {
    const running = await start();
    const garbage = await forge({
      issuer: root,
      cn: 'web',
      ca: false,
      extensionValue: Uint8Array.of(0x30, 0x01, 0x00),
    });
    const client = { key: garbage.key, chain: garbage.chain };
    await expectRefused(running, await talk(running.port, client), 'E_TLS_EXTENSION');
  });

  it('a policy that exceeds its parent: nothing is sent, so nothing can be inserted', async () => {
    const running = await start();
    const alice = await delegate(root, 'alice', policy({ vms: 2 }));
    const bob = await delegate(alice, 'bob', policy({ vms: 4 }));
    await expectRefused(running, await talk(running.port, await leaf(bob, 'web')), 'E_TLS_POLICY');
  });

  it('a look-alike intermediate that OpenSSL links in place of the real one', async () => {
    const running = await start();
    const alice = await delegate(root, 'alice', policy({ vms: 1 }));
    const keyId = alice.chain[0]?.getExtension(x509.SubjectKeyIdentifierExtension)?.keyId ?? '';
    const lookAlike = await forge({
      issuer: root,
      cn: 'alice',
      command: { type: 'policy-add', policy: policy({ vms: 100 }) },
      extra: [new x509.SubjectKeyIdentifierExtension(keyId)],
    });
    const client = await leaf(alice, 'web');
    const chain = [client.chain[0], lookAlike.chain[0], alice.chain[0]] as x509.X509Certificate[];
    await expectRefused(running, await talk(running.port, { key: client.key, chain }), 'E_TLS_SIGNATURE');
  });

  it('forbidden leaf commands', async () => {
    const running = await start();
    for (const command of [
      { type: 'policy-add', policy: policy() },
      { type: 'policy-remove' },
      { type: 'console-add', limit: null },
    ] as Command[]) {
      await expectRefused(
        running,
        await talk(running.port, await leaf(root, 'alice', command)),
        'E_TLS_COMMAND',
      );
    }
  });

  it('a CN that is not a label', async () => {
    const running = await start();
    await expectRefused(running, await talk(running.port, await leaf(root, '', INFO)), 'E_TLS_NAME');
    await expectRefused(running, await talk(running.port, await leaf(root, 'a:b', INFO)), 'E_TLS_NAME');
  });

  it('a chain of 10 certificates', async () => {
    const running = await start();
    let issuer = root;
    for (let i = 0; i < 9; i++) issuer = await delegate(issuer, `l${i}`, policy());
    const client = await leaf(issuer, 'web');
    expect(client.chain).toHaveLength(10);
    await expectRefused(running, await talk(running.port, client), 'E_TLS_CHAIN_TOO_LONG');
  });

  it('a client without a certificate', async () => {
    const running = await start();
    await expectRefused(running, await talk(running.port, null), 'E_TLS_NO_CERTIFICATE');
  });

  it('a TLS 1.2 client', async () => {
    const running = await start();
    const result = await talk(running.port, await leaf(root, 'web'), {
      tls: { minVersion: 'TLSv1.2', maxVersion: 'TLSv1.2' },
    });
    expect(result.error).not.toBe(null);
    await expectRefused(running, result, 'E_TLS_HANDSHAKE');
  });

  // A streamed image is forwarded as it comes, so the daemon has the create already: the
  // refusal closes its connection before the end of the stream, which it takes as a failure.
  const expectCutOff = async (running: Running, result: Talk) => {
    expect(result.frames).toEqual([]);
    await settle();
    const [connection] = running.fake.connections;
    expect(connection?.closed).toBe(true);
    expect(connection?.received.some((r) => r.kind === 'end')).toBe(false);
    expect(refusals(running.logs).map((l) => l.code)).toContain('E_TLS_FRAME_TOO_LARGE');
  };

  it('an oversized frame where the image should stream', async () => {
    const running = await start({ maxFrameBytes: 1024 });
    const header = Uint8Array.of(0x00, 0x00, 0x10, 0x00);
    const result = await talk(running.port, await leaf(root, 'web', createCommand(new Uint8Array())), {
      send: [header],
    });
    await expectCutOff(running, result);
  });

  it('a streamed image above the cap', async () => {
    const running = await start({ maxFrameBytes: 1024 });
    const result = await talk(running.port, await leaf(root, 'web', createCommand(new Uint8Array())), {
      send: chunkFrames(new Uint8Array(3000), 1000),
    });
    await expectCutOff(running, result);
    expect(running.fake.connections[0]?.received.filter((r) => r.kind === 'chunk')).toHaveLength(1);
  });

  // Admission tests are in admission.test.ts.
});

describe('certificates carrying an image (stock Albatross create)', () => {
  it('no session ticket is sent: each connection presents its chain afresh', async () => {
    const running = await start();
    const client = await leaf(root, 'web', INFO);
    let tickets = 0;
    let reply = false;
    await new Promise<void>((resolve) => {
      void exportPrivateKey(client.key).then((key) => {
        const socket = connect({
          host: '127.0.0.1',
          port: running.port,
          ca: root.chain[0]?.toString('pem'),
          cert: client.chain.map((c) => c.toString('pem')).join('\n'),
          key,
          checkServerIdentity: () => undefined,
          minVersion: 'TLSv1.3',
        });
        socket.on('session', () => tickets++);
        socket.on('data', () => {
          reply = true;
        });
        socket.on('error', () => {});
        socket.on('close', () => resolve());
      });
    });
    expect(reply).toBe(true);
    expect(tickets).toBe(0);
  });

  it('a 90 KB leaf is served (no session ticket echoes it back)', async () => {
    const running = await start();
    const result = await talk(running.port, await leaf(root, 'web', createCommand(new Uint8Array(90_000))));
    expect(result.frames.map((f) => f.payload.kind)).toEqual(['reply']);
  });

  it("a 15 MB leaf, far above OpenSSL's default 100 KiB list, carries its image to petreld as a streamed create", async () => {
    const running = await start();
    const image = randomBytes(15_000_000);
    const client = await leaf(root, 'web', createCommand(image));
    const result = await talk(running.port, client);
    expect(result.frames.map((f) => f.payload)).toEqual([
      { kind: 'reply', reply: { type: 'string', text: 'ok unikernel-create' } },
    ]);
    // The create without its image, then the image in raw chunks and the end (Petrel (j)):
    // views of the leaf's bytes, so no whole copy of the image is made on either side.
    const [create, ...chunks] = running.fake.connections[0]?.received ?? [];
    expect(create?.kind === 'message' && create.wire.payload).toEqual({
      kind: 'command',
      command: createCommand(new Uint8Array()),
    });
    expect(chunks.at(-1)).toEqual({ kind: 'end' });
    const carried = Buffer.concat(chunks.flatMap((c) => (c.kind === 'chunk' ? [c.bytes] : [])));
    expect(carried.equals(image)).toBe(true);
    // The leaf holds the image: no log line may carry it, or any certificate.
    const logged = JSON.stringify(running.logs);
    expect(logged.length).toBeLessThan(10_000);
    expect(logged).not.toMatch(/BEGIN|PRIVATE/);
  });

  it('an embedded image above maxFrameBytes is refused, nothing of it reaches petreld', async () => {
    const running = await start({ maxFrameBytes: 200_000 });
    const result = await talk(running.port, await leaf(root, 'web', createCommand(new Uint8Array(300_000))));
    expect(result.frames).toEqual([]);
    await settle();
    expect(running.fake.connections.flatMap((c) => c.received)).toEqual([]);
    expect(refusals(running.logs).map((l) => l.code)).toContain('E_TLS_FRAME_TOO_LARGE');
  });

  it('KNOWN LIMIT: a certificate list of 16 MiB or more cannot be said in TLS; the client fails, nothing is sent', async () => {
    // A handshake message's length has 24 bits: the client's TLS gives up before the server
    // sees a Certificate (the stock albatross-client stops there too).
    const running = await start();
    // The certificate is made as DER only: too large for the x509 parser a chain would need.
    const key = await generateKey('ed25519');
    const { der } = await issue({
      profile: 'command',
      commonName: 'web',
      publicKey: key.publicKey,
      validity: current(),
      command: createCommand(new Uint8Array(16 * 1024 * 1024)),
      issuer: root,
    });
    const result = await talk(running.port, null, {
      tls: { cert: encodePem(der), key: await exportPrivateKey(key) },
    });
    expect(result.frames).toEqual([]);
    expect(result.error).not.toBeNull();
    await settle();
    expect(running.fake.connections).toEqual([]);
  });
});

describe('the captured Albatross 2.1 PKI', () => {
  it('a leaf signed with its sub CA key is accepted; the policy add is the captured one', async () => {
    const { readFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { VECTORS } = await import('./helpers.js');
    const { importPrivateKey } = await import('../../src/tls/keys.js');
    const pem = (file: string) => readFileSync(join(VECTORS, 'pki', file), 'utf8');
    const subKey = await importPrivateKey(pem('sub.key'));
    if (!subKey.ok) throw new Error(subKey.error.message);
    const sub: Issuer = { chain: [new x509.X509Certificate(pem('sub.pem'))], key: subKey.value };
    // A fixed clock inside the sub CA's year (the capture's PKI dates from November 2026).
    const clock = new Date(sub.chain[0]?.notBefore.getTime() ?? 0);
    clock.setUTCMinutes(clock.getUTCMinutes() + 1);
    const client = await leaf(
      sub,
      '.',
      { type: 'unikernel-info', release: '2.1' },
      validityFor(clock, 300_000),
    );
    const running = await start({
      ca: pem('cacert.pem'),
      cert: pem('server.pem'),
      key: pem('server.key'),
      clock: () => clock,
    });
    const result = await talk(running.port, client, { tls: { rejectUnauthorized: false } });
    expect(result.frames.map((f) => printName(f.header.name))).toEqual(['sub:']);
    const captured = readFileSync(
      join(VECTORS, '08-unikernel-info-sub', 'albatross-tls-endpoint-23371-010-unix-write.bin'),
    );
    const policyAdd = running.fake.connections[0]?.received[0];
    const sent =
      policyAdd?.kind === 'message'
        ? encodeWire({ ...policyAdd.wire, header: { ...policyAdd.wire.header, sequence: 3n } })
        : null;
    expect(sent?.ok && frame(sent.value)).toEqual(new Uint8Array(captured));
  });
});

// The remote transport (src/tls/client.ts) over REAL TLS on 127.0.0.1 against the real endpoint,
// with FakePetreld behind it (a frame server standing in for petreld's sockets, so each case can
// see exactly what reached the daemon). test/tls/remote.test.ts runs it against a real petreld.

import { createServer } from 'node:net';
import pino from 'pino';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { printName } from '../../src/resources/name.js';
import { createRemoteTransport, type RemoteTransportOptions } from '../../src/tls/client.js';
import { createTlsEndpoint } from '../../src/tls/endpoint.js';
import { exportPrivateKey, generateKey } from '../../src/tls/keys.js';
import type { Issuer } from '../../src/tls/pki.js';
import type { Transport } from '../../src/wire/exchange.js';
import { solo5Config } from '../../src/wire/shapes.js';
import type { Command } from '../../src/wire/types.js';
import { subscribeCommand } from '../daemon/client.js';
import { FakePetreld, type Received } from './fake-petreld.js';
import { DESTROY, delegate, expired, INFO, name, policy, rootCa, serverIdentity } from './helpers.js';

let root: Issuer;
let alice: Issuer;
let server: { cert: string; key: string };

beforeAll(async () => {
  root = await rootCa();
  alice = await delegate(root, 'alice', policy({ vms: 2, memory: 64 }));
  server = await serverIdentity(root, 1);
});

const pem = (issuer: Issuer): Uint8Array =>
  Buffer.from(issuer.chain.map((c) => c.toString('pem')).join('\n'));

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Running {
  readonly fake: FakePetreld;
  readonly logs: Record<string, unknown>[];
  client(as?: Issuer, extra?: Partial<RemoteTransportOptions>): Promise<Transport>;
}

async function start(serverSide = server): Promise<Running> {
  const fake = await FakePetreld.start();
  cleanups.push(() => fake.close());
  const logs: Record<string, unknown>[] = [];
  const endpoint = createTlsEndpoint({
    ca: root.chain[0]?.toString('pem') ?? '',
    ...serverSide,
    sockets: fake.sockets,
    host: '127.0.0.1',
    port: 0,
    logger: pino({ level: 'info' }, { write: (line: string) => logs.push(JSON.parse(line)) }),
  });
  if (!endpoint.ok) throw new Error(endpoint.error.message);
  const { port } = await endpoint.value.listen();
  cleanups.push(() => endpoint.value.close());
  return {
    fake,
    logs,
    client: async (as = alice, extra = {}) =>
      createRemoteTransport({
        host: '127.0.0.1',
        port,
        ca: Buffer.from(root.chain[0]?.toString('pem') ?? ''),
        cert: pem(as),
        key: Buffer.from(await exportPrivateKey(as.key)),
        ...extra,
      }),
  };
}

const create = (image: Uint8Array, memory = 16): Command => ({
  type: 'unikernel-create',
  force: false,
  release: '2.7',
  config: solo5Config(image, { addName: false, memory, arguments: [] }),
});

const chunks = (received: readonly Received[]) => received.filter((r) => r.kind !== 'message');

describe('createRemoteTransport', () => {
  it('signs the command into a leaf: the endpoint installs the delegation, then runs it', async () => {
    const running = await start();
    const transport = await running.client();
    expect(await transport.request(name(':web'), INFO)).toEqual({
      ok: true,
      value: { kind: 'reply', reply: { type: 'string', text: 'ok unikernel-info' } },
    });
    // Names are relative to the delegation: alice:web and web are the same for alice's CA,
    // and alice: is alice's path itself.
    await transport.request(name('alice:web'), DESTROY);
    await transport.request(name('alice:'), INFO);
    expect(running.fake.messages()).toEqual([
      ['vmmd', 'alice:', 'policy-add'],
      ['vmmd', 'alice:web', 'unikernel-info'],
      ['vmmd', 'alice:', 'policy-add'],
      ['vmmd', 'alice:web', 'unikernel-destroy'],
      ['vmmd', 'alice:', 'policy-add'],
      ['vmmd', 'alice:', 'unikernel-info'],
    ]);
  });

  it('streams a create image after the leaf, never inside it (the leaf carries an empty image)', async () => {
    const running = await start();
    const image = new Uint8Array(300_000).map((_, i) => i % 251);
    const answer = await (await running.client()).request(name('web'), create(image));
    expect(answer.ok && answer.value.kind).toBe('reply');
    const [, command, ...rest] = running.fake.connections[0]?.received ?? [];
    const sent = command?.kind === 'message' ? command.wire.payload : null;
    expect(
      sent?.kind === 'command' && sent.command.type === 'unikernel-create' && sent.command.config.image,
    ).toEqual(new Uint8Array());
    // The endpoint forwards the chunks after the create, as they came (never joined).
    expect(rest.at(-1)).toEqual({ kind: 'end' });
    expect(Buffer.concat(rest.flatMap((r) => (r.kind === 'chunk' ? [r.bytes] : [])))).toEqual(
      Buffer.from(image),
    );
  });

  it('block set: the input goes after the leaf as raw chunks and a zero chunk', async () => {
    const running = await start();
    const input = (async function* () {
      yield new TextEncoder().encode('abc');
      yield new Uint8Array();
      yield new TextEncoder().encode('def');
    })();
    const answer = await (await running.client()).request(
      name('disk'),
      { type: 'block-set', compressed: false },
      input,
    );
    expect(answer).toEqual({
      ok: true,
      value: { kind: 'reply', reply: { type: 'string', text: 'set block device' } },
    });
    const received = chunks(running.fake.connections[0]?.received ?? []);
    expect(received.map((r) => (r.kind === 'chunk' ? Buffer.from(r.bytes).toString() : r.kind))).toEqual([
      'abc',
      'def',
      'end',
    ]);
  });

  it('a dump streams its data until no-data; a subscription until it is closed', async () => {
    const running = await start();
    const transport = await running.client();
    const dump = await transport.stream(name('disk'), { type: 'block-dump', level: 0 });
    if (!dump.ok) throw new Error(dump.error.message);
    expect(dump.value.answer).toEqual({
      kind: 'reply',
      reply: { type: 'block-device-image', compressed: false },
    });
    const parts: (string | null)[] = [];
    for await (const event of dump.value.events) {
      if (event.kind === 'data' && event.data.type === 'block') {
        parts.push(event.data.data === null ? null : Buffer.from(event.data.data).toString());
      } else throw new Error(`unexpected ${event.kind}`);
    }
    expect(parts).toEqual(['abc', 'def', null]);

    const console = await transport.stream(name('web'), subscribeCommand({ kind: 'count', count: 5 }));
    if (!console.ok) throw new Error(console.error.message);
    const lines: string[] = [];
    for await (const event of console.value.events) {
      if (event.kind !== 'data' || event.data.type !== 'console') throw new Error(`unexpected ${event.kind}`);
      lines.push(`${printName(event.name)} ${Buffer.from(event.data.line).toString()}`);
      if (lines.length === 2) console.value.close();
    }
    expect(lines).toEqual(['alice:web one', 'alice:web two']);
  });
});

describe('createRemoteTransport refuses, with the code petrel turns into an exit status', () => {
  it('nothing listening: E_CLIENT_CONNECT', async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as { port: number };
        probe.close(() => resolve(port));
      });
    });
    const transport = createRemoteTransport({
      host: '127.0.0.1',
      port,
      ca: pem(root),
      cert: pem(alice),
      key: Buffer.from(await exportPrivateKey(alice.key)),
    });
    expect(await transport.request(name(':'), INFO)).toMatchObject({
      ok: false,
      error: { code: 'E_CLIENT_CONNECT', message: expect.stringContaining(`127.0.0.1:${port}`) },
    });
  });

  it('a server whose certificate another CA signed: E_CLIENT_AUTH, and the server hears nothing', async () => {
    const running = await start(await serverIdentity(await rootCa('other'), 1));
    const answer = await (await running.client()).request(name(':'), INFO);
    expect(answer).toMatchObject({ ok: false, error: { code: 'E_CLIENT_AUTH' } });
    expect(!answer.ok && answer.error.message).toMatch(/certificate of 127\.0\.0\.1:\d+ does not validate/);
    expect(running.fake.messages()).toEqual([]);
  });

  it('our chain does not lead to the CA: E_CLIENT_AUTH before connecting', async () => {
    const running = await start();
    const stranger = await delegate(await rootCa('other'), 'alice', policy({ vms: 2, memory: 64 }));
    const answer = await (await running.client(stranger)).request(name(':'), INFO);
    expect(answer).toMatchObject({
      ok: false,
      error: {
        code: 'E_CLIENT_AUTH',
        message: expect.stringMatching(/^our certificate chain does not validate/),
      },
    });
    expect(running.logs.filter((l) => l.event === 'tls.refused' || l.event === 'tls.session')).toEqual([]);
  });

  it('an expired delegation: E_CLIENT_AUTH before connecting, naming the certificate', async () => {
    const running = await start();
    const old = await delegate(root, 'alice', policy({ vms: 2, memory: 64 }), expired());
    const answer = await (await running.client(old)).request(name(':'), INFO);
    expect(answer).toMatchObject({
      ok: false,
      error: { code: 'E_CLIENT_AUTH', message: expect.stringMatching(/CN=alice expired at/) },
    });
    expect(running.logs.filter((l) => l.event === 'tls.refused' || l.event === 'tls.session')).toEqual([]);
  });

  it('a key that is not the delegation’s: E_CLIENT_AUTH', async () => {
    const running = await start();
    const other = await generateKey('ed25519');
    const transport = await running.client(alice, { key: Buffer.from(await exportPrivateKey(other)) });
    expect(await transport.request(name(':'), INFO)).toMatchObject({
      ok: false,
      error: { code: 'E_CLIENT_AUTH', message: expect.stringMatching(/^--key is not the key of the --cert/) },
    });
  });

  it('unreadable files: E_CLIENT_AUTH naming the flag and the file', async () => {
    const running = await start();
    const transport = await running.client(alice, { cert: '/nonexistent/alice.pem' });
    expect(await transport.request(name(':'), INFO)).toMatchObject({
      ok: false,
      error: {
        code: 'E_CLIENT_AUTH',
        message: expect.stringMatching(/^cannot read --cert \/nonexistent\/alice\.pem/),
      },
    });
  });

  it('client-side refusals (name outside the delegation, create above its policy): E_CLIENT_UNSUPPORTED', async () => {
    const running = await start();
    const transport = await running.client();
    expect(await transport.request(name('bob:web'), INFO)).toMatchObject({
      ok: false,
      error: { code: 'E_CLIENT_UNSUPPORTED', message: expect.stringMatching(/^non-empty path: bob:web/) },
    });
    expect(await transport.request(name('web'), create(new Uint8Array(10), 128))).toEqual({
      ok: false,
      error: {
        code: 'E_CLIENT_UNSUPPORTED',
        message: '128 MB memory assigned to unikernel exceeds policy (64MB)',
      },
    });
    expect(running.fake.messages()).toEqual([]);
  });

  it('the endpoint closes without a reply (here: a leaf command it does not forward): E_CLIENT_AUTH', async () => {
    const running = await start();
    const answer = await (await running.client()).request(name('alice:'), {
      type: 'policy-add',
      policy: policy({ vms: 1, memory: 32 }),
    });
    expect(answer).toMatchObject({
      ok: false,
      error: {
        code: 'E_CLIENT_AUTH',
        message: expect.stringMatching(/closed the connection without a reply/),
      },
    });
    expect(running.logs.find((l) => l.event === 'tls.refused')).toMatchObject({ code: 'E_TLS_COMMAND' });
    expect(running.fake.messages()).toEqual([]);
  });
});

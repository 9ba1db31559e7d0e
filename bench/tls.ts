// TLS endpoint: handshake + one request round trip (p50/p99) for 1 client and for 50 concurrent
// clients of 20 sequential sessions each, and the process RSS across many sequential sessions.
// SKELETON until petreld exists: the daemon side is a minimal unix-socket responder in this
// process (answers each command at once), so the figures are the endpoint's own cost (TLS,
// chain verification, identity, framing), not the engine's. Targets (issue 7): 1 client p50 ≤
// 5 ms; 50 clients p99 ≤ 50 ms; no RSS growth across 10,000 sessions.
// Run: npm run bench -- tls   (BENCH_TLS_SESSIONS sets the sequential count, default 10000)

import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, createSecureContext } from 'node:tls';
import pino from 'pino';
import { createTlsEndpoint, socketPaths } from '../src/tls/endpoint.js';
import { exportPrivateKey, generateKey } from '../src/tls/keys.js';
import { createRootCa, days, issue, issueDelegation, validityFor } from '../src/tls/pki.js';
import { decodeWire, encodeWire, FrameReader, frame } from '../src/wire/index.js';

const SEQUENTIAL = Number(process.env.BENCH_TLS_SESSIONS ?? 10_000);

/** Answers every command on vmmd.sock: `added policy` keeps the connection, anything else closes it. */
async function responder(runDir: string): Promise<() => Promise<void>> {
  const { mkdir } = await import('node:fs/promises');
  await mkdir(join(runDir, 'util'), { recursive: true });
  const server = createServer((socket) => {
    const reader = new FrameReader();
    socket.on('error', () => {});
    socket.on('data', (chunk: Buffer) => {
      const events = reader.push(new Uint8Array(chunk));
      if (!events.ok) return socket.destroy();
      for (const event of events.value) {
        if (event.kind !== 'frame') continue;
        const wire = decodeWire(event.payload);
        if (!wire.ok || wire.value.payload.kind !== 'command') return socket.destroy();
        const policy = wire.value.payload.command.type === 'policy-add';
        const text = policy ? 'added policy' : 'ok';
        const reply = encodeWire({
          header: wire.value.header,
          payload: { kind: 'reply', reply: { type: 'string', text } },
        });
        if (reply.ok) socket.write(frame(reply.value));
        if (!policy) socket.end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(socketPaths(runDir).vmmd, resolve));
  return () => new Promise((resolve) => server.close(() => resolve()));
}

const quantile = (sorted: number[], q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;

async function main(): Promise<void> {
  const runDir = await mkdtemp(join(tmpdir(), 'petrel-bench-tls-'));
  const stop = await responder(runDir);
  const root = await createRootCa(await generateKey('ed25519'), 'ca', validityFor(new Date(), days(1)));
  const serverKey = await generateKey('ed25519');
  const server = await issue({
    profile: 'server',
    commonName: 'server',
    publicKey: serverKey.publicKey,
    validity: validityFor(new Date(), days(1)),
    issuer: root,
  });
  const aliceKey = await generateKey('ed25519');
  const policy = { vms: 2n, memory: 64, cpuids: [0], block: null, bridges: [] } as const;
  const alice = await issueDelegation(
    root,
    'alice',
    policy,
    aliceKey.publicKey,
    validityFor(new Date(), days(1)),
  );
  if (!alice.ok) throw new Error(alice.error.message);
  const leafKey = await generateKey('ed25519');
  const leaf = await issue({
    profile: 'command',
    commonName: 'web',
    publicKey: leafKey.publicKey,
    validity: validityFor(new Date(), days(1)),
    command: { type: 'unikernel-info', release: '2.7' },
    issuer: { chain: alice.value.chain, key: aliceKey },
  });
  const endpoint = createTlsEndpoint({
    ca: root.chain[0]?.toString('pem') ?? '',
    cert: server.certificate.toString('pem'),
    key: await exportPrivateKey(serverKey),
    sockets: socketPaths(runDir),
    host: '127.0.0.1',
    port: 0,
    logger: pino({ level: 'warn' }),
  });
  if (!endpoint.ok) throw new Error(endpoint.error.message);
  const { port } = await endpoint.value.listen();
  // One client context for every session, as a long-running client would hold it.
  const secureContext = createSecureContext({
    ca: root.chain[0]?.toString('pem'),
    cert: leaf.chain.map((c) => c.toString('pem')).join('\n'),
    key: await exportPrivateKey(leafKey),
  });
  const client = { host: '127.0.0.1', port, secureContext, checkServerIdentity: () => undefined };

  /** One session: handshake, the reply frame, close. Resolves with milliseconds. */
  const session = (): Promise<number> =>
    new Promise((resolve, reject) => {
      const started = performance.now();
      const socket = connect(client);
      let got = false;
      socket.on('data', () => {
        got = true;
      });
      socket.on('error', reject);
      socket.on('close', () => (got ? resolve(performance.now() - started) : reject(new Error('no reply'))));
    });

  const report = (label: string, times: number[], errors = 0) => {
    const sorted = [...times].sort((a, b) => a - b);
    const p50 = quantile(sorted, 0.5).toFixed(2);
    const p99 = quantile(sorted, 0.99).toFixed(2);
    console.log(`${label}: ${times.length} sessions, p50 ${p50} ms, p99 ${p99} ms, errors ${errors}`);
  };

  for (let i = 0; i < 50; i++) await session();
  const single: number[] = [];
  for (let i = 0; i < 500; i++) single.push(await session());
  report('1 client', single);

  const concurrent: number[] = [];
  let errors = 0;
  await Promise.all(
    Array.from({ length: 50 }, async () => {
      for (let i = 0; i < 20; i++) {
        try {
          concurrent.push(await session());
        } catch {
          errors++;
        }
      }
    }),
  );
  report('50 clients x 20', concurrent, errors);

  globalThis.gc?.();
  const before = process.memoryUsage().rss;
  for (let i = 0; i < SEQUENTIAL; i++) await session();
  globalThis.gc?.();
  const after = process.memoryUsage().rss;
  const mib = (n: number) => (n / 2 ** 20).toFixed(1);
  console.log(
    `RSS across ${SEQUENTIAL} sequential sessions (client and endpoint in one process): ${mib(before)} → ${mib(after)} MiB`,
  );

  await endpoint.value.close();
  await stop();
  await rm(runDir, { recursive: true, force: true });
}

await main();

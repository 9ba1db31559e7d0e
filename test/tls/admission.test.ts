// Admission at the TLS endpoint over real TLS on loopback (src/net/gate.ts wired in
// src/tls/endpoint.ts): deadlines for the first byte and the ClientHello, a minimum rate rather
// than a fixed handshake time, budgets that evict the idlest and never a moving client, byte
// reservations for large handshakes, and the per-identity and frame-stall limits after it.

import { createServer, connect as netConnect, type Server, type Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { TlsEndpointOptions } from '../../src/tls/endpoint.js';
import type { Issuer } from '../../src/tls/pki.js';
import { solo5Config } from '../../src/wire/shapes.js';
import type { Command, Wire } from '../../src/wire/types.js';
import { endpointBeforeFake, type FakeFronted } from './fake-petreld.js';
import { type Client, INFO, leaf, rootCa, serverIdentity } from './helpers.js';
import { credentialsOf, tlsSession } from './session.js';

let root: Issuer;
let server: { cert: string; key: string };
let client: Client;

beforeAll(async () => {
  root = await rootCa();
  server = await serverIdentity(root);
  client = await leaf(root, 'web', INFO);
});

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

type Running = FakeFronted;

const start = (options: Partial<TlsEndpointOptions> = {}): Promise<Running> =>
  endpointBeforeFake(root, server, cleanups, options);

/** One TLS session through `port`: the reply frames, and how long it took. */
async function session(
  port: number,
  who: Client,
  options: { localAddress?: string; send?: Uint8Array[]; hold?: boolean } = {},
): Promise<{ frames: Wire[]; ms: number; socket: TLSSocket }> {
  // node's default lowest version, and bytes that are no frame dropped: what admission allows.
  return tlsSession(port, root.chain[0]?.toString('pem'), {
    credentials: await credentialsOf(who),
    tls: { minVersion: 'TLSv1.2' },
    badFrames: 'ignore',
    ...options,
  });
}

/** A raw TCP connection that sends `bytes` (if any) and then nothing. */
function idle(port: number, bytes?: Uint8Array, localAddress?: string): Promise<Socket> {
  return new Promise((resolve) => {
    const socket = netConnect({ port, host: '127.0.0.1', ...(localAddress ? { localAddress } : {}) });
    socket.on('error', () => {});
    socket.once('connect', () => {
      if (bytes !== undefined) socket.write(bytes);
      resolve(socket);
    });
    cleanups.push(() => void socket.destroy());
  });
}

const closed = (socket: Socket): Promise<number> => {
  const began = performance.now();
  return new Promise((resolve) =>
    socket.destroyed ? resolve(0) : socket.once('close', () => resolve(performance.now() - began)),
  );
};

/**
 * A TCP relay in front of the endpoint that carries the client's bytes at `rate` bytes a second
 * (in pieces every 20 ms), or only its first `stallAfter` bytes: a slow or stalled link.
 */
async function relay(port: number, shape: { rate: number; stallAfter?: number }): Promise<number> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((inbound) => {
    const outbound = netConnect(port, '127.0.0.1');
    sockets.add(inbound);
    sockets.add(outbound);
    const queue: Buffer[] = [];
    let passed = 0;
    inbound.on('data', (chunk: Buffer) => queue.push(chunk));
    const timer = setInterval(() => {
      let budget = Math.ceil(shape.rate / 50);
      while (budget > 0 && queue.length > 0) {
        const head = queue[0] as Buffer;
        let piece = head.subarray(0, budget);
        if (shape.stallAfter !== undefined) piece = piece.subarray(0, Math.max(0, shape.stallAfter - passed));
        if (piece.length === 0) return;
        outbound.write(piece);
        passed += piece.length;
        budget -= piece.length;
        if (piece.length === head.length) queue.shift();
        else queue[0] = head.subarray(piece.length);
      }
    }, 20);
    outbound.on('data', (chunk) => inbound.write(chunk));
    const end = () => {
      clearInterval(timer);
      inbound.destroy();
      outbound.destroy();
    };
    for (const s of [inbound, outbound]) {
      s.on('error', end);
      s.on('close', end);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  cleanups.push(() => {
    for (const s of sockets) s.destroy();
  });
  return (server.address() as { port: number }).port;
}

/** A TLS record header announcing a 512-byte ClientHello, and two bytes of it. */
const HELLO_START = Uint8Array.of(0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00);

const createCommand = (image: Uint8Array): Command => ({
  type: 'unikernel-create',
  force: false,
  release: '2.7',
  config: solo5Config(image),
});

describe('deadlines before the chain is checked', () => {
  it('a connection that sends nothing is closed at the first-byte deadline, counted', async () => {
    const running = await start({ admission: { firstByteTimeoutMs: 300 } });
    const ms = await closed(await idle(running.port));
    expect(ms).toBeGreaterThanOrEqual(250);
    expect(ms).toBeLessThan(3000);
    expect(running.endpoint.counts().evicted).toEqual({ 'first-byte-timeout': 1 });
  });

  it('a ClientHello begun and stalled is closed at its deadline', async () => {
    const running = await start({ admission: { firstByteTimeoutMs: 100, clientHelloTimeoutMs: 600 } });
    const ms = await closed(await idle(running.port, HELLO_START));
    expect(ms).toBeGreaterThanOrEqual(500);
    expect(running.endpoint.counts().evicted).toEqual({ 'hello-timeout': 1 });
  });

  it('a first byte that is no TLS handshake is refused at once', async () => {
    const running = await start();
    const ms = await closed(await idle(running.port, Buffer.from('GET / HTTP/1.1\r\n\r\n')));
    expect(ms).toBeLessThan(1000);
    expect(running.endpoint.counts().refused).toEqual({ 'not-tls': 1 });
  });

  it('a handshake slower than the stall timeout in all but above the minimum rate is served; a stalled one is cut', async () => {
    // A ~90 KB certificate at 120 KB/s takes about 0.8 s, four times the stall timeout.
    const running = await start({ admission: { handshakeStallMs: 200, minHandshakeRate: 32 * 1024 } });
    const big = await leaf(root, 'web', createCommand(new Uint8Array(90_000)));
    const slow = await session(await relay(running.port, { rate: 120_000 }), big);
    expect(slow.frames.map((f) => f.payload.kind)).toEqual(['reply']);
    expect(slow.ms).toBeGreaterThan(600);
    // The same certificate, its link dead after 20 KB: cut about 0.2 s after its last byte.
    const stalled = await session(await relay(running.port, { rate: 120_000, stallAfter: 20_000 }), big);
    expect(stalled.frames).toEqual([]);
    expect(running.endpoint.counts().evicted).toEqual({ stalled: 1 });
  });
});

describe('counting and logging', () => {
  it('evictions are logged at most once a second with their counts; the counters go to the log when asked', async () => {
    const running = await start({ admission: { firstByteTimeoutMs: 200 }, logCountersEveryMs: 300 });
    const sockets = await Promise.all(Array.from({ length: 20 }, () => idle(running.port)));
    await Promise.all(sockets.map(closed));
    await new Promise((resolve) => setTimeout(resolve, 1200));
    const shed = running.logs.filter((l) => l.event === 'admission.shed');
    const times = shed.map((l) => l.time as number);
    for (let i = 1; i < times.length; i++)
      expect((times[i] as number) - (times[i - 1] as number)).toBeGreaterThanOrEqual(990);
    expect(shed.reduce((n, l) => n + ((l['evicted:first-byte-timeout'] as number) ?? 0), 0)).toBe(20);
    const counters = running.logs.filter((l) => l.event === 'admission.counters');
    expect(counters.at(-1)).toMatchObject({ listener: 'tls', evicted: { 'first-byte-timeout': 20 } });
  });
});

describe('budgets', () => {
  it('idle connections from the client’s own address give way to it; the budget holds after a sweep', async () => {
    const running = await start({ admission: { maxPendingPerAddress: 4, maxPendingConnections: 100 } });
    const flood = await Promise.all(Array.from({ length: 12 }, () => idle(running.port)));
    await new Promise((resolve) => setTimeout(resolve, 3400));
    expect(running.endpoint.counts().pending).toBeLessThanOrEqual(4);
    const served = await session(running.port, client);
    expect(served.frames.map((f) => f.payload.kind)).toEqual(['reply']);
    expect(flood.filter((s) => !s.destroyed).length).toBeLessThanOrEqual(4);
    expect(running.endpoint.counts().evicted['address-budget']).toBeGreaterThanOrEqual(8);
  });

  it('another address is not charged for one address’s flood', async () => {
    const running = await start({ admission: { maxPendingPerAddress: 3, maxPendingConnections: 100 } });
    const flood = await Promise.all(
      Array.from({ length: 6 }, () => idle(running.port, undefined, '127.0.0.2')),
    );
    const others = await Promise.all(
      Array.from({ length: 3 }, () => idle(running.port, undefined, '127.0.0.3')),
    );
    await new Promise((resolve) => setTimeout(resolve, 3400));
    expect(flood.filter((s) => !s.destroyed).length).toBe(3);
    expect(others.filter((s) => !s.destroyed).length).toBe(3);
  });

  it('large handshakes beyond the byte budget wait for a reservation; all are served, the budget is kept', async () => {
    const reservation = 128 * 1024;
    const running = await start({
      maxHandshakeBytes: reservation,
      admission: { maxPendingBytes: reservation, maxPendingBytesPerAddress: reservation },
    });
    const big = await Promise.all(
      [1, 2, 3, 4].map((i) => leaf(root, `web${i}`, createCommand(new Uint8Array(90_000)))),
    );
    const results = await Promise.all(big.map((c) => session(running.port, c)));
    for (const r of results) expect(r.frames.map((f) => f.payload.kind)).toEqual(['reply']);
    // One reservation at a time, plus each connection's first 16 KiB and the reads past it.
    const counts = running.endpoint.counts();
    expect(counts.peakPendingBytes).toBeLessThanOrEqual(reservation + 4 * (16 + 128) * 1024);
    expect(counts.peakPendingBytes).toBeLessThan(4 * 90_000);
    expect(counts.pendingBytes).toBe(0);
  });
});

describe('after the handshake', () => {
  it('one identity may hold maxConnectionsPerIdentity sessions; the next gets a Failure that says so', async () => {
    const running = await start({ maxConnectionsPerIdentity: 1 });
    // A create whose image never comes keeps its session open.
    const holder = await session(running.port, await leaf(root, 'web', createCommand(new Uint8Array())), {
      hold: true,
    });
    cleanups.push(() => void holder.socket.destroy());
    await new Promise((resolve) => setTimeout(resolve, 100));
    const refused = await session(running.port, client);
    expect(refused.frames.map((f) => f.payload)).toEqual([
      { kind: 'failure', message: ': has 1 sessions open, the limit is 1 (maxConnectionsPerIdentity)' },
    ]);
    holder.socket.destroy();
    await new Promise((resolve) => setTimeout(resolve, 100));
    const served = await session(running.port, client);
    expect(served.frames.map((f) => f.payload.kind)).toEqual(['reply']);
  });

  it('a frame that begins and stalls is cut at frameStallTimeout; waiting between frames is not', async () => {
    const running = await start({ frameStallTimeoutMs: 300 });
    const streaming = await leaf(root, 'web', createCommand(new Uint8Array()));
    const quiet = await session(running.port, streaming, { hold: true });
    cleanups.push(() => void quiet.socket.destroy());
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(quiet.socket.destroyed).toBe(false);
    // Two bytes of a length prefix, then nothing.
    quiet.socket.write(Uint8Array.of(0, 0));
    const began = performance.now();
    await closed(quiet.socket);
    expect(performance.now() - began).toBeGreaterThanOrEqual(250);
    expect(running.logs.some((l) => l.code === 'E_TLS_FRAME_STALLED')).toBe(true);
  });
});

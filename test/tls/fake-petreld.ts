// A stand-in for petreld's three local sockets, for endpoint tests while the real daemon is being
// written: it records every frame each connection brings and answers with scripted replies in
// the daemon's connection rules (policy add keeps the connection, block set and a create
// without an image read chunks, dump and subscriptions stream).

import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import {
  createTlsEndpoint,
  type SocketPaths,
  socketPaths,
  type TlsEndpoint,
  type TlsEndpointOptions,
} from '../../src/tls/endpoint.js';
import type { Issuer } from '../../src/tls/pki.js';
import type { Service } from '../../src/tls/proxy.js';
import { decodeWire, encodeWire, FrameReader, frame } from '../../src/wire/index.js';
import type { Payload, Wire } from '../../src/wire/types.js';

export type Received =
  | { readonly kind: 'message'; readonly wire: Wire; readonly bytes: Uint8Array }
  | { readonly kind: 'chunk'; readonly bytes: Uint8Array }
  | { readonly kind: 'end' };

export interface Connection {
  readonly service: Service;
  readonly received: Received[];
  closed: boolean;
}

export interface Script {
  /** The answer to a policy add; a Failure ends the connection. Default `added policy`. */
  policyAdd?: (wire: Wire) => Payload;
  /** The answer to the command. Default: the string `ok <command type>`. */
  command?: (wire: Wire) => Payload;
  /** Send a length prefix above any cap instead of the reply. */
  hugeReply?: boolean;
}

const text = (t: string): Payload => ({ kind: 'reply', reply: { type: 'string', text: t } });

export class FakePetreld {
  readonly runDir: string;
  readonly sockets: SocketPaths;
  readonly connections: Connection[] = [];
  readonly script: Script = {};
  readonly #servers: Server[] = [];
  readonly #clients = new Set<Socket>();

  private constructor(runDir: string) {
    this.runDir = runDir;
    this.sockets = socketPaths(runDir);
  }

  static async start(): Promise<FakePetreld> {
    const dir = await mkdtemp(join(tmpdir(), 'petrel-tls-'));
    const { mkdir } = await import('node:fs/promises');
    await mkdir(join(dir, 'util'));
    const fake = new FakePetreld(dir);
    for (const service of ['vmmd', 'console', 'stats'] as const) {
      const server = createServer((socket) => fake.#serve(service, socket));
      await new Promise<void>((resolve) => server.listen(fake.sockets[service], resolve));
      fake.#servers.push(server);
    }
    return fake;
  }

  async close(): Promise<void> {
    for (const socket of this.#clients) socket.destroy();
    await Promise.all(this.#servers.map((s) => new Promise((resolve) => s.close(resolve))));
    await rm(this.runDir, { recursive: true, force: true });
  }

  /** Messages only, as [name, command type] pairs, for compact assertions. */
  messages(): [Service, string, string][] {
    return this.connections.flatMap((c) =>
      c.received.flatMap((r) =>
        r.kind === 'message' && r.wire.payload.kind === 'command'
          ? [
              [
                c.service,
                `${r.wire.header.name.path.join(':')}:${r.wire.header.name.label ?? ''}`,
                r.wire.payload.command.type,
              ] as [Service, string, string],
            ]
          : [],
      ),
    );
  }

  #serve(service: Service, socket: Socket): void {
    const connection: Connection = { service, received: [], closed: false };
    this.connections.push(connection);
    this.#clients.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => {
      connection.closed = true;
      this.#clients.delete(socket);
    });
    const reader = new FrameReader();
    let streaming = false;
    const send = (wire: Wire, payload: Payload) => {
      const bytes = encodeWire({ header: wire.header, payload });
      if (!bytes.ok) throw new Error(bytes.error.message);
      socket.write(frame(bytes.value));
    };
    socket.on('data', (chunk: Buffer) => {
      const events = reader.push(new Uint8Array(chunk));
      if (!events.ok) throw new Error(events.error.message);
      for (const event of events.value) {
        if (streaming) {
          if (event.kind === 'end') {
            connection.received.push({ kind: 'end' });
            streaming = false;
            const streamed = connection.received.findLast(
              (r) => r.kind === 'message' && r.wire.payload.kind === 'command',
            );
            if (streamed?.kind === 'message' && streamed.wire.payload.kind === 'command') {
              const type = streamed.wire.payload.command.type;
              send(
                streamed.wire,
                type === 'block-set'
                  ? text('set block device')
                  : (this.script.command?.(streamed.wire) ?? text(`ok ${type}`)),
              );
            }
            socket.end();
          } else {
            connection.received.push({ kind: 'chunk', bytes: event.payload.slice() });
          }
          continue;
        }
        if (event.kind === 'end') continue;
        const wire = decodeWire(event.payload);
        if (!wire.ok) throw new Error(wire.error.message);
        connection.received.push({ kind: 'message', wire: wire.value, bytes: event.payload.slice() });
        streaming = this.#answer(wire.value, socket, send);
      }
    });
  }

  /** Answers one message; true when raw chunks follow it. */
  #answer(wire: Wire, socket: Socket, send: (wire: Wire, payload: Payload) => void): boolean {
    if (wire.payload.kind !== 'command') return false;
    const command = wire.payload.command;
    if (this.script.hugeReply === true) {
      socket.write(Uint8Array.of(0x7f, 0xff, 0xff, 0xff));
      return false;
    }
    switch (command.type) {
      case 'policy-add': {
        const answer = this.script.policyAdd?.(wire) ?? text('added policy');
        send(wire, answer);
        if (answer.kind === 'failure') socket.end();
        return false;
      }
      case 'block-set':
        return true;
      case 'unikernel-create':
        if (command.config.image.length === 0) return true;
        send(wire, this.script.command?.(wire) ?? text(`ok ${command.type}`));
        socket.end();
        return false;
      case 'block-dump':
        send(wire, { kind: 'reply', reply: { type: 'block-device-image', compressed: false } });
        for (const part of ['abc', 'def']) {
          send(
            { ...wire, header: { ...wire.header, sequence: 0n } },
            {
              kind: 'data',
              data: { type: 'block', data: new TextEncoder().encode(part) },
            },
          );
        }
        send(
          { ...wire, header: { ...wire.header, sequence: 0n } },
          { kind: 'data', data: { type: 'block', data: null } },
        );
        socket.end();
        return false;
      case 'console-subscribe': {
        send(wire, text('subscribed'));
        for (const line of ['one', 'two']) {
          send(
            { ...wire, header: { ...wire.header, sequence: 0n } },
            {
              kind: 'data',
              data: { type: 'console', timestamp: new Date(0), line: new TextEncoder().encode(line) },
            },
          );
        }
        return false;
      }
      case 'stats-subscribe':
        send(wire, text('subscribed'));
        return false;
      default:
        send(wire, this.script.command?.(wire) ?? text(`ok ${command.type}`));
        socket.end();
        return false;
    }
  }
}

export interface FakeFronted {
  readonly port: number;
  readonly endpoint: TlsEndpoint;
  readonly fake: FakePetreld;
  /** The endpoint's log lines (debug and above), parsed. */
  readonly logs: Record<string, unknown>[];
}

/**
 * The real TLS endpoint on 127.0.0.1 trusting `root` and serving as `server`, in front of a
 * FakePetreld (the TEST DOUBLE of petreld's sockets); `cleanups` is given what closes both.
 */
export async function endpointBeforeFake(
  root: Issuer,
  server: { readonly cert: string; readonly key: string },
  cleanups: (() => Promise<void> | void)[],
  options: Partial<TlsEndpointOptions> = {},
): Promise<FakeFronted> {
  const fake = await FakePetreld.start();
  cleanups.push(() => fake.close());
  const logs: Record<string, unknown>[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => logs.push(JSON.parse(line)) });
  const endpoint = createTlsEndpoint({
    ca: root.chain[0]?.toString('pem') ?? '',
    cert: server.cert,
    key: server.key,
    sockets: fake.sockets,
    host: '127.0.0.1',
    port: 0,
    logger,
    ...options,
  });
  if (!endpoint.ok) throw new Error(endpoint.error.message);
  const address = await endpoint.value.listen();
  cleanups.push(() => endpoint.value.close());
  return { port: address.port, endpoint: endpoint.value, fake, logs };
}

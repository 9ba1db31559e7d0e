// A client's TLS session with an endpoint on 127.0.0.1 for the endpoint tests: the client's
// certificate chain (a delegation, a leaf, or none) and key, frames sent after the handshake,
// and every frame the server sends back decoded, until it closes.

import { type ConnectionOptions, connect, type TLSSocket } from 'node:tls';
import { exportPrivateKey } from '../../src/tls/keys.js';
import { decodeWire, FrameReader } from '../../src/wire/index.js';
import type { Wire } from '../../src/wire/types.js';
import type { Client } from './helpers.js';

/** What a client presents: its chain as PEM (leaf first) and its key. */
export interface Credentials {
  readonly cert: string;
  readonly key: string;
}

export async function credentialsOf(client: Client): Promise<Credentials> {
  return {
    cert: client.chain.map((c) => c.toString('pem')).join('\n'),
    key: await exportPrivateKey(client.key),
  };
}

export interface SessionOptions {
  /** None: the client presents no certificate. */
  readonly credentials?: Credentials;
  /** Written once the handshake is done. */
  readonly send?: readonly Uint8Array[];
  /** More of node's options (they win over the defaults). */
  readonly tls?: Partial<ConnectionOptions>;
  readonly localAddress?: string;
  /** Ends the session (the client's side) once this many frames came. */
  readonly stopAfter?: number;
  /** Resolves once `send` is written, the session still open. */
  readonly hold?: boolean;
  /**
   * What bytes that are no frame do: `throw` (the default) fails the test where they arrive,
   * `error` ends the session with them as its error, `ignore` drops them.
   */
  readonly badFrames?: 'throw' | 'error' | 'ignore';
}

export interface Session {
  readonly frames: Wire[];
  /** The socket's error, if any (a refused handshake). */
  readonly error: Error | null;
  readonly socket: TLSSocket;
  /** From the start of the connection to the server's close (or to `hold`'s resolve). */
  readonly ms: number;
}

/** One session with the endpoint at `port` whose certificate `ca` (PEM) signed; names not checked. */
export function tlsSession(
  port: number,
  ca: string | undefined,
  options: SessionOptions = {},
): Promise<Session> {
  const began = performance.now();
  return new Promise((resolve) => {
    const frames: Wire[] = [];
    let error: Error | null = null;
    const reader = new FrameReader();
    const socket = connect({
      host: '127.0.0.1',
      port,
      ...(options.localAddress === undefined ? {} : { localAddress: options.localAddress }),
      ca,
      checkServerIdentity: () => undefined,
      minVersion: 'TLSv1.3',
      ...options.credentials,
      ...options.tls,
    });
    const done = () => resolve({ frames, error, socket, ms: performance.now() - began });
    socket.on('secureConnect', () => {
      for (const bytes of options.send ?? []) socket.write(bytes);
      if (options.hold) done();
    });
    socket.on('data', (chunk: Buffer) => {
      const events = reader.push(new Uint8Array(chunk));
      if (!events.ok) {
        if (options.badFrames === 'ignore') return;
        if (options.badFrames === 'error') {
          error = new Error(events.error.message);
          socket.destroy();
          return;
        }
        throw new Error(events.error.message);
      }
      for (const event of events.value) {
        if (event.kind !== 'frame') continue;
        const wire = decodeWire(event.payload);
        if (wire.ok) frames.push(wire.value);
        if (frames.length === options.stopAfter) socket.end();
      }
    });
    socket.on('error', (e) => {
      error = e;
    });
    socket.on('close', done);
  });
}

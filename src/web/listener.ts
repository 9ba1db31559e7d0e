// The web API's admission and TLS: TCP → the gate → first record → TLS over the metered stream →
// node:http, by the same code that admits the mutual-TLS endpoint's peers (src/net).
//
// TLS is any version ≥ 1.2 a browser speaks, ALPN http/1.1. Once the handshake is over the
// connection is handed to node:http, and stays pending in the gate until a complete request head
// has arrived (src/net/http.ts), and again while a kept-alive connection waits for the next.

import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { type AddressInfo, createServer, type Server, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { createSecureContext, type SecureContext, TLSSocket } from 'node:tls';
import type { Logger } from 'pino';
import { Gate, type GateCounts } from '../net/gate.js';
import { admitHttp } from '../net/http.js';
import type { MeteredStream } from '../net/metered.js';
import { acceptTls } from '../net/tls-accept.js';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import { describeError } from '../tls/errors.js';
import {
  ADMISSION_DEFAULTS,
  type AdmissionSettings,
  admissionLimits,
  SMALL_HANDSHAKE,
  TLS_DEFAULTS,
} from '../tls/settings.js';
import type { RefusalLog } from './refusals.js';

/** The TLS context of the certificate browsers are shown; an error naming why it is unusable. */
export function webTlsContext(
  cert: string | Uint8Array,
  key: string | Uint8Array,
): Result<SecureContext, PetrelError> {
  try {
    return ok(createSecureContext({ cert: pemInput(cert), key: pemInput(key), minVersion: 'TLSv1.2' }));
  } catch (e) {
    return err('E_WEB_CERT', `the web certificate or key is unusable: ${describeError(e)}`);
  }
}

const pemInput = (input: string | Uint8Array): string | Buffer =>
  typeof input === 'string' ? input : Buffer.from(input);

/**
 * The most a web connection may read while pending. A browser's handshake fits the small
 * allowance; but a client sends its request right behind its Finished message, and the reads
 * that carry the Finished carry the first of a create's body too (a few 64 KiB reads before the
 * handshake is processed: the metered stream pauses the socket when TLS has 16 KiB queued).
 * Above SMALL_HANDSHAKE a connection needs a reservation from the byte budget, as a large TLS
 * handshake does.
 */
const WEB_PENDING_BYTES = SMALL_HANDSHAKE + 512 * 1024;

export interface ListenerOptions {
  readonly context: SecureContext;
  /** Default `::`. */
  readonly host?: string | undefined;
  /** 0 picks a free port. */
  readonly port: number;
  readonly admission?: Partial<AdmissionSettings> | undefined;
  readonly log: Logger;
  readonly refusals: RefusalLog;
  /** Each request node:http has read the head of. */
  readonly request: (request: IncomingMessage, response: ServerResponse) => void;
}

export class WebListener {
  /** Every socket open here, and every connection to petreld (upstream.ts): destroyed at close. */
  readonly streams = new Set<Duplex>();
  readonly #options: ListenerOptions;
  readonly #log: Logger;
  readonly #gate: Gate;
  readonly #tcp: Server;
  readonly #http;
  /** The TCP socket under each TLS socket handed to node:http (admission reads it). */
  readonly #tcpOf = new WeakMap<Socket, Socket>();

  constructor(options: ListenerOptions) {
    this.#options = options;
    this.#log = options.log;
    const settings: AdmissionSettings = { ...ADMISSION_DEFAULTS, ...options.admission };
    this.#gate = new Gate('web', admissionLimits(settings, WEB_PENDING_BYTES), this.#log);
    this.#http = createHttpServer(
      { maxHeaderSize: 16 * 1024, headersTimeout: 10_000, requestTimeout: 0, keepAliveTimeout: 5_000 },
      options.request,
    );
    admitHttp(this.#http, this.#gate, (socket) => this.#tcpOf.get(socket) ?? socket);
    this.#tcp = createServer((raw) => this.#accept(raw));
  }

  listen(): Promise<AddressInfo> {
    const host = this.#options.host ?? TLS_DEFAULTS.host;
    return new Promise((resolve, reject) => {
      this.#tcp.once('error', reject);
      this.#tcp.listen({ host, port: this.#options.port, backlog: 511, ipv6Only: false }, () => {
        this.#tcp.off('error', reject);
        const address = this.#tcp.address() as AddressInfo;
        this.#log.info(
          { event: 'web.listening', address: address.address, port: address.port },
          'web API listening',
        );
        resolve(address);
      });
    });
  }

  async close(): Promise<void> {
    this.#gate.close();
    await new Promise<void>((resolve) => {
      this.#tcp.close(() => resolve());
      this.#http.close();
      for (const stream of this.streams) stream.destroy();
    });
  }

  counts(): GateCounts {
    return this.#gate.counts();
  }

  /** The peer's address, read from the TCP socket under the TLS socket node:http was given. */
  remoteOf(request: IncomingMessage): string | undefined {
    return this.#tcpOf.get(request.socket)?.remoteAddress ?? request.socket.remoteAddress;
  }

  #accept(raw: Socket): void {
    const ticket = acceptTls(raw, this.#gate, {
      ready: (stream, ticket) => this.#handshake(raw, stream, () => ticket.settle()),
    });
    if (ticket === null) return;
    this.streams.add(raw);
    raw.on('error', (e: Error) => this.#log.debug({ event: 'web.socket-error', reason: e.message }));
    raw.once('close', () => this.streams.delete(raw));
  }

  #handshake(raw: Socket, stream: MeteredStream, settle: () => void): void {
    const socket = new TLSSocket(stream, {
      isServer: true,
      secureContext: this.#options.context,
      ALPNProtocols: ['http/1.1'],
    });
    this.streams.add(socket);
    let handshaking = true;
    socket.once('secure', () => {
      handshaking = false;
      // Authenticated only by the request's token: node:http's admission (admitHttp) takes
      // the connection over, pending again until the request head is in.
      settle();
      this.#tcpOf.set(socket, raw);
      this.#http.emit('connection', socket);
    });
    socket.on('error', (e: Error) => {
      if (handshaking) {
        handshaking = false;
        settle();
        this.#gate.refused('handshake', raw.remoteAddress);
        this.#options.refusals.note({
          remote: raw.remoteAddress,
          code: 'E_WEB_HANDSHAKE',
          reason: e.message,
        });
        socket.destroy();
      } else this.#log.debug({ event: 'web.socket-error', reason: e.message });
    });
    socket.once('close', () => {
      settle();
      this.streams.delete(socket);
      stream.destroy();
    });
  }
}

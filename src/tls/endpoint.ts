// The mutual-TLS endpoint (semantics §14, differences (c) and (f)): TLS 1.3 with a client
// certificate, the path verified here, identity derived, and the request carried to petreld's
// local sockets as frames. It reaches the engine only through those sockets, so it runs in
// petreld or as its own unprivileged process.
//
// 1. A TCP connection is counted as pending until its handshake ends; beyond
//    `maxPendingHandshakes` it is closed at once, and `handshakeTimeout` bounds each handshake.
// 2. The TLS layer requests a certificate but does not judge it (`rejectUnauthorized: false`,
//    an empty CA store, OpenSSL's own chain verification switched off: sslctx.ts): Node links
//    the presented certificates by issuer NAME, so its verdict and its chain cannot decide who
//    the client is. verifyClientChain builds and checks the path itself, linking by signature,
//    and refuses every connection it does not accept. The empty store also keeps Node from
//    appending the anchor, so the chain we read is exactly what the client sent (as far as Node
//    could link it; unlinked extras cannot be on a path).
// 3. Identity and the static policy check come before any socket to petreld is opened: a
//    refused client causes no frame at all. Refusals close TLS without a reply frame, logged.
// 4. proxy.ts carries the request and its reply.
// 5. One log line per session: `tls.session` (info) when it ends, or `tls.refused` (warn).

import { constants } from 'node:crypto';
import { type AddressInfo, createConnection, createServer, type Server, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { createSecureContext, type SecureContext, TLSSocket } from 'node:tls';
import pino, { type Logger } from 'pino';
import { err, ok, type Result } from '../resources/errors.js';
import { printName } from '../resources/name.js';
import { loadTrustAnchor, MAX_CHAIN, type TrustAnchor, verifyClientChain } from './chain.js';
import { type Channel, SocketChannel } from './channel.js';
import { describeError, type TlsError, tlsError } from './errors.js';
import { authorize } from './identity.js';
import { proxy, type Service } from './proxy.js';
import { type SocketPaths, TLS_DEFAULTS } from './settings.js';
import { prepareServerContext } from './sslctx.js';

export { type SocketPaths, socketPaths, TLS_DEFAULTS } from './settings.js';

export interface TlsEndpointOptions {
  /** The one trust anchor (PEM or DER); the file must hold exactly one certificate. */
  readonly ca: string | Uint8Array;
  /** The server's certificate chain and key (PEM). */
  readonly cert: string | Uint8Array;
  readonly key: string | Uint8Array;
  readonly sockets: SocketPaths;
  /** Default `::` (dual stack). */
  readonly host?: string;
  /** Default 1025; 0 picks a free port. */
  readonly port?: number;
  /** Largest frame from either side, and largest streamed image. Default 64 MiB. */
  readonly maxFrameBytes?: number;
  /** TCP connections still in the handshake at once. Default 64. */
  readonly maxPendingHandshakes?: number;
  /** Default 10 s. */
  readonly handshakeTimeoutMs?: number;
  /** Default: pino to standard output. Keys and certificates are never logged. */
  readonly logger?: Logger;
  /** The clock certificates are validated against. Default: the system clock. */
  readonly clock?: () => Date;
  /**
   * How a request reaches petreld's service: a connection carrying the same frames as its
   * socket would, or null when it cannot be reached. Default: a connection to the socket under
   * `sockets`. petreld, hosting the endpoint, hands it in-memory connections to the same
   * handlers instead (no kernel round trip per frame).
   */
  readonly openService?: (service: Service) => Duplex | null;
}

export interface TlsEndpoint {
  /** Starts listening; resolves with the bound address. */
  listen(): Promise<AddressInfo>;
  /** Stops listening and closes every connection, pending or proxied. */
  close(): Promise<void>;
}

export function createTlsEndpoint(options: TlsEndpointOptions): Result<TlsEndpoint, TlsError> {
  const anchor = loadTrustAnchor(options.ca);
  if (!anchor.ok) return anchor;
  let context: SecureContext;
  try {
    context = createSecureContext({
      cert: toPemInput(options.cert),
      key: toPemInput(options.key),
      ca: [],
      minVersion: 'TLSv1.3',
      maxVersion: 'TLSv1.3',
      // No resumption: every connection presents (and we verify) its chain afresh, and a
      // session ticket would otherwise carry the client's certificate (an image, for stock
      // Albatross clients) back to it, breaking clients once the ticket outgrows its limit.
      secureOptions: constants.SSL_OP_NO_TICKET,
    });
  } catch (e) {
    return err('E_TLS_ANCHOR', `the server certificate or key is unusable: ${describeError(e)}`);
  }
  // Leaves up to TLS's limit (stock albatross-client leaves carry whole images), no chain
  // verification by OpenSSL (ours is the one that counts), no tickets: sslctx.ts.
  const prepared = prepareServerContext(context);
  if (!prepared.ok) return prepared;
  return ok(new Endpoint(options, anchor.value, context));
}

const toPemInput = (input: string | Uint8Array): string | Buffer =>
  typeof input === 'string' ? input : Buffer.from(input);

class Endpoint implements TlsEndpoint {
  readonly #options: TlsEndpointOptions;
  readonly #anchor: TrustAnchor;
  readonly #context: SecureContext;
  readonly #log: Logger;
  readonly #maxFrame: number;
  readonly #server: Server;
  readonly #sockets = new Set<Duplex>();
  #pending = 0;
  /** One counter per endpoint: every command written to petreld takes the next value (§14.3). */
  #sequence = 0n;

  constructor(options: TlsEndpointOptions, anchor: TrustAnchor, context: SecureContext) {
    this.#options = options;
    this.#anchor = anchor;
    this.#context = context;
    this.#log = options.logger ?? pino({ name: 'petrel-tls' });
    this.#maxFrame = options.maxFrameBytes ?? TLS_DEFAULTS.maxFrameBytes;
    this.#server = createServer((socket) => this.#accept(socket));
  }

  listen(): Promise<AddressInfo> {
    const host = this.#options.host ?? TLS_DEFAULTS.host;
    const port = this.#options.port ?? TLS_DEFAULTS.port;
    return new Promise((resolve, reject) => {
      this.#server.once('error', reject);
      // Albatross listens with backlog 10; with many clients connecting at once that drops SYNs
      // (clients then wait seconds to retransmit). Admission is the pending-handshake cap's job.
      this.#server.listen({ host, port, backlog: 511, ipv6Only: false }, () => {
        this.#server.off('error', reject);
        const address = this.#server.address() as AddressInfo;
        this.#log.info({ event: 'tls.listening', address: address.address, port: address.port }, 'listening');
        resolve(address);
      });
    });
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.#server.close(() => resolve());
      for (const socket of this.#sockets) socket.destroy();
    });
  }

  #refuse(socket: Socket, remote: string, error: TlsError): void {
    this.#log.warn({ event: 'tls.refused', remote, code: error.code, reason: error.message }, 'refused');
    // close_notify, then a bounded wait for the peer before the socket is dropped.
    socket.end();
    setTimeout(() => socket.destroy(), 1000).unref();
  }

  #accept(raw: Socket): void {
    const remote = `${raw.remoteAddress}:${raw.remotePort}`;
    const limit = this.#options.maxPendingHandshakes ?? TLS_DEFAULTS.maxPendingHandshakes;
    if (this.#pending >= limit) {
      const reason = `${this.#pending} connections are in the handshake, the limit is ${limit}`;
      this.#log.warn({ event: 'tls.refused', remote, code: 'E_TLS_TOO_MANY_HANDSHAKES', reason }, 'refused');
      raw.destroy();
      return;
    }
    this.#pending++;
    this.#sockets.add(raw);
    let handshaking = true;
    const handshakeOver = (): void => {
      if (!handshaking) return;
      handshaking = false;
      this.#pending--;
      clearTimeout(timer);
    };
    const socket = new TLSSocket(raw, {
      isServer: true,
      secureContext: this.#context,
      requestCert: true,
      rejectUnauthorized: false,
    });
    this.#sockets.add(socket);
    const timeout = this.#options.handshakeTimeoutMs ?? TLS_DEFAULTS.handshakeTimeoutMs;
    const timer = setTimeout(() => {
      handshakeOver();
      this.#refuse(socket, remote, tlsError('E_TLS_HANDSHAKE_TIMEOUT', `no handshake within ${timeout} ms`));
      socket.destroy();
    }, timeout);
    socket.once('secure', () => {
      handshakeOver();
      this.#serve(socket, remote).catch((e: unknown) => {
        this.#log.error({
          event: 'tls.internal',
          remote,
          reason: describeError(e),
        });
        socket.destroy();
      });
    });
    socket.on('error', (e: Error) => {
      if (handshaking) {
        handshakeOver();
        this.#refuse(socket, remote, tlsError('E_TLS_HANDSHAKE', e.message));
      } else {
        this.#log.debug({ event: 'tls.socket-error', remote, reason: e.message });
      }
    });
    socket.once('close', () => {
      if (handshaking) this.#log.debug({ event: 'tls.closed-in-handshake', remote });
      handshakeOver();
      this.#sockets.delete(socket);
      this.#sockets.delete(raw);
      raw.destroy();
    });
  }

  async #serve(socket: TLSSocket, remote: string): Promise<void> {
    const began = performance.now();
    const presented = presentedChain(socket);
    if (!presented.ok) return this.#refuse(socket, remote, presented.error);
    const clock = this.#options.clock ?? (() => new Date());
    const path = verifyClientChain(presented.value, this.#anchor, clock());
    if (!path.ok) return this.#refuse(socket, remote, path.error);
    const identity = authorize(path.value);
    if (!identity.ok) return this.#refuse(socket, remote, identity.error);
    const name = printName(identity.value.name);
    const command = identity.value.command.type;
    // A subscription may run for days: say that it started (debug); every session is logged
    // once, at info, when it ends (a refused one once, at warn).
    this.#log.debug({ event: 'tls.request', remote, name, command }, 'request');
    let logged: TlsError | null = null;
    const client = new SocketChannel(socket, this.#maxFrame, (error) => {
      logged = error;
      this.#log.warn(
        { event: 'tls.refused', remote, name, code: error.code, reason: error.message },
        'refused',
      );
    });
    const outcome = await proxy({
      identity: identity.value,
      client,
      connect: (service) => this.#connect(service, remote),
      sequence: () => this.#sequence++,
      maxFrameBytes: this.#maxFrame,
    });
    if (outcome.kind === 'refused') {
      if (outcome.error !== logged) this.#refuse(socket, remote, outcome.error);
      socket.destroy();
      return;
    }
    this.#log.info(
      {
        event: 'tls.session',
        remote,
        name,
        command,
        outcome: outcome.kind,
        failure: outcome.failure,
        ms: Math.round(performance.now() - began),
      },
      'session',
    );
  }

  #connect(service: Service, remote: string): Promise<Channel | null> {
    if (this.#options.openService !== undefined) {
      const stream = this.#options.openService(service);
      if (stream === null) {
        this.#log.warn({ event: 'tls.daemon-unreachable', remote, service, reason: 'petreld is stopping' });
        return Promise.resolve(null);
      }
      this.#sockets.add(stream);
      stream.once('close', () => this.#sockets.delete(stream));
      return Promise.resolve(this.#channel(stream, service, remote));
    }
    const path = this.#options.sockets[service];
    return new Promise((resolve) => {
      const socket = createConnection(path);
      this.#sockets.add(socket);
      socket.once('close', () => this.#sockets.delete(socket));
      const failed = (e: Error): void => {
        this.#log.warn({ event: 'tls.daemon-unreachable', remote, service, reason: e.message });
        resolve(null);
      };
      socket.once('error', failed);
      socket.once('connect', () => {
        socket.off('error', failed);
        resolve(this.#channel(socket, service, remote));
      });
    });
  }

  #channel(stream: Duplex, service: Service, remote: string): Channel {
    return new SocketChannel(stream, this.#maxFrame, (error) => {
      this.#log.warn({ event: 'tls.daemon-frame-refused', remote, service, reason: error.message });
    });
  }
}

/**
 * The certificates the client sent, leaf first, as Node hands them over (its Buffers, not
 * copies: a leaf may carry an image). Reading stops at MAX_CHAIN: a chain that long is refused
 * before any certificate is parsed.
 *
 * getPeerCertificate(true) builds an object per certificate (three fingerprints, names, key)
 * and looks each issuer up in the empty CA store: about 0.2 ms per session here, but Node 20 has
 * no cheaper way. getPeerX509Certificate() would hand over exactly the certificates sent, for
 * a little less, but it removes the intermediates from the connection's own chain without
 * freeing them (a leak of every intermediate, every session).
 */
function presentedChain(socket: TLSSocket): Result<Uint8Array[], TlsError> {
  const leaf = socket.getPeerCertificate(true);
  if (leaf === null || leaf === undefined || !Buffer.isBuffer(leaf.raw)) {
    return err('E_TLS_NO_CERTIFICATE', 'the client presented no certificate');
  }
  const ders: Uint8Array[] = [];
  const seen = new Set<object>();
  for (let cert = leaf; cert !== undefined && Buffer.isBuffer(cert.raw) && !seen.has(cert); ) {
    if (ders.length >= MAX_CHAIN) return err('E_TLS_CHAIN_TOO_LONG', 'certificate chain too long');
    seen.add(cert);
    ders.push(cert.raw);
    cert = cert.issuerCertificate;
  }
  return ok(ders);
}

// The mutual-TLS endpoint (semantics §14, differences (c) and (f)): TLS 1.3 with a client
// certificate, the path verified here, identity derived, and the request carried to petreld's
// local sockets as frames. It reaches the engine only through those sockets, so it runs in
// petreld or as its own unprivileged process.
//
// 1. A TCP connection is pending from accept until its chain check returns, admitted by the
//    gate (src/net/gate.ts, src/resources/admission.ts): budgets of sockets and bytes, in all
//    and per address, deadlines by progress. Its first record (the ClientHello) is read here,
//    before any TLS state exists, so an idle or stalled socket costs a descriptor and a buffer;
//    then TLS runs over a stream that counts every byte read until the chain is checked.
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
// 5. One log line per session: `tls.session` (info) when it ends, or `tls.refused` (warn, at
//    most ten a second: the others are counted in the next). Evictions and budget refusals
//    are logged by the gate, one line a second at most.
// 6. After the handshake: at most `maxConnectionsPerIdentity` sessions of one identity's path
//    at once, and a frame once begun must not pause longer than `frameStallTimeout`.

import { constants } from 'node:crypto';
import { type AddressInfo, createServer, type Server, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { createSecureContext, type SecureContext, TLSSocket } from 'node:tls';
import pino, { type Logger } from 'pino';
import { TransferCollector } from '../host/garbage.js';
import { Gate, type GateCounts, type GatedListener, type Ticket } from '../net/gate.js';
import type { MeteredStream } from '../net/metered.js';
import { acceptTls } from '../net/tls-accept.js';
import { err, ok, type Result } from '../resources/errors.js';
import { printName, printPath } from '../resources/name.js';
import { loadTrustAnchor, MAX_CHAIN, type TrustAnchor, verifyClientChain } from './chain.js';
import { type Channel, SocketChannel } from './channel.js';
import { describeError, type TlsError, tlsError } from './errors.js';
import { authorize } from './identity.js';
import { finalFrame, proxy, type Service } from './proxy.js';
import { connectService } from './service.js';
import {
  ADMISSION_DEFAULTS,
  type AdmissionSettings,
  admissionLimits,
  LARGE_HANDSHAKE,
  SESSION_DEFAULTS,
  type SocketPaths,
  TLS_DEFAULTS,
} from './settings.js';
import { prepareServerContext } from './sslctx.js';

export {
  ADMISSION_DEFAULTS,
  type AdmissionSettings,
  SESSION_DEFAULTS,
  type SocketPaths,
  socketPaths,
  TLS_DEFAULTS,
} from './settings.js';

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
  /** Admission of connections not yet authenticated; defaults ADMISSION_DEFAULTS. */
  readonly admission?: Partial<AdmissionSettings>;
  /** Concurrent sessions of one identity's path. Default 64. */
  readonly maxConnectionsPerIdentity?: number;
  /** The longest pause inside a frame from the client. Default 30 s. */
  readonly frameStallTimeoutMs?: number;
  /** Log the admission counters this often when they changed (the separate process). */
  readonly logCountersEveryMs?: number;
  /** The largest handshake accepted (tests). Default LARGE_HANDSHAKE. */
  readonly maxHandshakeBytes?: number;
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

/** close() ends pending and proxied connections alike. */
export type TlsEndpoint = GatedListener;

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

/** `tls.refused` lines a second at most. */
const REFUSALS_LOGGED = 10;

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
  readonly #gate: Gate;
  /** Open sessions per identity path (`alice:`). */
  readonly #sessions = new Map<string, number>();
  /** When `tls.refused` was last logged, and how many were not logged since. */
  #refusedAt = 0;
  #refusedInSecond = 0;
  #refusedQuiet = 0;
  /** One counter per endpoint: every command written to petreld takes the next value (§14.3). */
  #sequence = 0n;

  constructor(options: TlsEndpointOptions, anchor: TrustAnchor, context: SecureContext) {
    this.#options = options;
    this.#anchor = anchor;
    this.#context = context;
    this.#log = options.logger ?? pino({ name: 'petrel-tls' });
    this.#maxFrame = options.maxFrameBytes ?? TLS_DEFAULTS.maxFrameBytes;
    const settings: AdmissionSettings = { ...ADMISSION_DEFAULTS, ...options.admission };
    this.#gate = new Gate(
      'tls',
      admissionLimits(settings, options.maxHandshakeBytes ?? LARGE_HANDSHAKE),
      this.#log,
      options.logCountersEveryMs,
    );
    this.#server = createServer((socket) => this.#accept(socket));
  }

  listen(): Promise<AddressInfo> {
    const host = this.#options.host ?? TLS_DEFAULTS.host;
    const port = this.#options.port ?? TLS_DEFAULTS.port;
    return new Promise((resolve, reject) => {
      this.#server.once('error', reject);
      // Albatross listens with backlog 10; with many clients connecting at once that drops SYNs
      // (clients then wait seconds to retransmit). Admission is the gate's job.
      this.#server.listen({ host, port, backlog: 511, ipv6Only: false }, () => {
        this.#server.off('error', reject);
        const address = this.#server.address() as AddressInfo;
        this.#log.info({ event: 'tls.listening', address: address.address, port: address.port }, 'listening');
        resolve(address);
      });
    });
  }

  close(): Promise<void> {
    this.#gate.close();
    return new Promise((resolve) => {
      this.#server.close(() => resolve());
      for (const socket of this.#sockets) socket.destroy();
    });
  }

  counts(): GateCounts {
    return this.#gate.counts();
  }

  #refuse(socket: Duplex, remote: string, error: TlsError, name?: string): void {
    // A flood of bad handshakes must not flood the log: at most REFUSALS_LOGGED lines a
    // second, the next one saying how many were left out.
    const now = Date.now();
    if (now - this.#refusedAt >= 1000) {
      this.#refusedAt = now;
      this.#refusedInSecond = 0;
    }
    if (this.#refusedInSecond++ < REFUSALS_LOGGED) {
      this.#log.warn(
        {
          event: 'tls.refused',
          remote,
          ...(name === undefined ? {} : { name }),
          code: error.code,
          reason: error.message,
          ...(this.#refusedQuiet > 0 ? { unlogged: this.#refusedQuiet } : {}),
        },
        'refused',
      );
      this.#refusedQuiet = 0;
    } else this.#refusedQuiet++;
    // close_notify, then a bounded wait for the peer before the socket is dropped.
    socket.end();
    setTimeout(() => socket.destroy(), 1000).unref();
  }

  /**
   * A new TCP connection: admitted by the gate, its first record read here, then TLS. The
   * ticket is settled once the chain check returns, or when the socket closes before.
   */
  #accept(raw: Socket): void {
    const remote = `${raw.remoteAddress}:${raw.remotePort}`;
    // A stock client's leaf carries an image: its handshake passes megabytes through buffers
    // of this process, collected as they pass, as any bulk transfer's are (host/garbage.ts),
    // until the handshake is over.
    const garbage = new TransferCollector();
    let counted = 0;
    let handshaking = true;
    const ticket = acceptTls(raw, this.#gate, {
      ready: (stream, ticket) => {
        counted = raw.bytesRead;
        this.#handshake(stream, ticket, remote, () => {
          handshaking = false;
        });
      },
      read: (bytesRead) => {
        if (!handshaking) return;
        garbage.moved(bytesRead - counted);
        counted = bytesRead;
      },
    });
    if (ticket === null) return;
    this.#sockets.add(raw);
    raw.on('error', (e: Error) => this.#log.debug({ event: 'tls.socket-error', remote, reason: e.message }));
    raw.once('close', () => this.#sockets.delete(raw));
  }

  #handshake(stream: MeteredStream, ticket: Ticket, remote: string, over: () => void): void {
    const socket = new TLSSocket(stream, {
      isServer: true,
      secureContext: this.#context,
      requestCert: true,
      rejectUnauthorized: false,
    });
    this.#sockets.add(socket);
    let handshaking = true;
    socket.once('secure', () => {
      handshaking = false;
      over();
      this.#serve(socket, remote, ticket).catch((e: unknown) => {
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
        handshaking = false;
        ticket.settle();
        this.#gate.refused('handshake', undefined);
        this.#refuse(socket, remote, tlsError('E_TLS_HANDSHAKE', e.message));
      } else {
        this.#log.debug({ event: 'tls.socket-error', remote, reason: e.message });
      }
    });
    socket.once('close', () => {
      if (handshaking) this.#log.debug({ event: 'tls.closed-in-handshake', remote });
      ticket.settle();
      this.#sockets.delete(socket);
      stream.destroy();
    });
  }

  async #serve(socket: TLSSocket, remote: string, ticket: Ticket): Promise<void> {
    const began = performance.now();
    const presented = presentedChain(socket);
    const clock = this.#options.clock ?? (() => new Date());
    const path = presented.ok ? verifyClientChain(presented.value, this.#anchor, clock()) : presented;
    // The chain check has returned: the peer's bytes no longer count against the budgets.
    ticket.settle();
    if (!path.ok) {
      this.#gate.refused('chain', undefined);
      return this.#refuse(socket, remote, path.error);
    }
    const identity = authorize(path.value);
    if (!identity.ok) return this.#refuse(socket, remote, identity.error);
    const name = printName(identity.value.name);
    const command = identity.value.command.type;
    const who = `${printPath(identity.value.name.path)}:`;
    const open = this.#sessions.get(who) ?? 0;
    const most = this.#options.maxConnectionsPerIdentity ?? SESSION_DEFAULTS.maxConnectionsPerIdentity;
    if (open >= most) {
      const error = tlsError(
        'E_TLS_TOO_MANY_SESSIONS',
        `${who} has ${open} sessions open, the limit is ${most} (maxConnectionsPerIdentity)`,
        { limit: most, open },
      );
      this.#gate.refused('identity-limit', undefined);
      socket.write(finalFrame(identity.value, { kind: 'failure', message: error.message }));
      return this.#refuse(socket, remote, error, name);
    }
    this.#sessions.set(who, open + 1);
    socket.once('close', () => {
      const left = (this.#sessions.get(who) ?? 1) - 1;
      if (left > 0) this.#sessions.set(who, left);
      else this.#sessions.delete(who);
    });
    // A subscription may run for days: say that it started (debug); every session is logged
    // once, at info, when it ends (a refused one once, at warn).
    this.#log.debug({ event: 'tls.request', remote, name, command }, 'request');
    let logged: TlsError | null = null;
    const client = new SocketChannel(
      socket,
      this.#maxFrame,
      (error) => {
        logged = error;
        this.#log.warn(
          { event: 'tls.refused', remote, name, code: error.code, reason: error.message },
          'refused',
        );
      },
      undefined,
      this.#options.frameStallTimeoutMs ?? SESSION_DEFAULTS.frameStallTimeoutMs,
    );
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
    return connectService(
      {
        sockets: this.#options.sockets,
        openService: this.#options.openService,
        maxFrameBytes: this.#maxFrame,
        log: this.#log,
        listener: 'tls',
        streams: this.#sockets,
      },
      service,
      remote,
    );
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

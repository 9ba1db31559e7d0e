// The web API's HTTPS listener (`webListen`, issue 24): admitted by the same gate as the
// mutual-TLS endpoint (src/net/tls-accept.ts, then src/net/http.ts until a request head is in),
// a bearer token verified per request (src/tls/token.ts), and each command carried to petreld
// by the TLS endpoint's own proxy over the local sockets' frames (src/tls/proxy.ts).
//
// 1. TCP → gate → first record → TLS (any version ≥ 1.2 a browser speaks, ALPN http/1.1) over
//    the metered stream; once the handshake is over the connection is handed to node:http,
//    and stays pending in the gate until a complete request head has arrived (and again while
//    a kept-alive connection waits for the next).
// 2. Every request carries `Authorization: Bearer ptk1.…`; it is verified against the CA as a
//    TLS client chain is, and against the deny-list, before anything is sent to petreld. An
//    address that failed 30 times in a minute is refused (429) without a check until it ends.
// 3. The request's command goes to petreld under the name the token's path and the URL make,
//    after the chain's policies, exactly as a TLS session's does.
// 4. One `web.audit` line per change; refusals at most ten lines a second.

import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { type AddressInfo, createServer, type Server, type Socket } from 'node:net';
import { hostname } from 'node:os';
import type { Duplex } from 'node:stream';
import { createSecureContext, type SecureContext, TLSSocket } from 'node:tls';
import pino, { type Logger } from 'pino';
import { Gate, type GateCounts } from '../net/gate.js';
import { admitHttp } from '../net/http.js';
import type { MeteredStream } from '../net/metered.js';
import { acceptTls } from '../net/tls-accept.js';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import { FAILURE_DEFAULTS, FailureTable } from '../resources/failures.js';
import { type Name, pathName, printName, printPath } from '../resources/name.js';
import { loadTrustAnchor, type TrustAnchor } from '../tls/chain.js';
import { describeError } from '../tls/errors.js';
import type { Identity } from '../tls/identity.js';
import { type ProxyRequest, proxy, type Service } from '../tls/proxy.js';
import { connectService } from '../tls/service.js';
import {
  ADMISSION_DEFAULTS,
  type AdmissionSettings,
  admissionLimits,
  SESSION_DEFAULTS,
  SMALL_HANDSHAKE,
  type SocketPaths,
  TLS_DEFAULTS,
} from '../tls/settings.js';
import { type VerifiedToken, verifyToken } from '../tls/token.js';
import { decodeWire } from '../wire/index.js';
import type { Json } from '../wire/json.js';
import type { Command } from '../wire/types.js';
import {
  type Answer,
  type ApiResponse,
  addBlock,
  answered,
  apiError,
  destroyUnikernel,
  EXIT,
  getUnikernel,
  listBlocks,
  listUnikernels,
  nameUnder,
  nodeInfo,
  removeBlock,
  restartUnikernel,
} from './api.js';
import { RequestChannel } from './channel.js';
import { ConsoleFeeds, FEED_COMMAND } from './console-feed.js';
import { createCommand } from './create.js';
import { dashboardCsp, dashboardDir, loadDashboard } from './dashboard-files.js';
import { DenyList } from './deny-list.js';
import { listExits } from './exits.js';
import { type FleetSource, FleetView } from './fleet.js';
import { Front, SESSION_PATH } from './front.js';
import { MULTIPART_ALLOWANCE, multipartError, readMultipartCreate } from './multipart-create.js';
import { listPolicies, policyChanged, policyCommand, policyPathUnder } from './policies.js';
import { replaceCommand } from './replace.js';
import { hasBody, SECURITY_HEADERS, sendJson, tooLarge } from './respond.js';
import { type Action, BODIES, CHANGES, matchRoute } from './routes.js';
import { Sampler } from './samples.js';
import { SessionTable } from './sessions.js';
import {
  consoleSelect,
  type EventOf,
  type Run,
  relayBlockDump,
  relayEvents,
  relayImageDownload,
  statsJson,
} from './streams.js';
import { TokenUsage } from './usage.js';

/** One command to petreld; `body` the request whose body follows it, as `chunks` when given. */
type BodyAsk = (
  name: Name,
  command: Command,
  body?: IncomingMessage,
  chunks?: AsyncIterable<Buffer>,
) => Promise<Answer>;

export interface WebServerOptions {
  /** The CA (PEM or DER) tokens must lead to: the TLS endpoint's `tlsCa`. */
  readonly ca: string | Uint8Array;
  /** The certificate browsers are shown (`petrel ca web-cert`) and its key, PEM. */
  readonly cert: string | Uint8Array;
  readonly key: string | Uint8Array;
  readonly sockets: SocketPaths;
  /** `<stateDir>/web-deny-list`. */
  readonly denyList: string;
  /**
   * The fleet registry's deny-list (src/fleet/revocations.ts) when `fleetDb` is set, honoured
   * beside the file; stopped when the listener closes.
   */
  readonly revocations?: {
    current(): Result<ReadonlySet<string>, PetrelError>;
    stop(): Promise<void>;
  };
  /** This node's id in the fleet (`nodeId`). Default: the host name. */
  readonly nodeId?: string;
  /**
   * The registry's nodes and their web origins when `fleetDb` is set (fleet.ts): GET
   * /api/v1/fleet, the CORS answered to the other nodes' pages, the dashboard's connect-src.
   * Stopped when the listener closes.
   */
  readonly fleet?: FleetSource;
  /** `<stateDir>/web-token-usage.json`; none: counts are kept in memory only. */
  readonly usage?: string;
  /** Default `::`. */
  readonly host?: string;
  /** 0 picks a free port. */
  readonly port: number;
  /** Requests of one delegation's path at once (consoles included). Default 64. */
  readonly maxConnectionsPerIdentity?: number;
  /** The longest pause inside a request's body (a create's image, a block's data). Default 30 s. */
  readonly frameStallTimeoutMs?: number;
  /** The largest frame to or from petreld. Default 64 MiB. */
  readonly maxFrameBytes?: number;
  readonly admission?: Partial<AdmissionSettings>;
  readonly logger?: Logger;
  /** Tokens are checked against this clock. Default: the system clock. */
  readonly clock?: () => Date;
  /** In-memory connections to petreld's handlers when petreld hosts the listener. */
  readonly openService?: (service: Service) => Duplex | null;
  /** A browser session ends after this long without a request (`webSessionIdleTimeout`). Default 1 h. */
  readonly sessionIdleTimeoutMs?: number;
  /** Where the dashboard's built files are; default: found beside this module (dashboard-files.ts). */
  readonly dashboardDir?: string | null;
  /** petreld's statsInterval: the spacing of the dashboard's samples (samples.ts). Default 10 s. */
  readonly statsIntervalMs?: number;
}

/** `webSessionIdleTimeout`'s default. */
export const SESSION_IDLE_DEFAULT_MS = 60 * 60 * 1000;

export interface WebServer {
  listen(): Promise<AddressInfo>;
  close(): Promise<void>;
  counts(): GateCounts;
}

export function createWebServer(options: WebServerOptions): Result<WebServer, PetrelError> {
  const anchor = loadTrustAnchor(options.ca);
  if (!anchor.ok) return anchor;
  let context: SecureContext;
  try {
    context = createSecureContext({
      cert: pemInput(options.cert),
      key: pemInput(options.key),
      minVersion: 'TLSv1.2',
    });
  } catch (e) {
    return err('E_WEB_CERT', `the web certificate or key is unusable: ${describeError(e)}`);
  }
  return ok(new Web(options, anchor.value, context));
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

/** `web.refused` lines a second at most. */
const REFUSALS_LOGGED = 10;

class Web implements WebServer {
  readonly #options: WebServerOptions;
  readonly #anchor: TrustAnchor;
  readonly #context: SecureContext;
  readonly #log: Logger;
  readonly #gate: Gate;
  readonly #tcp: Server;
  readonly #http;
  readonly #deny: DenyList;
  readonly #usage: TokenUsage;
  readonly #feeds: ConsoleFeeds;
  readonly #streams = new Set<Duplex>();
  /** The TCP socket under each TLS socket handed to node:http (admission reads it). */
  readonly #tcpOf = new WeakMap<Socket, Socket>();
  /** Failed authentications per address: past the limit, refused before any signature check. */
  readonly #failures = new FailureTable();
  /** Requests open per identity path (`alice:`). */
  readonly #open = new Map<string, number>();
  readonly #front: Front;
  readonly #fleet: FleetView;
  readonly #sampler: Sampler;
  #sequence = 0n;
  #refusedAt = 0;
  #refusedInSecond = 0;

  constructor(options: WebServerOptions, anchor: TrustAnchor, context: SecureContext) {
    this.#options = options;
    this.#anchor = anchor;
    this.#context = context;
    this.#log = options.logger ?? pino({ name: 'petrel-web' });
    const settings: AdmissionSettings = { ...ADMISSION_DEFAULTS, ...options.admission };
    this.#gate = new Gate('web', admissionLimits(settings, WEB_PENDING_BYTES), this.#log);
    this.#deny = new DenyList(options.denyList, this.#log);
    this.#usage = new TokenUsage(options.usage ?? null, this.#log);
    this.#feeds = new ConsoleFeeds(this.#log);
    this.#fleet = new FleetView(options.nodeId ?? hostname(), options.fleet ?? null, this.#log);
    this.#front = new Front(
      {
        verify: (text) => this.#verify(text),
        refusedFor: (remote, now) => this.#failures.refusedFor(remote, now),
        failed: (remote, now) => this.#failures.failed(remote, now),
        refusal: (fields) => this.#refusal(fields),
        dashboardCsp: async () => dashboardCsp(await this.#fleet.origins()),
        log: this.#log,
      },
      new SessionTable(options.sessionIdleTimeoutMs ?? SESSION_IDLE_DEFAULT_MS),
      loadDashboard(options.dashboardDir === undefined ? dashboardDir() : options.dashboardDir),
    );
    this.#sampler = new Sampler({
      intervalMs: options.statsIntervalMs ?? 10_000,
      log: this.#log,
      run: ({ client, name }) => {
        // petreld's own listener, not a caller: the root, with no policies to install.
        const root: VerifiedToken = {
          id: '',
          name: 'web-samples',
          expires: new Date(8.64e15),
          path: [],
          policies: [],
        };
        return proxy(this.#proxyRequest(root, name, { type: 'stats-subscribe' }, client, ''));
      },
    });
    this.#http = createHttpServer(
      { maxHeaderSize: 16 * 1024, headersTimeout: 10_000, requestTimeout: 0, keepAliveTimeout: 5_000 },
      (request, response) => {
        this.#request(request, response).catch((e: unknown) => {
          this.#log.error({ event: 'web.internal', reason: describeError(e) }, 'internal error');
          if (!response.headersSent)
            sendJson(response, apiError(500, 'E_WEB_INTERNAL', 'internal error', EXIT.protocol));
          else response.destroy();
        });
      },
    );
    admitHttp(this.#http, this.#gate, (socket) => this.#tcpOf.get(socket) ?? socket);
    this.#tcp = createServer((raw) => this.#accept(raw));
  }

  async listen(): Promise<AddressInfo> {
    await this.#usage.load();
    const address = await this.#listen();
    this.#sampler.start();
    return address;
  }

  #listen(): Promise<AddressInfo> {
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
    this.#sampler.stop();
    this.#gate.close();
    await new Promise<void>((resolve) => {
      this.#tcp.close(() => resolve());
      this.#http.close();
      for (const stream of this.#streams) stream.destroy();
    });
    await this.#usage.flush();
    await this.#options.revocations?.stop();
    await this.#fleet.stop();
  }

  counts(): GateCounts {
    return this.#gate.counts();
  }

  #accept(raw: Socket): void {
    const ticket = acceptTls(raw, this.#gate, {
      ready: (stream, ticket) => this.#handshake(raw, stream, () => ticket.settle()),
    });
    if (ticket === null) return;
    this.#streams.add(raw);
    raw.on('error', (e: Error) => this.#log.debug({ event: 'web.socket-error', reason: e.message }));
    raw.once('close', () => this.#streams.delete(raw));
  }

  #handshake(raw: Socket, stream: MeteredStream, settle: () => void): void {
    const socket = new TLSSocket(stream, {
      isServer: true,
      secureContext: this.#context,
      ALPNProtocols: ['http/1.1'],
    });
    this.#streams.add(socket);
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
        this.#refusal({ remote: raw.remoteAddress, code: 'E_WEB_HANDSHAKE', reason: e.message });
        socket.destroy();
      } else this.#log.debug({ event: 'web.socket-error', reason: e.message });
    });
    socket.once('close', () => {
      settle();
      this.#streams.delete(socket);
      stream.destroy();
    });
  }

  /**
   * CORS for the dashboards of the fleet's other nodes, which call this node's API with the
   * bearer token (docs/web.md, every node on one page): an `Origin` that is a fleet node's web
   * origin is echoed, with no credentials allowed (the cookie stays this node's own); any other
   * origin gets no CORS header, so a browser keeps its page from reading the answer. A preflight
   * (OPTIONS) is answered here: true when it was.
   */
  async #cors(request: IncomingMessage, response: ServerResponse, url: URL): Promise<boolean> {
    const origin = request.headers.origin;
    if (origin === undefined || !url.pathname.startsWith('/api/v1/') || url.pathname === SESSION_PATH)
      return false;
    // This node's own page (browsers send Origin on its changes too): no CORS involved.
    if (origin === `https://${request.headers.host ?? ''}`) return false;
    response.setHeader('vary', 'Origin');
    const known = (await this.#fleet.origins()).has(origin);
    if (known) response.setHeader('access-control-allow-origin', origin);
    if (request.method !== 'OPTIONS') return false;
    const allow = known
      ? {
          'access-control-allow-methods': 'GET, HEAD, PUT, POST, DELETE',
          'access-control-allow-headers': 'Authorization, Content-Type, X-CSRF-Token',
          'access-control-max-age': '600',
        }
      : {};
    if (!known) this.#refusal({ code: 'E_WEB_CORS', reason: `preflight from ${origin}, not a fleet node's` });
    response.writeHead(204, { ...SECURITY_HEADERS, ...allow });
    response.end();
    request.resume();
    return true;
  }

  #refusal(fields: Record<string, unknown>): void {
    const now = Date.now();
    if (now - this.#refusedAt >= 1000) {
      this.#refusedAt = now;
      this.#refusedInSecond = 0;
    }
    if (this.#refusedInSecond++ < REFUSALS_LOGGED)
      this.#log.warn({ event: 'web.refused', ...fields }, 'refused');
  }

  async #request(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const remote = this.#tcpOf.get(request.socket)?.remoteAddress ?? request.socket.remoteAddress;
    const url = new URL(request.url ?? '/', 'https://petreld.invalid');
    if (await this.#cors(request, response, url)) return;
    if (this.#front.owns(url.pathname))
      return this.#front.handle(request, response, url, remote ?? 'unknown');
    const route = matchRoute(request.method ?? 'GET', url.pathname);
    if (route.kind === 'none') {
      return this.#drain(request, response, apiError(route.status, route.code, route.message, EXIT.usage));
    }
    const now = Date.now();
    const wait = this.#failures.refusedFor(remote ?? 'unknown', now);
    if (wait > 0) {
      const limits = FAILURE_DEFAULTS;
      const message = `${limits.max} failed authentications from ${remote} within ${limits.windowMs / 1000} s: try again in ${Math.ceil(wait / 1000)} s`;
      this.#refusal({ remote, code: 'E_WEB_TOO_MANY_FAILURES', reason: message });
      return this.#drain(request, response, apiError(429, 'E_WEB_TOO_MANY_FAILURES', message, EXIT.auth), {
        'retry-after': String(Math.ceil(wait / 1000)),
      });
    }
    const token = await this.#authenticate(request);
    if (!token.ok && token.error.code === 'E_WEB_CSRF') {
      this.#refusal({ remote, code: token.error.code, reason: token.error.message });
      const reply = apiError(403, token.error.code, token.error.message, EXIT.auth);
      return this.#drain(request, response, reply);
    }
    if (!token.ok) {
      // petreld's own trouble (an unreadable deny-list) is no failure of the peer's, nor is a
      // session cookie that outlived its session (petreld restarted, idle, signed out).
      if (token.error.code !== 'E_TOKEN_DENY_LIST' && token.error.code !== 'E_WEB_SESSION')
        this.#failures.failed(remote ?? 'unknown', now);
      this.#refusal({ remote, code: token.error.code, reason: token.error.message });
      return this.#drain(request, response, apiError(401, token.error.code, token.error.message, EXIT.auth), {
        'www-authenticate': 'Bearer realm="petreld", error="invalid_token"',
      });
    }
    this.#usage.used(token.value, new Date(now));
    // As the TLS endpoint bounds one identity's sessions, so its requests here (a console is one).
    const who = `${printPath(token.value.path)}:`;
    const open = this.#open.get(who) ?? 0;
    const most = this.#options.maxConnectionsPerIdentity ?? SESSION_DEFAULTS.maxConnectionsPerIdentity;
    if (open >= most) {
      const message = `${who} has ${open} requests open, the limit is ${most} (maxConnectionsPerIdentity)`;
      this.#refusal({ remote, code: 'E_WEB_TOO_MANY_REQUESTS', reason: message });
      return this.#drain(request, response, apiError(429, 'E_WEB_TOO_MANY_REQUESTS', message, EXIT.refused));
    }
    this.#open.set(who, open + 1);
    response.once('close', () => {
      const left = (this.#open.get(who) ?? 1) - 1;
      if (left > 0) this.#open.set(who, left);
      else this.#open.delete(who);
    });
    // No request of this API but create takes a body; one sent anyway is refused, unread.
    if (!BODIES.has(route.action) && hasBody(request)) {
      const reply = apiError(
        400,
        'E_WEB_BODY',
        `${request.method} ${url.pathname} takes no body`,
        EXIT.usage,
      );
      if (CHANGES.has(route.action)) this.#audit(token.value, route.action, route.name, reply);
      return this.#drain(request, response, reply);
    }
    const path = token.value.path;
    const ask: BodyAsk = (name, command, body, chunks) =>
      this.#ask(token.value, name, command, remote ?? '', body, chunks);
    const caller = {
      tokenName: token.value.name,
      tokenId: token.value.id,
      expires: token.value.expires,
      path,
    };
    let reply: ApiResponse;
    switch (route.action) {
      case 'node':
        reply = await nodeInfo(caller, ask);
        break;
      case 'fleet': {
        const fleet = await this.#fleet.nodes();
        reply = { status: 200, body: { nodes: fleet.nodes.map((n) => ({ ...n })), error: fleet.error } };
        break;
      }
      case 'list':
        reply = await listUnikernels(path, url.searchParams, ask);
        break;
      case 'get':
        reply = await getUnikernel(path, route.name, ask);
        break;
      case 'destroy':
        reply = await destroyUnikernel(path, route.name, ask);
        break;
      case 'restart':
        reply = await restartUnikernel(path, route.name, ask);
        break;
      case 'create':
        reply = await this.#create(path, route.name, url.searchParams, request, ask);
        break;
      case 'replace':
        // The answer comes once the check is over (Petrel (m)): 200, or petreld's Failure.
        reply = await this.#withBody(
          path,
          route.name,
          request,
          ask,
          replaceCommand(url.searchParams),
          'image',
          200,
        );
        break;
      case 'console':
        return this.#console(token.value, route.name, url.searchParams, response, remote ?? '');
      case 'stats':
        return this.#stats(token.value, route.name, url.searchParams, response, remote ?? '');
      case 'blocks':
        reply = await listBlocks(path, ask);
        break;
      case 'policies':
        reply = await listPolicies(path, ask);
        break;
      case 'policy-add':
      case 'policy-remove':
        reply = await this.#policy(path, route.action, route.name, url.searchParams, ask);
        break;
      case 'block-add':
        reply = await addBlock(path, route.name, url.searchParams, ask);
        break;
      case 'block-remove':
        reply = await removeBlock(path, route.name, ask);
        break;
      case 'block-set':
        reply = await this.#blockSet(path, route.name, request, ask);
        break;
      case 'block-dump':
        return this.#blockDump(token.value, route.name, response, remote ?? '');
      case 'image':
        return this.#image(token.value, route.name, response, remote ?? '');
      case 'exits':
        reply = await listExits(path, ask);
        break;
      case 'samples': {
        const name = nameUnder(path, route.name);
        reply = name.ok ? { status: 200, body: this.#sampler.json(printName(name.value)) } : name.error;
        break;
      }
    }
    if (CHANGES.has(route.action)) this.#audit(token.value, route.action, route.name, reply);
    // A reply before the whole body was read (refused, too large): the connection goes after it.
    if (!request.complete) this.#drain(request, response, reply);
    else sendJson(response, reply);
  }

  /**
   * PUT or DELETE /api/v1/policies/{path}: a policy strictly below the caller's delegation
   * (policies.ts says why), the engine's checks and messages deciding the rest.
   */
  async #policy(
    path: VerifiedToken['path'],
    action: 'policy-add' | 'policy-remove',
    text: string,
    query: URLSearchParams,
    ask: BodyAsk,
  ): Promise<ApiResponse> {
    const target = policyPathUnder(path, text);
    if (!target.ok) return target.error;
    if (action === 'policy-remove') {
      for (const key of query.keys())
        return apiError(
          400,
          'E_WEB_QUERY',
          `unknown parameter ${JSON.stringify(key)} (a removal takes none)`,
          EXIT.usage,
        );
      return policyChanged(text, await ask(pathName(target.value), { type: 'policy-remove' }), 200);
    }
    const command = policyCommand(query);
    if (!command.ok) return command.error;
    const answer = await ask(pathName(target.value), command.value);
    const added =
      answer.kind === 'reply' && answer.reply.type === 'string' && answer.reply.text === 'added policy';
    return policyChanged(text, answer, added ? 201 : 200);
  }

  /** PUT /api/v1/unikernels/{name}?mem=…: the body is the image, streamed to petreld as it comes. */
  async #create(
    path: VerifiedToken['path'],
    text: string,
    query: URLSearchParams,
    request: IncomingMessage,
    ask: BodyAsk,
  ): Promise<ApiResponse> {
    if (/^multipart\//i.test(request.headers['content-type'] ?? ''))
      return this.#createMultipart(path, text, query, request, ask);
    const command = createCommand(query);
    return this.#withBody(path, text, request, ask, command, 'image', 201);
  }

  /**
   * The same create as multipart/form-data (multipart-create.ts): the parts before the image
   * are its parameters, the image part is streamed as it arrives; a body found malformed once
   * the image has begun is refused (petreld gets no end of it, so nothing is created).
   */
  async #createMultipart(
    path: VerifiedToken['path'],
    text: string,
    query: URLSearchParams,
    request: IncomingMessage,
    ask: BodyAsk,
  ): Promise<ApiResponse> {
    const name = nameUnder(path, text);
    if (!name.ok) return name.error;
    if (!hasBody(request))
      return multipartError('the multipart create has no body: its parts are the parameters and the image');
    const limit = this.#options.maxFrameBytes ?? TLS_DEFAULTS.maxFrameBytes;
    const length = Number(request.headers['content-length'] ?? 0);
    if (length > limit + MULTIPART_ALLOWANCE) return tooLarge(length, limit);
    const stallMs = this.#options.frameStallTimeoutMs ?? SESSION_DEFAULTS.frameStallTimeoutMs;
    const read = await readMultipartCreate(request, query, stallMs);
    if (!read.ok) return read.error;
    const reply = await this.#withBody(
      path,
      text,
      request,
      ask,
      ok(read.value.command),
      'image',
      201,
      read.value.image,
    );
    const failure = read.value.failure();
    return failure === null ? reply : multipartError(failure.message);
  }

  /**
   * A command whose body is streamed to petreld after it (a create's image, a block's data): the
   * name, the command and the body's declared length are checked before any frame is sent, and
   * petreld's string reply is the answer (`created`: its status).
   */
  async #withBody(
    path: VerifiedToken['path'],
    text: string,
    request: IncomingMessage,
    ask: BodyAsk,
    command: Result<Command, ApiResponse>,
    what: 'image' | 'data',
    created: 200 | 201,
    chunks?: AsyncIterable<Buffer>,
  ): Promise<ApiResponse> {
    const name = nameUnder(path, text);
    if (!name.ok) return name.error;
    if (!command.ok) return command.error;
    if (!hasBody(request))
      return apiError(400, 'E_WEB_BODY', `the ${what} is the request body, and there is none`, EXIT.usage);
    const limit = this.#options.maxFrameBytes ?? TLS_DEFAULTS.maxFrameBytes;
    const length = Number(request.headers['content-length'] ?? 0);
    // A multipart body's length counts its parameters too (#createMultipart checks it).
    if (chunks === undefined && length > limit) return tooLarge(length, limit, what);
    // A block's data larger than the device petreld refuses as it arrives ("data exceeds block size").
    const answer = await ask(name.value, command.value, request, chunks);
    if (answer.kind === 'error' && answer.code === 'E_TLS_FRAME_TOO_LARGE')
      return tooLarge(null, limit, what);
    if (answer.kind === 'reply' && answer.reply.type === 'string')
      return { status: created, body: { name: text, reply: answer.reply.text } };
    return answered(answer, 'string');
  }

  /**
   * GET /api/v1/unikernels/{name}/console?count=N|since=TIME: Server-Sent Events, the history
   * first, then lines as the unikernel prints them. Each line is `event: line` with
   * `data: {"timestamp", "line"}`.
   */
  async #console(
    token: VerifiedToken,
    text: string,
    query: URLSearchParams,
    response: ServerResponse,
    remote: string,
  ): Promise<void> {
    const select = consoleSelect(query);
    if (!select.ok) return sendJson(response, select.error);
    const name = nameUnder(token.path, text);
    if (!name.ok) return sendJson(response, name.error);
    // One subscription per unikernel name for all the web's followers (console-feed.ts).
    return this.#feeds.follow(printName(name.value), select.value, response, (client) =>
      proxy(this.#proxyRequest(token, name.value, FEED_COMMAND, client, remote)),
    );
  }

  /**
   * GET /api/v1/unikernels/{name}/stats: Server-Sent Events, one `event: stats` each time petreld
   * samples the unikernel (statsInterval), with CPU time, memory and each network's counters.
   */
  #stats(
    token: VerifiedToken,
    text: string,
    query: URLSearchParams,
    response: ServerResponse,
    remote: string,
  ): Promise<void> {
    for (const key of query.keys()) {
      return Promise.resolve(
        sendJson(
          response,
          apiError(
            400,
            'E_WEB_QUERY',
            `unknown parameter ${JSON.stringify(key)} (stats takes none)`,
            EXIT.usage,
          ),
        ),
      );
    }
    return this.#events(token, text, { type: 'stats-subscribe' }, response, remote, (data) =>
      data.type === 'statistics' ? ['stats', statsJson(data.stats)] : null,
    );
  }

  /** A subscription of a token's delegation as Server-Sent Events (streams.ts). */
  #events(
    token: VerifiedToken,
    text: string,
    command: Command,
    response: ServerResponse,
    remote: string,
    event: EventOf,
  ): Promise<void> {
    return this.#relay(token, text, command, response, remote, (r, run) => relayEvents(r, event, run));
  }

  /** One command of a token's delegation whose answer a relay of streams.ts writes as it comes. */
  async #relay(
    token: VerifiedToken,
    text: string,
    command: Command,
    response: ServerResponse,
    remote: string,
    relay: (response: ServerResponse, run: Run) => Promise<void>,
  ): Promise<void> {
    const name = nameUnder(token.path, text);
    if (!name.ok) return sendJson(response, name.error);
    await relay(response, (client) => proxy(this.#proxyRequest(token, name.value, command, client, remote)));
  }

  /** PUT /api/v1/blocks/{name}/data: the body becomes the device's content, streamed as it comes. */
  #blockSet(
    path: VerifiedToken['path'],
    text: string,
    request: IncomingMessage,
    ask: BodyAsk,
  ): Promise<ApiResponse> {
    const command: Command = { type: 'block-set', compressed: false };
    return this.#withBody(path, text, request, ask, ok(command), 'data', 200);
  }

  /** GET /api/v1/blocks/{name}/data: the device's content, relayed as petreld reads it (streams.ts). */
  #blockDump(token: VerifiedToken, text: string, response: ServerResponse, remote: string): Promise<void> {
    return this.#relay(token, text, { type: 'block-dump', level: 0 }, response, remote, relayBlockDump);
  }

  /** GET /api/v1/unikernels/{name}/image: its image as stored (petrel get), relayed (streams.ts). */
  #image(token: VerifiedToken, text: string, response: ServerResponse, remote: string): Promise<void> {
    return this.#relay(
      token,
      text,
      { type: 'unikernel-get', level: 0 },
      response,
      remote,
      relayImageDownload,
    );
  }

  /** A refusal sent before the body was read: the connection closes after it (the body is unread). */
  #drain(
    request: IncomingMessage,
    response: ServerResponse,
    reply: ApiResponse,
    extra: Record<string, string> = {},
  ): void {
    const closing = hasBody(request) ? { connection: 'close' } : {};
    sendJson(response, reply, { ...extra, ...closing });
  }

  async #authenticate(request: IncomingMessage): Promise<Result<VerifiedToken, PetrelError>> {
    const header = request.headers.authorization;
    // A browser's session cookie stands for its token (front.ts); a bearer token needs no CSRF.
    if (header === undefined) {
      const session = await this.#front.sessionToken(request);
      if (session !== null) return session;
      return err(
        'E_TOKEN_MISSING',
        'no token: send Authorization: Bearer <token> (petrel ca token makes one)',
      );
    }
    const bearer = /^Bearer +(\S+) *$/i.exec(header);
    if (bearer === null) return err('E_TOKEN_MALFORMED', 'the Authorization header is not "Bearer <token>"');
    return this.#verify(bearer[1] as string);
  }

  /** A token's text against the CA, the clock and the deny-list as it is now. */
  async #verify(text: string): Promise<Result<VerifiedToken, PetrelError>> {
    const denied = await this.#deny.current();
    if (!denied.ok) return denied;
    // The fleet registry's list too, when there is one: a token revoked there is revoked here.
    const registry = this.#options.revocations?.current() ?? ok(new Set<string>());
    if (!registry.ok) return registry;
    const clock = this.#options.clock ?? (() => new Date());
    return verifyToken(text, this.#anchor, clock(), (id) => denied.value.has(id) || registry.value.has(id));
  }

  /**
   * One command to petreld under the token's delegation, by the TLS endpoint's proxy; `body`, a
   * create's image, goes after it in raw chunks as it arrives.
   */
  async #ask(
    token: VerifiedToken,
    name: Name,
    command: Command,
    remote: string,
    body?: IncomingMessage,
    chunks?: AsyncIterable<Buffer>,
  ): Promise<Answer> {
    const gone =
      body === undefined ? new Promise<void>(() => {}) : new Promise<void>((r) => body.once('close', r));
    const stallMs = this.#options.frameStallTimeoutMs ?? SESSION_DEFAULTS.frameStallTimeoutMs;
    const client = new RequestChannel(chunks ?? body ?? null, gone, undefined, stallMs);
    const outcome = await proxy(this.#proxyRequest(token, name, command, client, remote));
    if (outcome.kind === 'refused') {
      const status =
        outcome.error.code === 'E_TLS_FRAME_TOO_LARGE'
          ? 413
          : outcome.error.code === 'E_TLS_FRAME_STALLED'
            ? 408
            : 400;
      return {
        kind: 'error',
        status,
        code: outcome.error.code,
        message: outcome.error.message,
        exit: EXIT.usage,
      };
    }
    const last = client.last;
    const decoded = last === null ? null : decodeWire(last);
    if (decoded === null || !decoded.ok) {
      return {
        kind: 'error',
        status: 502,
        code: 'E_CLIENT_PROTOCOL',
        message: 'no reply from petreld',
        exit: EXIT.protocol,
      };
    }
    const payload = decoded.value.payload;
    if (payload.kind === 'reply') return { kind: 'reply', reply: payload.reply };
    if (payload.kind === 'failure') return { kind: 'failure', message: payload.message };
    return {
      kind: 'error',
      status: 502,
      code: 'E_CLIENT_PROTOCOL',
      message: `petreld answered a ${payload.kind}`,
      exit: EXIT.protocol,
    };
  }

  /** What the TLS endpoint's proxy needs for one command of a token's delegation. */
  #proxyRequest(
    token: VerifiedToken,
    name: Name,
    command: Command,
    client: RequestChannel,
    remote: string,
  ): ProxyRequest {
    const maxFrameBytes = this.#options.maxFrameBytes ?? TLS_DEFAULTS.maxFrameBytes;
    const identity: Identity = { name, policies: token.policies, command };
    const link = {
      sockets: this.#options.sockets,
      openService: this.#options.openService,
      maxFrameBytes,
      log: this.#log,
      listener: 'web',
      streams: this.#streams,
    };
    return {
      identity,
      client,
      connect: (service) => connectService(link, service, remote),
      sequence: () => this.#sequence++,
      maxFrameBytes,
    };
  }

  #audit(token: VerifiedToken, action: Action, text: string | null, reply: ApiResponse): void {
    const error = (reply.body as { error?: { code?: string; message?: string } }).error;
    this.#log.info(
      {
        event: 'web.audit',
        token: token.name,
        tokenId: token.id,
        delegation: printPath(token.path),
        action,
        ...auditTarget(token.path, action, text),
        status: reply.status,
        ...(error === undefined
          ? { reply: (reply.body as { reply?: Json }).reply ?? null }
          : { code: error.code, reason: error.message }),
      },
      'web change',
    );
  }
}

/** What a change was about, as an audit line names it: `unikernel`, `block` or `policy`, full. */
function auditTarget(
  path: VerifiedToken['path'],
  action: Action,
  text: string | null,
): Record<string, string> {
  if (text === null) return {};
  if (action.startsWith('policy')) {
    const target = policyPathUnder(path, text);
    return target.ok ? { policy: `${printPath(target.value)}:` } : {};
  }
  const name = nameUnder(path, text);
  return name.ok ? { [action.startsWith('block') ? 'block' : 'unikernel']: printName(name.value) } : {};
}

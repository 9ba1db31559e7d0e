// The web API's HTTPS listener (`webListen`) as petreld makes it, and the way each
// request goes through it:
//
// 1. Admission and TLS (listener.ts): the same gate as the mutual-TLS endpoint, TLS, node:http.
// 2. CORS for the fleet's other nodes' dashboards (cors.ts); the dashboard's files and browser
//    sessions (front.ts).
// 3. The route (routes.ts), then the caller (auth.ts): `Authorization: Bearer ptk1.…` or a
//    session's token, verified against the CA as a TLS client chain is, and against the
//    deny-lists, before anything is sent to petreld; failures and open requests are bounded.
// 4. The action's handler (router.ts, handlers/): its command goes to petreld under the name the
//    token's path and the URL make, after the chain's policies, exactly as a TLS session's does,
//    by the TLS endpoint's own proxy over the local sockets' frames (upstream.ts).
// 5. One `web.audit` line per change; refusals at most ten lines a second (refusals.ts).

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import type { SecureContext } from 'node:tls';
import pino, { type Logger } from 'pino';
import type { GateCounts, GatedListener } from '../net/gate.js';
import { ok, type PetrelError, type Result } from '../resources/errors.js';
import { printName, printPath } from '../resources/name.js';
import { loadTrustAnchor, type TrustAnchor } from '../tls/chain.js';
import { describeError } from '../tls/errors.js';
import { SESSION_DEFAULTS, TLS_DEFAULTS } from '../tls/settings.js';
import type { VerifiedToken } from '../tls/token.js';
import type { Json } from '../wire/json.js';
import { type ApiResponse, apiError, EXIT, nameUnder } from './api.js';
import { Authenticator, OpenRequests } from './auth.js';
import { ConsoleFeeds } from './console-feed.js';
import { answerCors } from './cors.js';
import { dashboardCsp, dashboardDir, loadDashboard } from './dashboard-files.js';
import { DenyList } from './deny-list.js';
import { FleetView } from './fleet.js';
import { Front } from './front.js';
import type { Call, Shared } from './handlers/call.js';
import { WebListener, webTlsContext } from './listener.js';
import { SESSION_IDLE_DEFAULT_MS, type WebServerOptions } from './options.js';
import { policyPathUnder } from './policies.js';
import { RefusalLog } from './refusals.js';
import { hasBody, sendJson } from './respond.js';
import { HANDLERS } from './router.js';
import { type Action, BODIES, CHANGES, matchRoute } from './routes.js';
import { Sampler } from './samples.js';
import { SessionTable } from './sessions.js';
import { Upstream } from './upstream.js';
import { TokenUsage } from './usage.js';

// The listener's options are in options.ts; its callers find them here, as they always have.
export { SESSION_IDLE_DEFAULT_MS, type WebServerOptions };

export type WebServer = GatedListener;

export function createWebServer(options: WebServerOptions): Result<WebServer, PetrelError> {
  const anchor = loadTrustAnchor(options.ca);
  if (!anchor.ok) return anchor;
  const context = webTlsContext(options.cert, options.key);
  if (!context.ok) return context;
  return ok(new Web(options, anchor.value, context.value));
}

/** The caller the dashboard's samples are read as: petreld's own listener, with no policies to install. */
const SAMPLER: VerifiedToken = {
  id: '',
  name: 'web-samples',
  expires: new Date(8.64e15),
  path: [],
  policies: [],
};

class Web implements WebServer {
  readonly #options: WebServerOptions;
  readonly #log: Logger;
  readonly #refusals: RefusalLog;
  readonly #listener: WebListener;
  readonly #auth: Authenticator;
  readonly #open: OpenRequests;
  readonly #upstream: Upstream;
  readonly #usage: TokenUsage;
  readonly #front: Front;
  readonly #fleet: FleetView;
  readonly #sampler: Sampler;
  readonly #shared: Shared;

  constructor(options: WebServerOptions, anchor: TrustAnchor, context: SecureContext) {
    this.#options = options;
    this.#log = options.logger ?? pino({ name: 'petrel-web' });
    this.#refusals = new RefusalLog(this.#log);
    this.#listener = new WebListener({
      context,
      host: options.host,
      port: options.port,
      admission: options.admission,
      log: this.#log,
      refusals: this.#refusals,
      request: (request, response) => {
        this.#request(request, response).catch((e: unknown) => {
          this.#log.error({ event: 'web.internal', reason: describeError(e) }, 'internal error');
          if (!response.headersSent)
            sendJson(response, apiError(500, 'E_WEB_INTERNAL', 'internal error', EXIT.protocol));
          else response.destroy();
        });
      },
    });
    this.#auth = new Authenticator({
      anchor,
      deny: new DenyList(options.denyList, this.#log),
      revocations: options.revocations,
      clock: options.clock,
      refusals: this.#refusals,
      sessionToken: (request) => this.#front.sessionToken(request),
    });
    this.#open = new OpenRequests(
      options.maxConnectionsPerIdentity ?? SESSION_DEFAULTS.maxConnectionsPerIdentity,
    );
    const maxFrameBytes = options.maxFrameBytes ?? TLS_DEFAULTS.maxFrameBytes;
    const stallMs = options.frameStallTimeoutMs ?? SESSION_DEFAULTS.frameStallTimeoutMs;
    this.#upstream = new Upstream({
      sockets: options.sockets,
      openService: options.openService,
      maxFrameBytes,
      stallMs,
      log: this.#log,
      streams: this.#listener.streams,
    });
    this.#usage = new TokenUsage(options.usage ?? null, this.#log);
    this.#fleet = new FleetView(options.nodeId ?? hostname(), options.fleet ?? null, this.#log);
    this.#front = new Front(
      {
        verify: (text) => this.#auth.verify(text),
        refusedFor: (remote, now) => this.#auth.failures.refusedFor(remote, now),
        failed: (remote, now) => this.#auth.failures.failed(remote, now),
        refusal: (fields) => this.#refusals.note(fields),
        dashboardCsp: async () => dashboardCsp(await this.#fleet.origins()),
        log: this.#log,
      },
      new SessionTable(options.sessionIdleTimeoutMs ?? SESSION_IDLE_DEFAULT_MS),
      loadDashboard(options.dashboardDir === undefined ? dashboardDir() : options.dashboardDir),
    );
    this.#sampler = new Sampler({
      intervalMs: options.statsIntervalMs ?? 10_000,
      log: this.#log,
      run: ({ client, name }) => this.#upstream.run(SAMPLER, name, { type: 'stats-subscribe' }, '')(client),
    });
    const feeds = new ConsoleFeeds(this.#log);
    this.#shared = { fleet: this.#fleet, sampler: this.#sampler, feeds, maxFrameBytes, stallMs };
  }

  async listen(): Promise<AddressInfo> {
    await this.#usage.load();
    const address = await this.#listener.listen();
    this.#sampler.start();
    return address;
  }

  async close(): Promise<void> {
    this.#sampler.stop();
    await this.#listener.close();
    await this.#usage.flush();
    await this.#options.revocations?.stop();
    await this.#fleet.stop();
  }

  counts(): GateCounts {
    return this.#listener.counts();
  }

  async #request(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const remote = this.#listener.remoteOf(request);
    const url = new URL(request.url ?? '/', 'https://petreld.invalid');
    if (await answerCors(request, response, url, () => this.#fleet.origins(), this.#refusals)) return;
    if (this.#front.owns(url.pathname))
      return this.#front.handle(request, response, url, remote ?? 'unknown');
    const route = matchRoute(request.method ?? 'GET', url.pathname);
    if (route.kind === 'none') {
      return this.#drain(request, response, apiError(route.status, route.code, route.message, EXIT.usage));
    }
    const now = Date.now();
    const token = await this.#auth.caller(request, remote, now);
    if (!token.ok) return this.#drain(request, response, token.error.reply, token.error.headers);
    this.#usage.used(token.value, new Date(now));
    const tooMany = this.#open.enter(token.value.path, response);
    if (tooMany !== null) {
      this.#refusals.note({ remote, code: 'E_WEB_TOO_MANY_REQUESTS', reason: tooMany });
      return this.#drain(request, response, apiError(429, 'E_WEB_TOO_MANY_REQUESTS', tooMany, EXIT.refused));
    }
    // Only the requests of BODIES take one; one sent anyway is refused, unread.
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
    const reply = await HANDLERS[route.action](
      this.#call(request, response, url, route.name, token.value, remote ?? ''),
    );
    // null: the handler has answered as it went (Server-Sent Events, a download).
    if (reply === null) return;
    if (CHANGES.has(route.action)) this.#audit(token.value, route.action, route.name, reply);
    // A reply before the whole body was read (refused, too large): the connection goes after it.
    if (!request.complete) this.#drain(request, response, reply);
    else sendJson(response, reply);
  }

  /** What a handler is given for one request of a token's delegation. */
  #call(
    request: IncomingMessage,
    response: ServerResponse,
    url: URL,
    text: string,
    token: VerifiedToken,
    remote: string,
  ): Call {
    return {
      request,
      response,
      query: url.searchParams,
      text,
      token,
      ask: (name, command, body, chunks) => this.#upstream.ask(token, name, command, remote, body, chunks),
      run: (name, command) => this.#upstream.run(token, name, command, remote),
      web: this.#shared,
    };
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

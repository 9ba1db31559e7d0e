// The web API's way to petreld: one command under a token's delegation, carried by the TLS
// endpoint's own proxy (src/tls/proxy.ts) over the local sockets' frames, as a session's is.

import type { IncomingMessage } from 'node:http';
import type { Name } from '../resources/name.js';
import type { Identity } from '../tls/identity.js';
import { type ProxyRequest, proxy } from '../tls/proxy.js';
import { connectService, type ServiceLink } from '../tls/service.js';
import type { VerifiedToken } from '../tls/token.js';
import { decodeWire } from '../wire/index.js';
import type { Command } from '../wire/types.js';
import { type Answer, EXIT } from './api.js';
import { RequestChannel } from './channel.js';
import type { Run } from './streams.js';

/** The TLS endpoint's link to petreld's services, as the web API's; `listener` is always `web`. */
export interface UpstreamOptions extends Omit<ServiceLink, 'listener'> {
  /** The longest pause inside a request's body. */
  readonly stallMs: number;
}

export class Upstream {
  readonly #options: UpstreamOptions;
  readonly #link: ServiceLink;
  #sequence = 0n;

  constructor(options: UpstreamOptions) {
    this.#options = options;
    this.#link = { ...options, listener: 'web' };
  }

  /**
   * One command to petreld under the token's delegation, its answer whole; `body`, a create's
   * image, goes after it in raw chunks as it arrives (as `chunks` when given).
   */
  async ask(
    token: VerifiedToken,
    name: Name,
    command: Command,
    remote: string,
    body?: IncomingMessage,
    chunks?: AsyncIterable<Buffer>,
  ): Promise<Answer> {
    const gone =
      body === undefined ? new Promise<void>(() => {}) : new Promise<void>((r) => body.once('close', r));
    const client = new RequestChannel(chunks ?? body ?? null, gone, undefined, this.#options.stallMs);
    const outcome = await proxy(this.#request(token, name, command, client, remote));
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

  /** One command under the token's delegation whose frames go to a relay's channel as they come. */
  run(token: VerifiedToken, name: Name, command: Command, remote: string): Run {
    return (client) => proxy(this.#request(token, name, command, client, remote));
  }

  /** What the TLS endpoint's proxy needs for one command of a token's delegation. */
  #request(
    token: VerifiedToken,
    name: Name,
    command: Command,
    client: RequestChannel,
    remote: string,
  ): ProxyRequest {
    const identity: Identity = { name, policies: token.policies, command };
    return {
      identity,
      client,
      connect: (service) => connectService(this.#link, service, remote),
      sequence: () => this.#sequence++,
      maxFrameBytes: this.#options.maxFrameBytes,
    };
  }
}

// What each route's handler (router.ts) is given: the request, the caller's verified token, the
// ways to petreld; and the exchanges handlers share: a body after a command, an answer relayed.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Result } from '../../resources/errors.js';
import type { Name } from '../../resources/name.js';
import type { VerifiedToken } from '../../tls/token.js';
import type { Command } from '../../wire/types.js';
import { type Answer, type ApiResponse, answered, apiError, EXIT, nameUnder } from '../api.js';
import type { ConsoleFeeds } from '../console-feed.js';
import type { FleetView } from '../fleet.js';
import { hasBody, sendJson, tooLarge } from '../respond.js';
import type { Sampler } from '../samples.js';
import type { Run } from '../streams.js';

/** One command to petreld; `body` the request whose body follows it, as `chunks` when given. */
export type BodyAsk = (
  name: Name,
  command: Command,
  body?: IncomingMessage,
  chunks?: AsyncIterable<Buffer>,
) => Promise<Answer>;

/** What the listener holds for every request alike. */
export interface Shared {
  readonly fleet: FleetView;
  readonly sampler: Sampler;
  readonly feeds: ConsoleFeeds;
  /** The largest frame to or from petreld. */
  readonly maxFrameBytes: number;
  /** The longest pause inside a request's body (a create's image, a block's data). */
  readonly stallMs: number;
}

export interface Call {
  readonly request: IncomingMessage;
  readonly response: ServerResponse;
  readonly query: URLSearchParams;
  /** The name in the URL, relative to the token's path ('' when the URL has none). */
  readonly text: string;
  readonly token: VerifiedToken;
  /** One command under the token's delegation, its answer whole. */
  readonly ask: BodyAsk;
  /** One command under the token's delegation, its frames relayed as they come (streams.ts). */
  readonly run: (name: Name, command: Command) => Run;
  readonly web: Shared;
}

/**
 * A JSON reply, which the listener audits when the action is a change and sends; null when the
 * handler has answered already (Server-Sent Events, a download).
 */
export type Handler = (call: Call) => Promise<ApiResponse | null>;

/**
 * A command whose body is streamed to petreld after it (a create's image, a block's data): the
 * name, the command and the body's declared length are checked before any frame is sent, and
 * petreld's string reply is the answer (`created`: its status).
 */
export async function withBody(
  call: Call,
  command: Result<Command, ApiResponse>,
  what: 'image' | 'data',
  created: 200 | 201,
  chunks?: AsyncIterable<Buffer>,
): Promise<ApiResponse> {
  const { request, text } = call;
  const name = nameUnder(call.token.path, text);
  if (!name.ok) return name.error;
  if (!command.ok) return command.error;
  if (!hasBody(request))
    return apiError(400, 'E_WEB_BODY', `the ${what} is the request body, and there is none`, EXIT.usage);
  const limit = call.web.maxFrameBytes;
  const length = Number(request.headers['content-length'] ?? 0);
  // A multipart body's length counts its parameters too (the multipart create checks it).
  if (chunks === undefined && length > limit) return tooLarge(length, limit, what);
  // A block's data larger than the device petreld refuses as it arrives ("data exceeds block size").
  const answer = await call.ask(name.value, command.value, request, chunks);
  if (answer.kind === 'error' && answer.code === 'E_TLS_FRAME_TOO_LARGE') return tooLarge(null, limit, what);
  if (answer.kind === 'reply' && answer.reply.type === 'string')
    return { status: created, body: { name: text, reply: answer.reply.text } };
  return answered(answer, 'string');
}

/** One command of the caller's whose answer a relay of streams.ts writes as it comes. */
export async function relay(
  call: Call,
  command: Command,
  write: (response: ServerResponse, run: Run) => Promise<void>,
): Promise<null> {
  const name = nameUnder(call.token.path, call.text);
  if (!name.ok) sendJson(call.response, name.error);
  else await write(call.response, call.run(name.value, command));
  return null;
}

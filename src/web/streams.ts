// What the web API relays as petreld sends it, never held whole: subscriptions (console, stats)
// as Server-Sent Events, and a block device's content as the response body. `run` carries the
// command through the TLS endpoint's proxy with a RequestChannel whose frames land here.

import type { ServerResponse } from 'node:http';
import { ok, type Result } from '../resources/errors.js';
import { decodeWire, readImageReplyHead } from '../wire/index.js';
import type { Json } from '../wire/json.js';
import type { ConsoleSelect, Payload, StatsData } from '../wire/types.js';
import { type Answer, type ApiResponse, answered, apiError, EXIT } from './api.js';
import { RequestChannel } from './channel.js';
import { SECURITY_HEADERS, sendJson } from './respond.js';

/** An event (its name and data) for a data frame, or null to pass it over. */
export type EventOf = (data: Extract<Payload, { kind: 'data' }>['data']) => [string, Json] | null;

export type Run = (client: RequestChannel) => Promise<unknown>;

/** What a relay does with a frame once the response has begun. */
type Step =
  | { readonly kind: 'write'; readonly bytes: string | Uint8Array }
  | { readonly kind: 'skip' }
  /** The whole body has come: end the response (after `last`). */
  | { readonly kind: 'end'; readonly last?: string }
  /** petreld failed midway: cut the response, so a partial body is never taken whole. */
  | { readonly kind: 'cut' };

/** The first frame's meaning: the response's head (and what to write first), or an error answer. */
type Opening =
  | {
      readonly kind: 'open';
      readonly headers: Record<string, string | number>;
      readonly first?: string | Uint8Array;
    }
  | { readonly kind: 'refuse'; readonly reply: ApiResponse };

interface Relay {
  /** The proxy's writes are raw pieces (a get's image), not whole frames. */
  readonly raw?: boolean;
  open(payload: Uint8Array): Opening;
  next(payload: Uint8Array): Step;
  /** petreld went away after the response began, without saying the body was whole. */
  readonly unfinished: 'end' | 'cut' | { readonly last: string };
}

/**
 * The skeleton every relay shares: the first reply opens the response (or is an error answer),
 * each later frame is written as `relay` says, waiting for a slow reader to drain (so petreld's
 * bounded queue for this subscriber, or the proxy's read-ahead, bounds what waits), and an
 * exchange that ends without any reply is a 502.
 */
async function relay(response: ServerResponse, run: Run, relay: Relay): Promise<void> {
  const closed = new Promise<void>((resolve) => response.once('close', resolve));
  let opened = false;
  const write = async (bytes: string | Uint8Array): Promise<boolean> => {
    if (!response.write(bytes)) await Promise.race([new Promise((r) => response.once('drain', r)), closed]);
    return !response.destroyed;
  };
  const client = new RequestChannel(null, closed, async (payload) => {
    if (response.destroyed || response.writableEnded) return false;
    if (!opened) {
      const opening = relay.open(payload);
      if (opening.kind === 'refuse') {
        sendJson(response, opening.reply);
        return false;
      }
      opened = true;
      response.writeHead(200, { ...SECURITY_HEADERS, ...opening.headers });
      return opening.first === undefined || opening.first.length === 0 ? true : write(opening.first);
    }
    const step = relay.next(payload);
    switch (step.kind) {
      case 'write':
        return write(step.bytes);
      case 'skip':
        return true;
      case 'end':
        if (step.last === undefined) response.end();
        else response.end(step.last);
        return false;
      case 'cut':
        response.destroy();
        return false;
    }
  });
  client.rawWrites = relay.raw === true;
  await run(client);
  if (!response.headersSent)
    sendJson(response, apiError(502, 'E_CLIENT_PROTOCOL', 'no reply from petreld', EXIT.protocol));
  else if (!response.writableEnded) {
    const unfinished = relay.unfinished;
    if (unfinished === 'cut') response.destroy();
    else if (unfinished === 'end') response.end();
    else response.end(unfinished.last);
  }
}

/** A decoded frame's payload, or null for one that does not decode. */
function payloadOf(bytes: Uint8Array): Payload | null {
  const decoded = decodeWire(bytes);
  return decoded.ok ? decoded.value.payload : null;
}

/** Anything but the reply that opens a relay: petreld's Failure, or a broken exchange. */
function refusal(p: Payload | null, what: string): Opening {
  return {
    kind: 'refuse',
    reply: answered(p?.kind === 'failure' ? { kind: 'failure', message: p.message } : BROKEN, what),
  };
}

/** One Server-Sent Event. */
export const sseEvent = (kind: string, data: Json): string =>
  `event: ${kind}\ndata: ${JSON.stringify(data)}\n\n`;

/** The head of an event stream (and its first comment, so a client sees it open). */
export const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'x-accel-buffering': 'no',
} as const;
export const SSE_OPENED = ': subscribed\n\n';

/**
 * A subscription as Server-Sent Events: petreld's reply opens the stream (a Failure is an
 * error response), each data frame `event` turns into an event, and the stream lasts until
 * the client goes away (which ends the subscription on petreld's side, as a TLS subscriber's
 * close does) or petreld ends it (`event: end`, with its message).
 */
export function relayEvents(response: ServerResponse, event: EventOf, run: Run): Promise<void> {
  return relay(response, run, {
    open: (bytes) => {
      const p = payloadOf(bytes);
      if (p?.kind !== 'reply') return refusal(p, 'a subscription');
      return { kind: 'open', headers: SSE_HEADERS, first: SSE_OPENED };
    },
    next: (bytes) => {
      const p = payloadOf(bytes);
      if (p?.kind === 'data') {
        const made = event(p.data);
        return made === null ? { kind: 'skip' } : { kind: 'write', bytes: sseEvent(made[0], made[1]) };
      }
      if (p?.kind === 'failure') return { kind: 'end', last: sseEvent('end', { message: p.message }) };
      if (p === null) return { kind: 'end', last: sseEvent('end', { message: 'the subscription ended' }) };
      return { kind: 'skip' };
    },
    unfinished: { last: sseEvent('end', { message: 'the subscription ended' }) },
  });
}

/**
 * A get's image as the body, relayed in the pieces the proxy passes on (relayImage in proxy.ts),
 * with its length; `deflate`-encoded when petreld sends it compressed. A failure before it is an
 * error response; a break inside it cuts the response, so a short image is never taken whole.
 */
export function relayImageDownload(response: ServerResponse, run: Run): Promise<void> {
  return relay(response, run, {
    raw: true,
    open: (bytes) => {
      const total = bytes.length >= 4 ? new DataView(bytes.buffer, bytes.byteOffset, 4).getInt32(0) : -1;
      const head = total > 0 ? readImageReplyHead(bytes.subarray(4), total) : null;
      // Not an image: a whole reply (petreld's Failure), as any other.
      if (head === null || head === 'more') return refusal(payloadOf(bytes.subarray(4)), 'an image');
      return {
        kind: 'open',
        headers: {
          'content-type': 'application/octet-stream',
          'content-length': head.imageLength,
          ...(head.compressed ? { 'content-encoding': 'deflate' } : {}),
        },
        first: bytes.subarray(4 + head.headLength),
      };
    },
    next: (bytes) => ({ kind: 'write', bytes }),
    // The length was promised: a short body is cut by node:http's own check.
    unfinished: 'end',
  });
}

/** A block dump's Data frames as the body, in order; cut (never short) if petreld fails midway. */
export function relayBlockDump(response: ServerResponse, run: Run): Promise<void> {
  return relay(response, run, {
    open: (bytes) => {
      const p = payloadOf(bytes);
      if (p?.kind !== 'reply' || p.reply.type !== 'block-device-image') return refusal(p, 'a block dump');
      // Compressed by petreld: zlib, which is HTTP's `deflate`; clients inflate it.
      const encoding: Record<string, string> = p.reply.compressed ? { 'content-encoding': 'deflate' } : {};
      return { kind: 'open', headers: { 'content-type': 'application/octet-stream', ...encoding } };
    },
    next: (bytes) => {
      const p = payloadOf(bytes);
      if (p?.kind === 'data' && p.data.type === 'block')
        return p.data.data === null ? { kind: 'end' } : { kind: 'write', bytes: p.data.data };
      return { kind: 'cut' };
    },
    unfinished: 'cut',
  });
}

const BROKEN: Answer = {
  kind: 'error',
  status: 502,
  code: 'E_CLIENT_PROTOCOL',
  message: 'petreld answered something else than a subscription',
  exit: EXIT.protocol,
};

/** A console's history, as `petrel console` takes it: `count` (0 to 1024, default 20) or `since`. */
export function consoleSelect(query: URLSearchParams): Result<ConsoleSelect, ApiResponse> {
  const bad = (message: string) => ({
    ok: false as const,
    error: apiError(400, 'E_WEB_QUERY', message, EXIT.usage),
  });
  for (const key of query.keys())
    if (key !== 'count' && key !== 'since')
      return bad(`unknown parameter ${JSON.stringify(key)} (console takes count or since)`);
  const since = query.get('since');
  const count = query.get('count');
  if (since !== null && count !== null) return bad('give count or since, not both');
  if (since !== null) {
    const at = /^\d{4}-\d{2}-\d{2}T/.test(since) ? new Date(since) : new Date(Number.NaN);
    if (Number.isNaN(at.getTime()))
      return bad(`since must be an ISO 8601 time, not ${JSON.stringify(since)}`);
    return ok({ kind: 'since', since: at });
  }
  const n = count === null ? 20 : /^\d{1,4}$/.test(count) ? Number(count) : Number.NaN;
  if (!(n >= 0 && n <= 1024))
    return bad(`count must be a whole number from 0 to 1024, not ${JSON.stringify(count)}`);
  return ok({ kind: 'count', count: n });
}

/** A statistics sample as the API shows it: seconds, bytes and counts as numbers. */
export function statsJson(stats: StatsData): Json {
  const seconds = (t: { seconds: bigint; microseconds: number }) => Number(t.seconds) + t.microseconds / 1e6;
  return {
    cpuUser: seconds(stats.rusage.utime),
    cpuSystem: seconds(stats.rusage.stime),
    // As Albatross sends them: the virtual size in bytes, the resident size in pages.
    memory:
      stats.kinfoMem === null
        ? null
        : { virtualBytes: Number(stats.kinfoMem.vsize), residentPages: Number(stats.kinfoMem.rss) },
    networks: stats.ifdata.map((n) => ({
      netif: n.bridge,
      inputBytes: Number(n.inputBytes),
      outputBytes: Number(n.outputBytes),
      inputPackets: Number(n.inputPackets),
      outputPackets: Number(n.outputPackets),
    })),
  };
}

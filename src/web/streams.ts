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

type Run = (client: RequestChannel) => Promise<unknown>;

/**
 * A subscription as Server-Sent Events: petreld's reply opens the stream (a Failure is an
 * error response), each data frame `event` turns into an event, and the stream lasts until
 * the client goes away (which ends the subscription on petreld's side, as a TLS subscriber's
 * close does) or petreld ends it (`event: end`, with its message).
 */
export async function relayEvents(response: ServerResponse, event: EventOf, run: Run): Promise<void> {
  const closed = new Promise<void>((resolve) => response.once('close', resolve));
  let opened = false;
  const send = (kind: string, data: Json): boolean =>
    response.write(`event: ${kind}\ndata: ${JSON.stringify(data)}\n\n`);
  const client = new RequestChannel(null, closed, async (payload) => {
    if (response.destroyed || response.writableEnded) return false;
    const decoded = decodeWire(payload);
    if (!decoded.ok) return false;
    const p = decoded.value.payload;
    if (!opened) {
      if (p.kind !== 'reply') {
        sendJson(
          response,
          answered(p.kind === 'failure' ? { kind: 'failure', message: p.message } : BROKEN, 'a subscription'),
        );
        return false;
      }
      opened = true;
      response.writeHead(200, {
        ...SECURITY_HEADERS,
        'content-type': 'text/event-stream; charset=utf-8',
        'x-accel-buffering': 'no',
      });
      response.write(': subscribed\n\n');
      return true;
    }
    if (p.kind === 'data') {
      const made = event(p.data);
      if (made !== null && !send(made[0], made[1])) {
        // A slow reader: wait for it (petreld's queue for this subscriber bounds what waits).
        await Promise.race([new Promise((r) => response.once('drain', r)), closed]);
      }
      return !response.destroyed;
    }
    if (p.kind === 'failure') {
      send('end', { message: p.message });
      response.end();
      return false;
    }
    return true;
  });
  await run(client);
  if (!response.headersSent)
    sendJson(response, apiError(502, 'E_CLIENT_PROTOCOL', 'no reply from petreld', EXIT.protocol));
  else if (!response.writableEnded) {
    send('end', { message: 'the subscription ended' });
    response.end();
  }
}

/**
 * A get's image as the body, relayed in the pieces the proxy passes on (relayImage in proxy.ts),
 * with its length; `deflate`-encoded when petreld sends it compressed. A failure before it is an
 * error response; a break inside it cuts the response, so a short image is never taken whole.
 */
export async function relayImageDownload(response: ServerResponse, run: Run): Promise<void> {
  const closed = new Promise<void>((resolve) => response.once('close', resolve));
  let opened = false;
  const client = new RequestChannel(null, closed, async (bytes) => {
    if (response.destroyed || response.writableEnded) return false;
    if (!opened) {
      const total = bytes.length >= 4 ? new DataView(bytes.buffer, bytes.byteOffset, 4).getInt32(0) : -1;
      const head = total > 0 ? readImageReplyHead(bytes.subarray(4), total) : null;
      if (head === null || head === 'more') {
        // Not an image: a whole reply (petreld's Failure), as any other.
        const decoded = decodeWire(bytes.subarray(4));
        const p = decoded.ok ? decoded.value.payload : null;
        sendJson(
          response,
          answered(p?.kind === 'failure' ? { kind: 'failure', message: p.message } : BROKEN, 'an image'),
        );
        return false;
      }
      opened = true;
      response.writeHead(200, {
        ...SECURITY_HEADERS,
        'content-type': 'application/octet-stream',
        'content-length': head.imageLength,
        ...(head.compressed ? { 'content-encoding': 'deflate' } : {}),
      });
      bytes = bytes.subarray(4 + head.headLength);
      if (bytes.length === 0) return true;
    }
    if (!response.write(bytes)) await Promise.race([new Promise((r) => response.once('drain', r)), closed]);
    return !response.destroyed;
  });
  client.rawWrites = true;
  await run(client);
  if (!response.headersSent)
    sendJson(response, apiError(502, 'E_CLIENT_PROTOCOL', 'no reply from petreld', EXIT.protocol));
  else if (!response.writableEnded) response.end();
}

/** A block dump's Data frames as the body, in order; cut (never short) if petreld fails midway. */
export async function relayBlockDump(response: ServerResponse, run: Run): Promise<void> {
  const closed = new Promise<void>((resolve) => response.once('close', resolve));
  let opened = false;
  const client = new RequestChannel(null, closed, async (payload) => {
    if (response.destroyed || response.writableEnded) return false;
    const decoded = decodeWire(payload);
    if (!decoded.ok) return false;
    const p = decoded.value.payload;
    if (!opened) {
      if (p.kind !== 'reply' || p.reply.type !== 'block-device-image') {
        sendJson(
          response,
          answered(p.kind === 'failure' ? { kind: 'failure', message: p.message } : BROKEN, 'a block dump'),
        );
        return false;
      }
      opened = true;
      // Compressed by petreld: zlib, which is HTTP's `deflate`; clients inflate it.
      const encoding: Record<string, string> = p.reply.compressed ? { 'content-encoding': 'deflate' } : {};
      response.writeHead(200, {
        ...SECURITY_HEADERS,
        'content-type': 'application/octet-stream',
        ...encoding,
      });
      return true;
    }
    if (p.kind === 'data' && p.data.type === 'block') {
      if (p.data.data === null) {
        response.end();
        return false;
      }
      if (!response.write(p.data.data))
        await Promise.race([new Promise((r) => response.once('drain', r)), closed]);
      return !response.destroyed;
    }
    // A failure once the data has begun: the response is cut, so a partial dump is never taken for a whole one.
    response.destroy();
    return false;
  });
  await run(client);
  if (!response.headersSent)
    sendJson(response, apiError(502, 'E_CLIENT_PROTOCOL', 'no reply from petreld', EXIT.protocol));
  else if (!response.writableEnded) response.destroy();
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

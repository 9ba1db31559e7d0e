// The web layer's console subscriptions: ONE subscription to petreld per unikernel
// name however many HTTP clients follow it, fanned out here, so browser tabs and API clients
// never take petreld's subscriber slots (maxSubscribers) from `petrel console` followers.
//
// History: the one subscription asks petreld for all it keeps (count 1024, its ring's size) and
// its lines go into a ring here of the same size (src/console/ring.ts, only while followed). A
// follower's history (count or since) is read from that ring when it joins; every line after is
// live. Followers that arrive before petreld's reply wait until its history has come: the first
// line newer than the reply, or SETTLE_MS without a frame (the history is queued behind the
// reply, so it comes in one burst). A slow follower never holds the others back: one with more
// than `backlogBytes` unsent is closed (a `web.console-slow` warning) and may come back with
// `since`. The subscription ends when its last follower leaves.

import type { ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { type ConsoleLine, RING_SIZE, Ring } from '../console/ring.js';
import { decodeWire } from '../wire/index.js';
import type { Command, ConsoleSelect, Payload } from '../wire/types.js';
import { type Answer, answered, apiError, EXIT } from './api.js';
import { RequestChannel } from './channel.js';
import { SECURITY_HEADERS, sendJson } from './respond.js';
import { type Run, SSE_HEADERS, SSE_OPENED, sseEvent } from './streams.js';

/** Quiet after petreld's reply that ends its history for the followers waiting on it. */
const SETTLE_MS = 100;
/** Bytes a follower may leave unsent before it is closed as too slow. */
export const FOLLOWER_BACKLOG_BYTES = 1024 * 1024;

/** The subscription the web layer asks petreld for: the whole history it keeps, then live. */
export const FEED_COMMAND: Command = {
  type: 'console-subscribe',
  release: '2.1',
  select: { kind: 'count', count: RING_SIZE },
};

interface Feed {
  readonly name: string;
  readonly ring: Ring;
  /** Followers receiving live lines. */
  readonly followers: Set<ServerResponse>;
  /** Followers whose history is not sent yet (petreld's reply or its history still to come). */
  readonly waiting: Map<ServerResponse, ConsoleSelect>;
  state: 'opening' | 'settling' | 'open' | 'ended';
  replyAt: number;
  settle: NodeJS.Timeout | undefined;
  /** Ends the subscription to petreld (the proxy's client has gone). */
  readonly stop: () => void;
}

export interface FeedCounts {
  /** Subscriptions to petreld held now. */
  readonly feeds: number;
  /** HTTP followers across them. */
  readonly followers: number;
}

export class ConsoleFeeds {
  readonly #feeds = new Map<string, Feed>();
  readonly #log: Logger;
  readonly #backlogBytes: number;

  constructor(log: Logger, backlogBytes = FOLLOWER_BACKLOG_BYTES) {
    this.#log = log;
    this.#backlogBytes = backlogBytes;
  }

  counts(): FeedCounts {
    let followers = 0;
    for (const feed of this.#feeds.values()) followers += feed.followers.size + feed.waiting.size;
    return { feeds: this.#feeds.size, followers };
  }

  /**
   * `response` follows the console of `name` (its full name) with `select` as its history;
   * `open` carries FEED_COMMAND to petreld when no subscription for the name is held yet (with
   * this follower's delegation). Resolves when the follower has gone.
   */
  follow(name: string, select: ConsoleSelect, response: ServerResponse, open: Run): Promise<void> {
    const gone = new Promise<void>((resolve) => response.once('close', resolve));
    let feed = this.#feeds.get(name);
    if (feed === undefined) feed = this.#open(name, open);
    if (feed.state === 'open') this.#begin(feed, response, select);
    else {
      feed.waiting.set(response, select);
      if (feed.state === 'settling') opened(response);
    }
    const joined = feed;
    response.once('close', () => this.#leave(joined, response));
    return gone;
  }

  #open(name: string, open: Run): Feed {
    let stop = () => {};
    const closed = new Promise<void>((resolve) => {
      stop = resolve;
    });
    const feed: Feed = {
      name,
      ring: new Ring(RING_SIZE),
      followers: new Set(),
      waiting: new Map(),
      state: 'opening',
      replyAt: 0,
      settle: undefined,
      stop,
    };
    this.#feeds.set(name, feed);
    this.#log.debug({ event: 'web.console-feed', unikernel: name, open: true }, 'console subscription');
    const channel = new RequestChannel(null, closed, async (bytes) => this.#frame(feed, bytes));
    open(channel)
      .catch(() => undefined)
      .then(() => this.#end(feed, 'the subscription ended'));
    return feed;
  }

  /** A frame of petreld's: never waits for any follower. */
  #frame(feed: Feed, bytes: Uint8Array): boolean {
    if (feed.state === 'ended') return false;
    const decoded = decodeWire(bytes);
    const p: Payload | null = decoded.ok ? decoded.value.payload : null;
    if (feed.state === 'opening') {
      if (p?.kind !== 'reply') {
        this.#refuse(feed, p);
        return false;
      }
      feed.state = 'settling';
      feed.replyAt = Date.now();
      for (const response of feed.waiting.keys()) opened(response);
      this.#armSettle(feed);
      return true;
    }
    if (p?.kind === 'data' && (p.data.type === 'console' || p.data.type === 'console-old')) {
      const entry: ConsoleLine = { timestamp: p.data.timestamp.getTime(), line: p.data.line };
      if (feed.state === 'settling') {
        if (entry.timestamp <= feed.replyAt) {
          feed.ring.push(entry);
          this.#armSettle(feed);
          return true;
        }
        // Printed after the reply: the history is over, and this is the first live line.
        this.#settled(feed);
      }
      feed.ring.push(entry);
      const text = lineEvent(entry);
      for (const response of feed.followers) this.#send(feed, response, text);
      return true;
    }
    if (p?.kind === 'failure' || p === null) {
      this.#end(feed, p === null ? 'petreld sent a frame that does not decode' : p.message);
      return false;
    }
    return true;
  }

  #armSettle(feed: Feed): void {
    clearTimeout(feed.settle);
    feed.settle = setTimeout(() => this.#settled(feed), SETTLE_MS);
    feed.settle.unref();
  }

  /** The history has come: the waiting followers get theirs from the ring, then live lines. */
  #settled(feed: Feed): void {
    clearTimeout(feed.settle);
    if (feed.state !== 'settling') return;
    feed.state = 'open';
    for (const [response, select] of [...feed.waiting]) this.#begin(feed, response, select);
  }

  #begin(feed: Feed, response: ServerResponse, select: ConsoleSelect): void {
    feed.waiting.delete(response);
    if (response.destroyed) return;
    if (!response.headersSent) opened(response);
    const history =
      select.kind === 'count' ? feed.ring.last(select.count) : feed.ring.since(select.since.getTime());
    if (history.length > 0) response.write(history.map(lineEvent).join(''));
    feed.followers.add(response);
  }

  #send(feed: Feed, response: ServerResponse, text: string): void {
    if (response.destroyed) return;
    if (response.writableLength > this.#backlogBytes) {
      this.#log.warn(
        { event: 'web.console-slow', unikernel: feed.name, unsent: response.writableLength },
        'console follower too slow: closed',
      );
      feed.followers.delete(response);
      response.destroy();
      return;
    }
    response.write(text);
  }

  /** petreld refused the subscription: every waiting follower gets the error. */
  #refuse(feed: Feed, p: Payload | null): void {
    const answer: Answer =
      p?.kind === 'failure'
        ? { kind: 'failure', message: p.message }
        : {
            kind: 'error',
            status: 502,
            code: 'E_CLIENT_PROTOCOL',
            message: 'petreld answered something else than a subscription',
            exit: EXIT.protocol,
          };
    const reply = answered(answer, 'a subscription');
    this.#forget(feed);
    for (const response of feed.waiting.keys()) if (!response.headersSent) sendJson(response, reply);
    feed.waiting.clear();
  }

  /** The subscription is over (petreld ended it, or the exchange broke): so are its followers'. */
  #end(feed: Feed, message: string): void {
    if (feed.state === 'ended') return;
    this.#forget(feed);
    const last = sseEvent('end', { message });
    for (const response of [...feed.followers, ...feed.waiting.keys()]) {
      if (response.destroyed || response.writableEnded) continue;
      if (!response.headersSent)
        sendJson(response, apiError(502, 'E_CLIENT_PROTOCOL', 'no reply from petreld', EXIT.protocol));
      else response.end(last);
    }
    feed.followers.clear();
    feed.waiting.clear();
  }

  #leave(feed: Feed, response: ServerResponse): void {
    feed.followers.delete(response);
    feed.waiting.delete(response);
    if (feed.followers.size === 0 && feed.waiting.size === 0) this.#forget(feed);
  }

  /** No longer held: the next follower of the name opens a subscription of its own. */
  #forget(feed: Feed): void {
    if (feed.state === 'ended') return;
    feed.state = 'ended';
    clearTimeout(feed.settle);
    if (this.#feeds.get(feed.name) === feed) this.#feeds.delete(feed.name);
    feed.stop();
    this.#log.debug({ event: 'web.console-feed', unikernel: feed.name, open: false }, 'console subscription');
  }
}

function opened(response: ServerResponse): void {
  if (response.headersSent || response.destroyed) return;
  response.writeHead(200, { ...SECURITY_HEADERS, ...SSE_HEADERS });
  response.write(SSE_OPENED);
}

const lineEvent = (entry: ConsoleLine): string =>
  sseEvent('line', {
    timestamp: new Date(entry.timestamp).toISOString(),
    line: Buffer.from(entry.line).toString('utf8'),
  });

// The three local sockets of petreld (petrel-differences.md (f)): vmmd.sock for the engine,
// console.sock and stat.sock, each speaking length-prefixed wire frames with Albatross'
// connection rules (albatross-semantics.md §2). Local clients and the TLS endpoint use them.

import { chmod, mkdir, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { ConsoleHub, Subscriber, SubscribeStatus } from '../console/hub.js';
import type { ConsoleLine } from '../console/ring.js';
import type { Engine, EngineResponse } from '../engine/engine.js';
import { TEXT } from '../engine/replies.js';
import type { Label, Name } from '../resources/name.js';
import { printName } from '../resources/name.js';
import type { StatsService } from '../stats/service.js';
import { consoleFrames } from '../wire/console-frames.js';
import { DEFAULT_MAX_FRAME, type FrameEvent, FrameReader, frameHeader } from '../wire/framing.js';
import { decodeWire, encodeWire, imageReplyHead } from '../wire/message.js';
import type { Command, Header, Payload, Wire } from '../wire/types.js';
import { SOCKET_NAMES } from './layout.js';
import { LocalAdmission } from './local-admission.js';

export { SOCKET_NAMES };

export interface SocketOptions {
  readonly runDir: string;
  readonly engine: Engine;
  readonly hub: ConsoleHub;
  readonly log: Logger;
  readonly stats?: StatsService;
  /** Largest frame accepted (petrel-differences.md (c)). */
  readonly maxFrameBytes?: number;
  /** Bounded queue of each console subscriber, in messages ((i)). */
  readonly maxSubscriberQueue?: number;
  /** Connections at once (default 8192); beyond, the longest idle gives way. */
  readonly maxConnections?: number;
  /** A connection without a complete request for this long is closed (default 60 s). */
  readonly idleTimeoutMs?: number;
  /** The longest pause inside a frame (default 30 s). */
  readonly frameStallMs?: number;
}

export type LocalService = keyof typeof SOCKET_NAMES;

export interface LocalSockets {
  readonly paths: { readonly engine: string; readonly console: string; readonly stats: string };
  /**
   * Serves a connection that did not come through the socket file (an in-memory pair from the
   * TLS endpoint petreld hosts) exactly as one that did.
   */
  attach(service: LocalService, connection: Duplex): void;
  close(): Promise<void>;
}

/** Encodes and writes one message frame; false when the socket wants to drain first. */
function send(socket: Duplex, wire: Wire): boolean {
  const bytes = encodeWire(wire);
  if (!bytes.ok) throw new Error(`encoding a reply failed: ${bytes.error.message}`);
  socket.write(frameHeader(bytes.value.length));
  return socket.write(bytes.value);
}

const answer = (header: Header, payload: Payload): Wire => ({ header, payload });

/** Resolves when the socket can take more, or has closed (then it never will). */
function drainedOrClosed(socket: Duplex): Promise<void> {
  if (socket.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      socket.off('drain', done);
      socket.off('close', done);
      resolve();
    };
    socket.on('drain', done);
    socket.on('close', done);
  });
}

function responsePayload(response: Extract<EngineResponse, { kind: 'reply' | 'failure' }>): Payload {
  return response.kind === 'reply'
    ? { kind: 'reply', reply: response.reply }
    : { kind: 'failure', message: response.message };
}

/** How long a connection may go on sending after its answer before it is closed (ms). */
const DISCARD_MS = 10_000;

/** Raw chunks follow these commands on vmmd.sock: block set [7], and a create without an image. */
function takesChunks(command: Command): boolean {
  return (
    command.type === 'block-set' || (command.type === 'unikernel-create' && command.config.image.length === 0)
  );
}

/**
 * Frames of a connection, pulled one at a time. Each chunk is read as the socket delivers it
 * (a frame that one chunk holds is a view of it, a length and a payload written apart too), the
 * socket is paused while frames wait to be taken (so a sender of raw chunks waits for the disk),
 * and a frame handed out is referenced from nowhere here: the frame of a create is freed once
 * the engine has stored its image.
 */
class FrameSource {
  readonly #socket: Duplex;
  readonly #reader: FrameReader;
  readonly #ready: (FrameEvent | { kind: 'error'; error: { message: string } })[] = [];
  #wake: (() => void) | null = null;
  #ended = false;
  #stall: NodeJS.Timeout | null = null;

  /** `stallMs`: a frame begun must not pause longer (a pause we make by not reading is ours). */
  constructor(socket: Duplex, maxFrame: number, stallMs: number) {
    this.#socket = socket;
    this.#reader = new FrameReader({ maxFrame });
    const stalled = () => {
      this.#stall = null;
      if (this.#ended) return;
      if (this.#ready.length > 0) {
        this.#stall = setTimeout(stalled, stallMs).unref();
        return;
      }
      this.#ready.push({
        kind: 'error',
        error: { message: `a frame began and then paused for ${stallMs} ms` },
      });
      this.#ended = true;
      this.#notify();
    };
    socket.on('data', (chunk: Buffer) => {
      if (this.#ended) return;
      const events = this.#reader.push(chunk);
      if (events.ok) this.#ready.push(...events.value);
      else {
        this.#ready.push({ kind: 'error', error: events.error });
        this.#ended = true;
      }
      if (this.#stall !== null) clearTimeout(this.#stall);
      this.#stall = this.#reader.pending > 0 && !this.#ended ? setTimeout(stalled, stallMs).unref() : null;
      if (this.#ready.length > 0) socket.pause();
      this.#notify();
    });
    const end = () => {
      if (this.#stall !== null) clearTimeout(this.#stall);
      this.#stall = null;
      this.#ended = true;
      this.#notify();
    };
    socket.once('end', end);
    socket.once('close', end);
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = null;
    wake?.();
  }

  async next(): Promise<FrameEvent | { kind: 'error'; error: { message: string } } | null> {
    for (;;) {
      const event = this.#ready.shift();
      if (event !== undefined) return event;
      if (this.#ended) return null;
      this.#socket.resume();
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
    }
  }
  /**
   * No more frames are taken: what still arrives (the rest of a stream a refusal cut short,
   * such as an image the disk has no room for) is read and dropped, so the sender can finish
   * writing and read the reply; a sender that never stops is cut off after DISCARD_MS.
   */
  discard(): void {
    this.#ended = true;
    this.#ready.length = 0;
    const socket = this.#socket;
    socket.once('data', () => setTimeout(() => socket.destroy(), DISCARD_MS).unref());
    socket.resume();
  }

  /** The raw chunks of a stream, up to its end frame. */
  async *chunks(): AsyncGenerator<Uint8Array> {
    for (;;) {
      const event = await this.next();
      if (event === null) throw new Error('connection closed inside a stream');
      if (event.kind === 'error') throw new Error(event.error.message);
      if (event.kind === 'end') return;
      yield event.payload;
    }
  }
}

export async function listenLocalSockets(options: SocketOptions): Promise<LocalSockets> {
  const dir = path.join(options.runDir, 'util');
  await mkdir(dir, { recursive: true, mode: 0o755 });
  const maxFrame = options.maxFrameBytes ?? DEFAULT_MAX_FRAME;
  const stallMs = options.frameStallMs ?? 30_000;
  const admission = new LocalAdmission({
    maxConnections: options.maxConnections ?? 8192,
    idleTimeoutMs: options.idleTimeoutMs ?? 60_000,
    log: options.log,
  });
  const paths = {
    engine: path.join(dir, SOCKET_NAMES.engine),
    console: path.join(dir, SOCKET_NAMES.console),
    stats: path.join(dir, SOCKET_NAMES.stats),
  };
  const { log } = options;

  /**
   * Reads the next command of a connection; null = closed or refused (already logged). Once
   * a complete request is in, the connection is no longer idle.
   */
  async function nextCommand(source: FrameSource, which: string, socket: Duplex): Promise<Wire | null> {
    const event = await source.next();
    if (event !== null && event.kind === 'frame') admission.busy(socket);
    if (event === null || event.kind === 'end') return null;
    if (event.kind === 'error') {
      log.warn({ socket: which, reason: event.error.message }, 'frame refused; connection closed');
      return null;
    }
    const wire = decodeWire(event.payload);
    if (!wire.ok) {
      log.warn({ socket: which, reason: wire.error.message }, 'undecodable message; connection closed');
      return null;
    }
    if (wire.value.payload.kind !== 'command') {
      log.warn({ socket: which, kind: wire.value.payload.kind }, 'not a command; connection closed');
      return null;
    }
    return wire.value;
  }

  /**
   * Hands one command to the engine, with the chunks that follow it. Synchronous, so that once
   * it returns nothing but the engine refers to the command (and the image it may carry).
   */
  const submit = (wire: Wire & { payload: { kind: 'command' } }, source: FrameSource) => {
    const { command } = wire.payload;
    return {
      header: wire.header,
      // Only a successful policy add keeps the connection for the next command (§2.2).
      policyAdd: command.type === 'policy-add',
      response: options.engine.execute({
        name: wire.header.name,
        command,
        ...(takesChunks(command) ? { input: source.chunks() } : {}),
      }),
    };
  };

  /** A get's reply: the head of the message, then the image as the engine reads it. */
  const sendImage = async (
    socket: Duplex,
    header: Header,
    response: Extract<EngineResponse, { kind: 'image' }>,
  ): Promise<void> => {
    const head = imageReplyHead(header, response.compressed, response.length);
    let sent = 0;
    try {
      if (!head.ok) throw new Error(head.error.message);
      socket.write(frameHeader(head.value.length + response.length));
      socket.write(head.value);
      for await (const piece of response.chunks) {
        sent += piece.length;
        if (sent > response.length || socket.destroyed) break;
        if (!socket.write(piece)) await drainedOrClosed(socket);
      }
    } finally {
      if (sent !== response.length && !socket.destroyed) {
        log.error(
          { name: printName(header.name), sent, length: response.length },
          'get: the image changed while sent',
        );
        socket.destroy();
      }
    }
  };

  const serveEngine = async (socket: Duplex) => {
    const source = new FrameSource(socket, maxFrame, stallMs);
    // The decoded command lives only inside this function, not across the engine's answer.
    const nextJob = async () => {
      const wire = await nextCommand(source, SOCKET_NAMES.engine, socket);
      if (wire === null || wire.payload.kind !== 'command') return null;
      return submit(wire as Wire & { payload: { kind: 'command' } }, source);
    };
    for (;;) {
      const job = await nextJob();
      if (job === null) break;
      const { header, policyAdd } = job;
      const response = await job.response;
      if (response.kind === 'image') {
        await sendImage(socket, header, response);
        break;
      }
      if (response.kind === 'stream') {
        send(socket, answer(header, { kind: 'reply', reply: response.reply }));
        try {
          for await (const data of response.data) {
            if (!send(socket, answer(header, { kind: 'data', data }))) {
              // A reader that goes away never drains: stop then, so the device is released.
              await drainedOrClosed(socket);
              if (socket.destroyed) break;
            }
          }
        } catch (cause) {
          log.warn({ name: printName(header.name), reason: String(cause) }, 'block dump failed');
          send(socket, answer(header, { kind: 'failure', message: TEXT.blockStreamFailed }));
        }
        break;
      }
      send(socket, answer(header, responsePayload(response)));
      if (!(policyAdd && response.kind === 'reply')) break;
      // After a policy add the connection waits for its command: idle again.
      admission.idle(socket);
    }
    source.discard();
    socket.end();
  };

  const serveConsole = async (socket: Duplex) => {
    const source = new FrameSource(socket, maxFrame, stallMs);
    const wire = await nextCommand(source, SOCKET_NAMES.console, socket);
    if (wire === null || wire.payload.kind !== 'command') return void socket.end();
    const { header } = wire;
    const { command } = wire.payload;
    const fail = (message: string) => {
      send(socket, answer(header, { kind: 'failure', message }));
      socket.end();
    };
    switch (command.type) {
      case 'console-add':
        return fail(TEXT.unexpectedCommand);
      case 'console-list-inactive': {
        if (header.name.label !== null) return fail(TEXT.nameUsed);
        send(
          socket,
          answer(header, {
            kind: 'reply',
            reply: { type: 'consoles', names: options.hub.listInactive(header.name.path) },
          }),
        );
        return void socket.end();
      }
      case 'console-subscribe': {
        if (header.name.label === null) return fail(TEXT.pathUsed);
        const name = header.name as Name & { label: Label };
        const subscriber = new SocketSubscriber(
          socket,
          header,
          command.release,
          options.maxSubscriberQueue ?? 1024,
          log,
        );
        const select = command.select;
        options.hub.subscribe(
          name,
          subscriber,
          select.kind === 'count' ? { count: select.count } : { since: select.since.getTime() },
        );
        // The client ends the subscription by sending anything or closing (§2.3). What was
        // queued for it before then still goes out (the whole history, for `petrel console
        // --no-follow`, which closes its side once it has the reply), then the connection ends.
        await source.next().catch(() => null);
        options.hub.unsubscribe(name, subscriber);
        return subscriber.finish();
      }
      default:
        log.warn({ command: command.type }, 'not a console command; connection closed');
        return void socket.end();
    }
  };

  const serveStats = async (socket: Duplex) => {
    const source = new FrameSource(socket, maxFrame, stallMs);
    for (;;) {
      const wire = await nextCommand(source, SOCKET_NAMES.stats, socket);
      if (wire === null || wire.payload.kind !== 'command') break;
      const { header } = wire;
      const { command } = wire.payload;
      // The statistics socket keeps reading commands after a subscribe (semantics §2.4); the
      // subscription lasts until the connection closes.
      if (command.type === 'stats-subscribe' && options.stats !== undefined) {
        options.stats.subscribe(header, socket, (w) => send(socket, w));
        continue;
      }
      const message =
        command.type === 'stats-initial'
          ? 'unexpected message initial'
          : command.type.startsWith('stats-')
            ? 'statistics are registered by petreld itself'
            : TEXT.unexpectedCommand;
      send(socket, answer(header, { kind: 'failure', message }));
      break;
    }
    socket.end();
  };

  const servers: Server[] = [];
  const handlers: Record<LocalService, (socket: Duplex) => Promise<void>> = {
    engine: serveEngine,
    console: serveConsole,
    stats: serveStats,
  };
  const accept = (service: LocalService, socket: Duplex): void => {
    socket.on('error', () => {});
    if (!admission.admit(socket)) return;
    socket.on('error', (e) =>
      log.debug({ socket: SOCKET_NAMES[service], reason: e.message }, 'client socket error'),
    );
    handlers[service](socket).catch((e: unknown) => {
      log.error({ socket: SOCKET_NAMES[service], reason: String(e) }, 'connection handler failed');
      socket.destroy();
    });
  };
  for (const service of Object.keys(handlers) as LocalService[]) {
    const file = paths[service];
    await rm(file, { force: true });
    // The console socket stays open for writing after the client's end (a half-close): that
    // end is how a client ends its subscription, and what was queued for it is still sent.
    const server = createServer({ allowHalfOpen: service === 'console' }, (socket) =>
      accept(service, socket),
    );
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(file, () => resolve());
    });
    await chmod(file, 0o660);
    servers.push(server);
  }

  return {
    paths,
    attach: accept,
    async close() {
      admission.close();
      const closed = servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve())));
      // Subscribers keep their connections open; closing the daemon must not wait for them.
      for (const socket of [...admission.open]) socket.destroy();
      await Promise.all(closed);
      await Promise.all(Object.values(paths).map((p) => rm(p, { force: true })));
    },
  };
}

/**
 * The frames of the last batch encoded, per subscribe form: every subscriber of a name is
 * offered the same lines array, so the batch is encoded once per form, not once per subscriber.
 */
const LAST_BATCH = {
  '2.0': { lines: null as readonly Uint8Array[] | null, name: '', timestamp: 0, frames: Buffer.alloc(0) },
  '2.1': { lines: null as readonly Uint8Array[] | null, name: '', timestamp: 0, frames: Buffer.alloc(0) },
};

/**
 * A console subscriber on a socket with a bounded queue (Petrel (i)): while the socket drains,
 * frames wait in the queue; when the queue is full the hub closes the subscriber. The queue is
 * counted in messages; a batch of lines is one buffer that counts as its lines.
 */
export class SocketSubscriber implements Subscriber {
  readonly #socket: Duplex;
  readonly #header: Header;
  readonly #release: '2.0' | '2.1';
  readonly #max: number;
  readonly #log: Logger;
  readonly #queue: { bytes: Uint8Array; count: number }[] = [];
  #queued = 0;
  #draining = false;
  #corked = false;
  #drained: (() => void)[] = [];
  /** Unsubscribed: end the connection once the queue is out. */
  #finishing = false;

  constructor(socket: Duplex, header: Header, release: '2.0' | '2.1', max: number, log: Logger) {
    this.#socket = socket;
    this.#header = header;
    this.#release = release;
    this.#max = max;
    this.#log = log;
  }

  get backlog(): number {
    return this.#queued;
  }

  onDrained(listener: () => void): void {
    this.#drained.push(listener);
  }

  begin(status: SubscribeStatus, history: readonly ConsoleLine[]): boolean {
    if (!this.#push(answer(this.#header, { kind: 'reply', reply: { type: 'string', text: status } })))
      return false;
    // Lines of one read share a time: one batch each.
    for (let start = 0; start < history.length; ) {
      const timestamp = (history[start] as ConsoleLine).timestamp;
      let end = start + 1;
      while (end < history.length && (history[end] as ConsoleLine).timestamp === timestamp) end++;
      const lines = history.slice(start, end).map((entry) => entry.line);
      const framed = consoleFrames(this.#release, this.#header.name, timestamp, lines);
      if (!framed.ok || !this.#send(framed.value, lines.length)) return false;
      start = end;
    }
    return true;
  }

  offer(name: Name, entry: ConsoleLine): boolean {
    const framed = consoleFrames(this.#release, name, entry.timestamp, [entry.line]);
    return framed.ok && this.#send(framed.value, 1);
  }

  offerLines(name: Name, lines: readonly Uint8Array[], timestamp: number): boolean {
    if (lines.length === 0) return true;
    const last = LAST_BATCH[this.#release];
    const printed = printName(name);
    if (last.lines !== lines || last.timestamp !== timestamp || last.name !== printed) {
      const framed = consoleFrames(this.#release, name, timestamp, lines);
      if (!framed.ok) return false;
      Object.assign(last, { lines, name: printed, timestamp, frames: framed.value });
    }
    return this.#send(last.frames, lines.length);
  }

  /** After the unsubscribe: sends what is still queued, then ends the connection. */
  finish(): void {
    this.#finishing = true;
    if (!this.#draining) this.#socket.end();
  }

  close(reason: string): void {
    this.#log.warn({ name: printName(this.#header.name), reason }, 'console subscriber closed');
    this.#socket.destroy();
  }

  #push(wire: Wire): boolean {
    const bytes = encodeWire(wire);
    if (!bytes.ok) return false;
    return this.#send(Buffer.concat([frameHeader(bytes.value.length), bytes.value]), 1);
  }

  /** Sends or queues `framed`, which holds `count` messages. */
  #send(framed: Uint8Array, count: number): boolean {
    if (this.#draining) {
      if (this.#queued + count > this.#max) return false;
      this.#queue.push({ bytes: framed, count });
      this.#queued += count;
      return true;
    }
    // Lines arrive in bursts: gather this tick's frames into one writev instead of a write each.
    if (!this.#corked) {
      this.#corked = true;
      this.#socket.cork();
      process.nextTick(() => {
        this.#corked = false;
        this.#socket.uncork();
      });
    }
    if (!this.#socket.write(framed)) {
      this.#draining = true;
      this.#socket.once('drain', () => this.#flush());
    }
    return true;
  }

  #flush(): void {
    this.#draining = false;
    while (this.#queue.length > 0) {
      const next = this.#queue.shift() as { bytes: Uint8Array; count: number };
      this.#queued -= next.count;
      if (!this.#socket.write(next.bytes)) {
        this.#draining = true;
        this.#socket.once('drain', () => this.#flush());
        return;
      }
    }
    for (const listener of this.#drained.splice(0)) listener();
    if (this.#finishing) this.#socket.end();
  }
}

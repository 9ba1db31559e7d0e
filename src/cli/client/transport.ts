// The `petrel` client's local transport: the Transport of src/wire/exchange.ts over petreld's
// unix sockets (semantics §2.1: the command picks the socket).

import { connect, type Socket } from 'node:net';
import type { Result } from '../../resources/errors.js';
import { SocketChannel } from '../../tls/channel.js';
import type {
  Answer,
  StreamEvent,
  Transport,
  TransportError,
  TransportErrorCode,
} from '../../wire/exchange.js';
import { DEFAULT_MAX_FRAME, END_OF_STREAM, frame } from '../../wire/framing.js';
import { decodeWire, encodeWire } from '../../wire/message.js';
import type { Command, Name } from '../../wire/types.js';
import { WIRE_VERSION } from '../../wire/types.js';

export type {
  Answer,
  Stream,
  StreamEvent,
  Transport,
  TransportError,
  TransportErrorCode,
} from '../../wire/exchange.js';

export interface LocalSockets {
  readonly engine: string;
  readonly console: string;
  readonly stats: string;
}

const transportError = (code: TransportErrorCode, message: string): { ok: false; error: TransportError } => ({
  ok: false,
  error: { code, message },
});

/** The socket that handles a command (semantics §2.1). */
export function socketFor(command: Command, sockets: LocalSockets): string {
  if (command.type.startsWith('console-')) return sockets.console;
  if (command.type.startsWith('stats-')) return sockets.stats;
  return sockets.engine;
}

const REASONS: Readonly<Record<string, string>> = {
  ENOENT: 'no such socket',
  ECONNREFUSED: 'connection refused (a stale socket: is petreld running?)',
  EACCES: 'permission denied (the sockets are group-accessible: are you in petreld’s group?)',
  ENOTSOCK: 'not a socket',
};

function openSocket(path: string): Promise<Result<Socket, TransportError>> {
  return new Promise((resolve) => {
    const socket = connect(path);
    const failed = (e: NodeJS.ErrnoException) => {
      const reason = REASONS[e.code ?? ''] ?? e.message;
      resolve(
        transportError(
          'E_CLIENT_CONNECT',
          `cannot connect to ${path}: ${reason}; give petreld's run directory with --run-dir DIR, or a socket with --socket PATH`,
        ),
      );
    };
    socket.once('error', failed);
    socket.once('connect', () => {
      socket.off('error', failed);
      resolve({ ok: true, value: socket });
    });
  });
}

function commandBytes(name: Name, command: Command): Result<Uint8Array, TransportError> {
  const bytes = encodeWire({
    header: { version: WIRE_VERSION, sequence: 0n, name },
    payload: { kind: 'command', command },
  });
  if (!bytes.ok)
    return transportError('E_CLIENT_UNSUPPORTED', `cannot encode the command: ${bytes.error.message}`);
  return { ok: true, value: frame(bytes.value) };
}

/** The next message of the exchange as a wire value, or why there is none. */
async function nextMessage(channel: SocketChannel) {
  const event = await channel.next();
  if (event.kind === 'closed') return { kind: 'closed' } as const;
  if (event.kind === 'refused') return { kind: 'broken', error: event.error.message } as const;
  if (event.kind === 'end') return { kind: 'broken', error: 'petreld sent an end-of-stream frame' } as const;
  const wire = decodeWire(event.payload);
  if (!wire.ok)
    return { kind: 'broken', error: `undecodable message from petreld: ${wire.error.message}` } as const;
  return { kind: 'message', wire: wire.value } as const;
}

async function firstAnswer(channel: SocketChannel, path: string): Promise<Result<Answer, TransportError>> {
  const next = await nextMessage(channel);
  if (next.kind === 'closed') {
    return transportError('E_CLIENT_PROTOCOL', `${path} closed the connection without answering`);
  }
  if (next.kind === 'broken') return transportError('E_CLIENT_PROTOCOL', next.error);
  const { payload } = next.wire;
  if (payload.kind === 'reply') return { ok: true, value: { kind: 'reply', reply: payload.reply } };
  if (payload.kind === 'failure') return { ok: true, value: { kind: 'failure', message: payload.message } };
  return transportError('E_CLIENT_PROTOCOL', `petreld answered with ${payload.kind} instead of a reply`);
}

/**
 * Sends `input` as raw frames until it ends or the server answers (it may refuse before reading
 * the stream, and then stops reading: a write would never complete). True when all was sent.
 */
async function sendChunks(
  channel: SocketChannel,
  input: AsyncIterable<Uint8Array>,
  answered: Promise<unknown>,
): Promise<boolean> {
  const stop = answered.then(() => null);
  const pieces = input[Symbol.asyncIterator]();
  try {
    for (;;) {
      const next = await Promise.race([pieces.next(), stop]);
      if (next === null) {
        // Not awaited: a source such as a terminal may never produce its next piece.
        void pieces.return?.();
        return false;
      }
      if (next.done === true) break;
      if (next.value.length === 0) continue;
      if ((await Promise.race([channel.write(frame(next.value)), stop])) !== true) return false;
    }
  } catch (e) {
    void pieces.return?.();
    throw e;
  }
  return (await Promise.race([channel.write(END_OF_STREAM), stop])) === true;
}

/** After close(), how long the server gets to close its side before the socket is destroyed. */
const CLOSE_GRACE_MS = 2_000;

async function* streamEvents(channel: SocketChannel): AsyncGenerator<StreamEvent> {
  for (;;) {
    const next = await nextMessage(channel);
    if (next.kind === 'closed') return;
    if (next.kind === 'broken') {
      yield { kind: 'broken', error: { code: 'E_CLIENT_PROTOCOL', message: next.error } };
      return;
    }
    const { header, payload } = next.wire;
    if (payload.kind === 'data') yield { kind: 'data', name: header.name, data: payload.data };
    else if (payload.kind === 'failure') yield { kind: 'failure', message: payload.message };
    else {
      const message = `petreld sent ${payload.kind} in the middle of a stream`;
      yield { kind: 'broken', error: { code: 'E_CLIENT_PROTOCOL', message } };
      return;
    }
  }
}

/** The local transport: `sockets` as petreld lays them out, or one socket for everything (--socket). */
export function createLocalTransport(
  sockets: LocalSockets,
  options: { readonly maxFrame?: number } = {},
): Transport {
  const maxFrame = options.maxFrame ?? DEFAULT_MAX_FRAME;

  async function open(name: Name, command: Command) {
    const bytes = commandBytes(name, command);
    if (!bytes.ok) return bytes;
    const path = socketFor(command, sockets);
    const socket = await openSocket(path);
    if (!socket.ok) return socket;
    const channel = new SocketChannel(socket.value, maxFrame);
    if (!(await channel.write(bytes.value))) {
      channel.destroy();
      return transportError('E_CLIENT_PROTOCOL', `${path} closed the connection before the command was sent`);
    }
    return { ok: true as const, value: { channel, path } };
  }

  return {
    async request(name, command, input) {
      const opened = await open(name, command);
      if (!opened.ok) return opened;
      const { channel, path } = opened.value;
      let complete = true;
      try {
        const answer = firstAnswer(channel, path);
        if (input !== undefined) complete = await sendChunks(channel, input, answer);
        return await answer;
      } finally {
        // A policy add keeps the connection for another command: we have none, so say so. A
        // stream cut short may have unsent bytes that would hold the socket open: drop them.
        if (complete) channel.end();
        else channel.destroy();
      }
    },

    async stream(name, command) {
      const opened = await open(name, command);
      if (!opened.ok) return opened;
      const { channel, path } = opened.value;
      const answer = await firstAnswer(channel, path);
      if (!answer.ok) {
        channel.destroy();
        return answer;
      }
      let closing = false;
      return {
        ok: true,
        value: {
          answer: answer.value,
          events: streamEvents(channel),
          close() {
            if (closing) return;
            closing = true;
            channel.end();
            const timer = setTimeout(() => channel.destroy(), CLOSE_GRACE_MS);
            timer.unref();
            void channel.closed.then(() => clearTimeout(timer));
          },
        },
      };
    },
  };
}

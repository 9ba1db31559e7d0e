// The `petrel` client's local transport: the Transport of src/wire/exchange.ts over petreld's
// unix sockets (semantics §2.1: the command picks the socket).

import { connect, type Socket } from 'node:net';
import type { Result } from '../../resources/errors.js';
import { SocketChannel } from '../../tls/channel.js';
import { firstAnswer, openStream, sendChunks, streamEvents } from '../../tls/exchange.js';
import type { TransferMeter, Transport, TransportError, TransportErrorCode } from '../../wire/exchange.js';
import { DEFAULT_MAX_FRAME, frame } from '../../wire/framing.js';
import { encodeWire } from '../../wire/message.js';
import type { Command, Name } from '../../wire/types.js';
import { WIRE_VERSION } from '../../wire/types.js';

export type {
  Answer,
  Stream,
  StreamEvent,
  TransferMeter,
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

/**
 * A command frame goes out in slices of this size, so a meter sees a large create move; the
 * bytes on the socket are the same as one write's.
 */
const WRITE_SLICE = 256 * 1024;

async function writeInSlices(channel: SocketChannel, bytes: Uint8Array): Promise<boolean> {
  for (let at = 0; at < bytes.length; at += WRITE_SLICE) {
    if (!(await channel.write(bytes.subarray(at, at + WRITE_SLICE)))) return false;
  }
  return true;
}

const closedWithoutAnswer = (path: string): TransportError => ({
  code: 'E_CLIENT_PROTOCOL',
  message: `${path} closed the connection without answering`,
});

/**
 * The local transport: `sockets` as petreld lays them out, or one socket for everything
 * (--socket). `meter` hears of every byte each connection moves.
 */
export function createLocalTransport(
  sockets: LocalSockets,
  options: { readonly maxFrame?: number; readonly meter?: TransferMeter } = {},
): Transport {
  const maxFrame = options.maxFrame ?? DEFAULT_MAX_FRAME;

  async function open(name: Name, command: Command) {
    const bytes = commandBytes(name, command);
    if (!bytes.ok) return bytes;
    const path = socketFor(command, sockets);
    const socket = await openSocket(path);
    if (!socket.ok) return socket;
    const channel = new SocketChannel(socket.value, maxFrame, undefined, options.meter);
    if (!(await writeInSlices(channel, bytes.value))) {
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
        const answer = firstAnswer(channel, path, () => closedWithoutAnswer(path));
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
      const answer = await firstAnswer(channel, path, () => closedWithoutAnswer(path));
      if (!answer.ok) {
        channel.destroy();
        return answer;
      }
      return { ok: true, value: openStream(channel, answer.value, streamEvents(channel, 'petreld')) };
    },
  };
}

// A minimal local-socket client for tests: one command, then every frame the daemon sends
// until it closes (or until `until` says enough).

import { connect } from 'node:net';
import { unwrap } from '../../src/resources/errors.js';
import { parseName } from '../../src/resources/name.js';
import { FrameReader, frame } from '../../src/wire/framing.js';
import { decodeWire, encodeWire } from '../../src/wire/message.js';
import type { Command, ConsoleSelect, Wire } from '../../src/wire/types.js';

/** A console subscription as Albatross' 2.1 client asks for one: `select` is the history wanted. */
export function subscribeCommand(select: ConsoleSelect): Command {
  return { type: 'console-subscribe', release: '2.1', select };
}

export function commandFrame(name: string, command: Command, sequence = 1n): Uint8Array {
  return frame(
    unwrap(
      encodeWire({
        header: { version: 5, sequence, name: unwrap(parseName(name)) },
        payload: { kind: 'command', command },
      }),
    ),
  );
}

export interface Exchange {
  readonly messages: Wire[];
  /** Sends more bytes on the same connection. */
  write(bytes: Uint8Array): void;
  close(): void;
  /** Resolves when the daemon closed the connection. */
  readonly closed: Promise<void>;
  /** Resolves once `count` messages arrived. */
  waitFor(count: number, timeoutMs?: number): Promise<Wire[]>;
}

export function open(socketPath: string, first: Uint8Array): Exchange {
  const socket = connect(socketPath);
  const reader = new FrameReader();
  const messages: Wire[] = [];
  const waiters: (() => void)[] = [];
  socket.on('data', (chunk: Buffer) => {
    const events = reader.push(chunk);
    if (!events.ok) throw new Error(events.error.message);
    for (const event of events.value) {
      if (event.kind === 'frame') messages.push(unwrap(decodeWire(event.payload)));
    }
    for (const w of waiters.splice(0)) w();
  });
  socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.write(first);
  return {
    messages,
    write: (bytes) => socket.write(bytes),
    close: () => socket.end(),
    closed,
    async waitFor(count, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (messages.length < count) {
        if (Date.now() > deadline) throw new Error(`only ${messages.length} of ${count} messages arrived`);
        await Promise.race([
          new Promise<void>((r) => waiters.push(r)),
          closed,
          new Promise((r) => setTimeout(r, 50)),
        ]);
      }
      return messages;
    },
  };
}

/** Sends one command and collects every reply until the daemon closes the connection. */
export async function request(socketPath: string, name: string, command: Command): Promise<Wire[]> {
  const exchange = open(socketPath, commandFrame(name, command));
  await exchange.closed;
  return exchange.messages;
}

/** The text of a string reply or failure, for assertions. */
export function said(wire: Wire | undefined): string {
  if (wire === undefined) return '(nothing)';
  const p = wire.payload;
  if (p.kind === 'failure') return `Failure: ${p.message}`;
  if (p.kind === 'reply' && p.reply.type === 'string') return p.reply.text;
  return `${p.kind}${p.kind === 'reply' ? `:${p.reply.type}` : ''}`;
}

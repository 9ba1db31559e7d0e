// One client exchange over a framed connection, whatever carries it (petreld's unix sockets or
// mutual TLS): read the next message, the first answer, the stream that may follow, and send
// raw chunks after the command. The local and the remote transport are both built on it.

import type { Result } from '../resources/errors.js';
import type { Answer, Stream, StreamEvent, TransportError } from '../wire/exchange.js';
import { END_OF_STREAM, frame } from '../wire/framing.js';
import { decodeWire } from '../wire/message.js';
import type { Wire } from '../wire/types.js';
import type { Channel } from './channel.js';

type Next =
  | { readonly kind: 'closed' }
  | { readonly kind: 'broken'; readonly error: string }
  | { readonly kind: 'message'; readonly wire: Wire };

/** The next message from `peer` as a wire value, or why there is none. */
export async function nextMessage(channel: Channel, peer: string): Promise<Next> {
  const event = await channel.next();
  if (event.kind === 'closed') return { kind: 'closed' };
  if (event.kind === 'refused') return { kind: 'broken', error: event.error.message };
  if (event.kind === 'end') return { kind: 'broken', error: `${peer} sent an end-of-stream frame` };
  const wire = decodeWire(event.payload);
  if (!wire.ok) return { kind: 'broken', error: `undecodable message from ${peer}: ${wire.error.message}` };
  return { kind: 'message', wire: wire.value };
}

const broken = (message: string): { ok: false; error: TransportError } => ({
  ok: false,
  error: { code: 'E_CLIENT_PROTOCOL', message },
});

/** Success or Failure; `closedWithoutReply` says what it means when the peer just closes. */
export async function firstAnswer(
  channel: Channel,
  peer: string,
  closedWithoutReply: () => TransportError,
): Promise<Result<Answer, TransportError>> {
  const next = await nextMessage(channel, peer);
  if (next.kind === 'closed') return { ok: false, error: closedWithoutReply() };
  if (next.kind === 'broken') return broken(next.error);
  const { payload } = next.wire;
  if (payload.kind === 'reply') return { ok: true, value: { kind: 'reply', reply: payload.reply } };
  if (payload.kind === 'failure') return { ok: true, value: { kind: 'failure', message: payload.message } };
  return broken(`${peer} answered with ${payload.kind} instead of a reply`);
}

/**
 * Data until the peer closes. `endsQuietly` recognises a final Failure that only says the
 * subscription is over (the TLS endpoint sends one where petreld just closes).
 */
export async function* streamEvents(
  channel: Channel,
  peer: string,
  endsQuietly: (failure: string) => boolean = () => false,
): AsyncGenerator<StreamEvent> {
  for (;;) {
    const next = await nextMessage(channel, peer);
    if (next.kind === 'closed') return;
    if (next.kind === 'broken') {
      yield { kind: 'broken', error: { code: 'E_CLIENT_PROTOCOL', message: next.error } };
      return;
    }
    const { header, payload } = next.wire;
    if (payload.kind === 'data') yield { kind: 'data', name: header.name, data: payload.data };
    else if (payload.kind === 'failure') {
      if (endsQuietly(payload.message)) return;
      yield { kind: 'failure', message: payload.message };
    } else {
      const message = `${peer} sent ${payload.kind} in the middle of a stream`;
      yield { kind: 'broken', error: { code: 'E_CLIENT_PROTOCOL', message } };
      return;
    }
  }
}

/**
 * Sends `input` as raw frames, then the zero frame, until it ends or the peer answers (it may
 * refuse before reading the stream, and then stops reading: a write would never complete).
 * True when everything was sent.
 */
export async function sendChunks(
  channel: Channel,
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

/** After close(), how long the peer gets to close its side before the connection is destroyed. */
const CLOSE_GRACE_MS = 2_000;

/**
 * The stream after `answer`; close() ends it from our side (unsubscribing) and gives the peer
 * CLOSE_GRACE_MS to close; finish() unsubscribes by sending something (§2.3: anything ends a
 * subscription; the zero frame is the smallest), the connection kept open both ways, so what
 * the peer queued before still comes however many hops carry it, and waits for its close.
 */
export function openStream(channel: Channel, answer: Answer, events: AsyncIterable<StreamEvent>): Stream {
  let ended = false;
  let finished = false;
  let timed = false;
  const end = () => {
    if (ended) return;
    ended = true;
    channel.end();
  };
  return {
    answer,
    events,
    finish() {
      if (finished || ended) return;
      finished = true;
      void channel.write(END_OF_STREAM);
    },
    close() {
      end();
      if (timed) return;
      timed = true;
      const timer = setTimeout(() => channel.destroy(), CLOSE_GRACE_MS);
      timer.unref();
      void channel.closed.then(() => clearTimeout(timer));
    },
  };
}

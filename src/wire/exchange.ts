// What a client exchange with petreld looks like, whatever carries it (the local sockets in
// src/cli/client/transport.ts, mutual TLS in src/tls/client.ts): pure types, shared by both.

import type { PetrelError, Result } from '../resources/errors.js';
import type { Command, Data, Name, Reply } from './types.js';

/**
 * Why an exchange did not produce an answer; each code is one exit status of `petrel`
 * (src/cli/client/shell.ts). A remote transport reports TLS trouble with the same codes.
 */
export type TransportErrorCode =
  /** Nothing listens where we looked (socket missing, refused, not permitted; host unreachable). */
  | 'E_CLIENT_CONNECT'
  /** Connected, but the exchange broke: closed without a reply, an undecodable or unexpected frame. */
  | 'E_CLIENT_PROTOCOL'
  /** TLS: the server refused our certificate, or we refused the server's. */
  | 'E_CLIENT_AUTH'
  /** This petrel cannot do what was asked (remote mode without a TLS client). */
  | 'E_CLIENT_UNSUPPORTED';

export type TransportError = PetrelError<TransportErrorCode>;

/** The first answer to a command: Success or Failure (wire §4.9). */
export type Answer =
  | { readonly kind: 'reply'; readonly reply: Reply }
  | { readonly kind: 'failure'; readonly message: string };

/** What follows the first answer in the Read and Dump modes, until the server closes. */
export type StreamEvent =
  /** `name` is the header's: the full name for console lines, relative to the subscription for stats. */
  | { readonly kind: 'data'; readonly name: Name; readonly data: Data }
  /** A Failure after data (a block dump that broke in the middle). */
  | { readonly kind: 'failure'; readonly message: string }
  /** The connection broke or carried something that is not data; nothing follows. */
  | { readonly kind: 'broken'; readonly error: TransportError };

export interface Stream {
  readonly answer: Answer;
  /** Ends when the server closes the connection (after close(), soon). */
  readonly events: AsyncIterable<StreamEvent>;
  /** Ends the exchange from our side: unsubscribes a console or statistics subscriber. */
  close(): void;
  /**
   * Unsubscribes by sending a zero frame, and keeps reading: what petreld queued before (a
   * console's history) still arrives, then `events` ends. No grace timer.
   */
  finish(): void;
}

/**
 * Hears of the bytes a connection moves as they move, whatever the exchange (the client shows
 * progress with it). Counts are of the bytes on the connection: frames with their length prefix.
 */
export interface TransferMeter {
  /** `bytes` more were handed to the connection (the write completed). */
  sent(bytes: number): void;
  /** `bytes` more arrived from it. */
  received(bytes: number): void;
}

export interface Transport {
  /**
   * Single mode: one command, one answer. `input` chunks are streamed after the command as raw
   * frames ended by a zero-length frame (block set [7]); sending stops early if the server
   * answers before the stream is complete.
   */
  request(
    name: Name,
    command: Command,
    input?: AsyncIterable<Uint8Array>,
  ): Promise<Result<Answer, TransportError>>;
  /** Read and Dump modes (console and stats subscribe, block dump): the answer, then events. */
  stream(name: Name, command: Command): Promise<Result<Stream, TransportError>>;
}

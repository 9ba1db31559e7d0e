// The first steps of every TLS listener of petreld (the mutual-TLS endpoint, the web API): a
// TCP connection admitted by the gate, its first record (the ClientHello) read here before any
// TLS state exists, then a metered stream for TLS to run over that reports every byte read.

import type { Socket } from 'node:net';
import type { Gate, Ticket } from './gate.js';
import { MeteredStream } from './metered.js';

/** TLS content type 22: every ClientHello arrives in one. */
const HANDSHAKE_RECORD = 22;
/** A record's header and the largest plaintext record (RFC 8446 §5.1) with room for padding. */
const MAX_RECORD = 5 + 16384 + 256;

export interface TlsAcceptHooks {
  /** The first record is in: TLS starts over `stream`; `ticket` is settled by the listener. */
  readonly ready: (stream: MeteredStream, ticket: Ticket) => void;
  /** Every read after the first record, with the socket's bytes read so far. */
  readonly read?: (bytesRead: number) => void;
}

/**
 * Admits `raw` and reads its first record. An idle or stalled socket costs a descriptor and a
 * buffer; one that does not begin with a TLS handshake record is destroyed (`not-tls`). The
 * ticket is settled when the socket closes, whatever happened before. Null: refused by the gate
 * (the socket is destroyed).
 */
export function acceptTls(raw: Socket, gate: Gate, hooks: TlsAcceptHooks): Ticket | null {
  let stream: MeteredStream | null = null;
  const ticket = gate.admit(raw.remoteAddress, {
    evict: () => raw.destroy(),
    hold: () => stream?.hold(),
    resume: () => stream?.release(),
  });
  if (ticket === null) {
    raw.destroy();
    return null;
  }
  raw.once('close', () => ticket.settle());
  const first: Buffer[] = [];
  let have = 0;
  let need = -1;
  const onData = (chunk: Buffer): void => {
    first.push(chunk);
    have += chunk.length;
    if (need < 0 && have >= 5) {
      const head = first.length === 1 ? chunk : Buffer.concat(first);
      need = head[0] === HANDSHAKE_RECORD ? 5 + head.readUInt16BE(3) : 0;
      if (need === 0 || need > MAX_RECORD) {
        gate.refused('not-tls', raw.remoteAddress);
        raw.destroy();
        return;
      }
    }
    const done = need > 0 && have >= need;
    ticket.read(raw.bytesRead, done);
    if (!done || raw.destroyed) return;
    raw.off('data', onData);
    raw.pause();
    stream = new MeteredStream(raw, first, () => {
      ticket.read(raw.bytesRead, true);
      hooks.read?.(raw.bytesRead);
    });
    hooks.ready(stream, ticket);
  };
  raw.on('data', onData);
  return ticket;
}

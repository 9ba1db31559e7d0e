// Admission for an HTTP listener (metricsListen, and any to come): a connection is pending
// from accept until a complete request head has arrived, and again while a kept-alive
// connection waits for its next request, under the same gate as the TLS endpoint.

import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Gate, Ticket } from './gate.js';

/**
 * `tcpOf`: the TCP socket under the one the HTTP server is given, when that is a TLS socket
 * over a stream (the web API): its address is the peer's and its bytes are what was sent.
 */
export function admitHttp(server: Server, gate: Gate, tcpOf: (socket: Socket) => Socket = (s) => s): void {
  const tickets = new WeakMap<Socket, Ticket>();
  const pend = (socket: Socket): boolean => {
    // node:http parses in C++ and emits no 'data': the gate samples the bytes read instead.
    const tcp = tcpOf(socket);
    const base = tcp.bytesRead;
    const ticket = gate.admit(tcp.remoteAddress, {
      evict: () => socket.destroy(),
      sample: () => tcp.bytesRead - base,
    });
    if (ticket === null) {
      socket.destroy();
      return false;
    }
    tickets.set(socket, ticket);
    return true;
  };
  server.on('connection', (socket: Socket) => {
    if (!pend(socket)) return;
    socket.once('close', () => tickets.get(socket)?.settle());
  });
  server.on('request', (request, response) => {
    const socket = request.socket;
    tickets.get(socket)?.settle();
    tickets.delete(socket);
    response.once('finish', () => {
      if (!socket.destroyed && socket.writable) pend(socket);
    });
  });
}

// A connection to one of petreld's services as its local socket would carry it: the socket
// under `<run-dir>/util/`, or an in-memory stream petreld hands out when it hosts the listener.
// The mutual-TLS endpoint and the web API reach petreld only this way.

import { createConnection } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { type Channel, SocketChannel } from './channel.js';
import type { Service } from './proxy.js';
import type { SocketPaths } from './settings.js';

export interface ServiceLink {
  readonly sockets: SocketPaths;
  /** In-memory connections to petreld's handlers, or null when petreld is stopping. */
  readonly openService?: ((service: Service) => Duplex | null) | undefined;
  readonly maxFrameBytes: number;
  readonly log: Logger;
  /** The listener's log events are named `<listener>.daemon-unreachable` and so on. */
  readonly listener: string;
  /** Every stream opened is added here until it closes (the listener's close ends them). */
  readonly streams: Set<Duplex>;
}

/** A channel to `service`, or null when petreld cannot be reached (logged). */
export function connectService(link: ServiceLink, service: Service, remote: string): Promise<Channel | null> {
  const unreachable = `${link.listener}.daemon-unreachable`;
  if (link.openService !== undefined) {
    const stream = link.openService(service);
    if (stream === null) {
      link.log.warn({ event: unreachable, remote, service, reason: 'petreld is stopping' });
      return Promise.resolve(null);
    }
    link.streams.add(stream);
    stream.once('close', () => link.streams.delete(stream));
    return Promise.resolve(channel(link, stream, service, remote));
  }
  return new Promise((resolve) => {
    const socket = createConnection(link.sockets[service]);
    link.streams.add(socket);
    socket.once('close', () => link.streams.delete(socket));
    const failed = (e: Error): void => {
      link.log.warn({ event: unreachable, remote, service, reason: e.message });
      resolve(null);
    };
    socket.once('error', failed);
    socket.once('connect', () => {
      socket.off('error', failed);
      resolve(channel(link, socket, service, remote));
    });
  });
}

function channel(link: ServiceLink, stream: Duplex, service: Service, remote: string): Channel {
  return new SocketChannel(stream, link.maxFrameBytes, (error) => {
    link.log.warn({ event: `${link.listener}.daemon-frame-refused`, remote, service, reason: error.message });
  });
}

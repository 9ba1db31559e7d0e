// SocketChannel's read-ahead is bounded in bytes as well as in frames: a consumer slower than its
// peer (a TLS client taking a get's image slowly) makes it stop reading the socket once 2 MiB of
// frames wait, whatever their size, so petreld never holds a large part of an image for it.

import { connect, createServer, type Socket } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { SocketChannel } from '../../src/tls/channel.js';
import { frameHeader } from '../../src/wire/framing.js';

const sockets: Socket[] = [];
afterEach(() => {
  for (const s of sockets.splice(0)) s.destroy();
});

async function pair(): Promise<[Socket, Socket]> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const accepted = new Promise<Socket>((resolve) => server.once('connection', resolve));
  const client = connect(port, '127.0.0.1');
  const inner = await accepted;
  server.close();
  sockets.push(client, inner);
  return [client, inner];
}

it('stops reading once 2 MiB of 1 MiB frames wait, and reads on as they are taken', async () => {
  const [writer, reader] = await pair();
  const channel = new SocketChannel(reader, 64 * 1024 * 1024);
  const piece = Buffer.alloc(1024 * 1024, 7);
  const frames = 24;
  let written = 0;
  const sendAll = (async () => {
    for (let i = 0; i < frames; i++) {
      const more = writer.write(Buffer.concat([frameHeader(piece.length), piece]));
      written++;
      if (!more) await new Promise((resolve) => writer.once('drain', resolve));
    }
  })();
  // Nobody takes frames for a while: the channel must have stopped reading early, so the
  // writer is held back by the sockets' buffers instead of its 24 MiB landing in our memory.
  await new Promise((resolve) => setTimeout(resolve, 500));
  expect(reader.isPaused()).toBe(true);
  expect(written).toBeLessThan(frames);
  // Taking frames resumes the reading; every frame arrives whole and in order.
  for (let i = 0; i < frames; i++) {
    const event = await channel.next();
    expect(event.kind).toBe('frame');
    if (event.kind === 'frame') expect(event.payload.length).toBe(piece.length);
  }
  await sendAll;
});

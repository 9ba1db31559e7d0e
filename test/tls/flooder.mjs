// A connection flood for the admission tests and bench/flood, as its own process (its sockets
// and CPU are its own, and the test's descriptor limit is not touched): holds connections to
// HOST:PORT, each re-opened as soon as it is closed, until SIGTERM or the duration ends.
// argv[2] is JSON: { host, port, ms, shapes: [{ count, from: [addresses], bytes?: hex }] }:
// `count` connections spread over the `from` addresses, each sending `bytes` (if any) once
// connected and then nothing. Prints READY once every connection was opened once, and on exit
// one JSON line: opened, closedByPeer, still open at the end (all closed before exiting).

import { connect } from 'node:net';

const spec = JSON.parse(process.argv[2]);
const open = new Set();
let opened = 0;
let closedByPeer = 0;
let stopping = false;
let ready = 0;
const total = spec.shapes.reduce((n, s) => n + s.count, 0);

function hold(localAddress, bytes) {
  if (stopping) return;
  const socket = connect({ host: spec.host, port: spec.port, localAddress });
  opened++;
  open.add(socket);
  let connected = false;
  socket.on('connect', () => {
    connected = true;
    if (bytes !== null) socket.write(bytes);
    if (++ready === total) process.stdout.write('READY\n');
  });
  socket.on('data', () => {});
  socket.on('error', () => {});
  socket.on('close', () => {
    open.delete(socket);
    if (stopping) return;
    if (connected) closedByPeer++;
    // Re-opened at once, as the flood does; a refused connect is retried after a moment.
    if (connected) setImmediate(() => hold(localAddress, bytes));
    else setTimeout(() => hold(localAddress, bytes), 50);
  });
}

for (const shape of spec.shapes) {
  const bytes = shape.bytes === undefined ? null : Buffer.from(shape.bytes, 'hex');
  for (let i = 0; i < shape.count; i++) hold(shape.from[i % shape.from.length], bytes);
}

function stop() {
  if (stopping) return;
  stopping = true;
  const left = open.size;
  for (const socket of open) socket.destroy();
  process.stdout.write(`${JSON.stringify({ opened, closedByPeer, openAtEnd: left })}\n`);
  setTimeout(() => process.exit(0), 50);
}
process.on('SIGTERM', stop);
if (spec.ms !== undefined) setTimeout(stop, spec.ms);

// A console subscriber in its own process (so the test's readers do not share petreld's event
// loop): subscribes on console.sock, checks the flood lines arrive complete and in order, and
// prints one JSON summary when the daemon closes the connection or the last line arrived.
//   node reader.mjs SOCKET NAME EXPECTED [silent]
// `silent` subscribes and then does not read (a stuck client) until it gets SIGUSR2; then it reads
// what is left, so the summary tells whether petreld closed it (a paused socket sees no close).
// The test sends the signal once the other readers are done, so how long the flood takes to
// start on a loaded machine cannot turn the stuck client into a slow one.
import { connect } from 'node:net';

const dist = new URL('../../dist/src/', import.meta.url);
const { encodeWire, decodeWire } = await import(new URL('wire/message.js', dist).href);
const { frame, FrameReader } = await import(new URL('wire/framing.js', dist).href);
const { parseName } = await import(new URL('resources/name.js', dist).href);

const [socketPath, name, expectedText, mode] = process.argv.slice(2);
const expected = Number(expectedText);
const wire = encodeWire({
  header: { version: 5, sequence: 7n, name: parseName(name).value },
  payload: {
    kind: 'command',
    command: { type: 'console-subscribe', release: '2.1', select: { kind: 'count', count: 0 } },
  },
});
const socket = connect(socketPath);
socket.write(frame(wire.value));
// A silent reader cannot see the reply behind its paused socket: it says so once connected.
if (mode === 'silent')
  socket.once('connect', () => setTimeout(() => process.stdout.write('SUBSCRIBED\n'), 200));
const done = (summary) => {
  process.stdout.write(`${JSON.stringify(summary)}\n`);
  process.exit(0);
};
const reader = new FrameReader();
let status = null;
if (mode === 'silent') {
  socket.pause();
  // A paused socket does not keep the process alive: this timer does, until the signal.
  const alive = setInterval(() => undefined, 60_000);
  process.once('SIGUSR2', () => {
    clearInterval(alive);
    socket.resume();
  });
}
let next = 1;
let disorder = 0;
const marker = Buffer.from('petrel-canary flood ');
let frames = 0;
let bytes = 0;
socket.on('data', (chunk) => {
  bytes += chunk.length;
  const events = reader.push(chunk);
  for (const event of events.value) {
    if (event.kind !== 'frame') continue;
    // The reply and every 1000th frame are decoded in full; the line number of the others is
    // read straight from the bytes, so that this client keeps up with petreld.
    if (status === null || frames++ % 1000 === 0) {
      const message = decodeWire(event.payload).value;
      if (message.payload.kind === 'reply') {
        status = message.payload.reply.text;
        if (mode !== 'silent') process.stdout.write('SUBSCRIBED\n');
        continue;
      }
      if (message.payload.kind !== 'data') continue;
    }
    const payload = Buffer.from(event.payload.buffer, event.payload.byteOffset, event.payload.byteLength);
    const at = payload.lastIndexOf(marker);
    if (at < 0) continue;
    const number = Number(payload.subarray(at + marker.length).toString('latin1'));
    if (number !== next) disorder++;
    next = number + 1;
    if (next > expected) done({ status, received: next - 1, disorder, closed: false, bytes });
  }
});
socket.once('close', () => done({ status, received: next - 1, disorder, closed: true, bytes }));

// Framing: a stream of messages, raw chunks and end markers reads the same however it is cut;
// the size cap is enforced from the 4-byte prefix alone, before any payload memory is taken.

import { Readable } from 'node:stream';
import { describe, expect, test } from 'vitest';
import {
  chunkFrames,
  decodeWire,
  END_OF_STREAM,
  encodeWire,
  type FrameEvent,
  FrameReader,
  frame,
  frameHeader,
  readFrames,
  splitFrames,
} from '../../src/wire/index.js';
import { keptHere } from '../memory.js';
import { cmd, createWire, failed, hex, ok, reply, toHex, wire } from './helpers.js';

const messages = [
  wire(':foo', cmd({ type: 'unikernel-destroy' })),
  createWire(':hello', { image: new Uint8Array(300).fill(7) }),
  wire('user:', reply({ type: 'string', text: 'x'.repeat(200) })),
];
const image = Uint8Array.from({ length: 1000 }, (_, i) => i & 0xff);
/** Messages, a raw chunk stream of an image (ended by 00 00 00 00), a negative length, a message. */
const stream = Buffer.concat([
  ...messages.slice(0, 2).map((m) => frame(ok(encodeWire(m)))),
  ...chunkFrames(image, 333),
  frameHeader(-7),
  frame(ok(encodeWire(messages[2] as (typeof messages)[number]))),
]);

/** Frames as comparable plain values (payload hex, offsets). */
const plain = (events: FrameEvent[]) =>
  events.map((e) =>
    e.kind === 'end' ? { end: e.length, at: e.offset } : { hex: toHex(e.payload), at: e.offset },
  );

function readAll(chunks: Uint8Array[], maxFrame?: number): FrameEvent[] {
  const reader = new FrameReader(maxFrame === undefined ? {} : { maxFrame });
  const events: FrameEvent[] = [];
  for (const chunk of chunks) events.push(...ok(reader.push(chunk)));
  expect(reader.pending).toBe(0);
  return events;
}

describe('FrameReader', () => {
  const whole = plain(readAll([stream]));

  test('reads messages, chunks, and ends', () => {
    expect(whole.filter((e) => 'end' in e).map((e) => ('end' in e ? e.end : 0))).toEqual([0, -7]);
    expect(whole).toHaveLength(2 + 4 + 1 + 1 + 1);
    const first = readAll([stream])[0];
    expect(first?.kind === 'frame' && ok(decodeWire(first.payload))).toEqual(messages[0]);
  });

  test('a payload that arrives in one chunk is that chunk, even when its length came before it', () => {
    const payload = new Uint8Array(70_000).fill(9);
    for (const chunks of [[frame(payload)], [frameHeader(payload.length), payload]]) {
      const reader = new FrameReader();
      const events = chunks.flatMap((c) => ok(reader.push(c)));
      const [only] = events;
      expect(only?.kind === 'frame' && only.payload.buffer).toBe((chunks.at(-1) as Uint8Array).buffer);
      expect(reader.pending).toBe(0);
    }
    // The length alone is pending until the payload comes.
    const reader = new FrameReader();
    expect(ok(reader.push(frameHeader(10)))).toEqual([]);
    expect(reader.pending).toBe(4);
  });

  test('split at every byte boundary, the stream reads the same', () => {
    for (let cut = 0; cut <= stream.length; cut++) {
      expect(plain(readAll([stream.subarray(0, cut), stream.subarray(cut)]))).toEqual(whole);
    }
  });

  test('one byte at a time, and in every pair of cuts near frame edges, it reads the same', () => {
    expect(plain(readAll(Array.from(stream, (b) => Uint8Array.of(b))))).toEqual(whole);
    for (let a = 0; a < 40; a++) {
      for (let b = a; b < stream.length; b += 37) {
        expect(plain(readAll([stream.subarray(0, a), stream.subarray(a, b), stream.subarray(b)]))).toEqual(
          whole,
        );
      }
    }
  });

  test('random chunkings read the same', () => {
    let seed = 12345;
    const random = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed;
    };
    for (let round = 0; round < 200; round++) {
      const chunks: Uint8Array[] = [];
      for (let at = 0; at < stream.length; ) {
        const size = 1 + (random() % 64);
        chunks.push(stream.subarray(at, at + size));
        at += size;
      }
      expect(plain(readAll(chunks))).toEqual(whole);
    }
  });

  test('a frame inside one chunk is a view of it, not a copy', () => {
    const [event] = ok(new FrameReader().push(stream));
    expect(event?.kind === 'frame' && event.payload.buffer).toBe(stream.buffer);
  });

  test('the image of a create is a view into the frame (no per-byte copy)', () => {
    const big = frame(ok(encodeWire(messages[1] as (typeof messages)[number])));
    const [event] = ok(new FrameReader().push(big));
    if (event?.kind !== 'frame') throw new Error('no frame');
    const decoded = ok(decodeWire(event.payload));
    const command = decoded.payload.kind === 'command' ? decoded.payload.command : null;
    if (command?.type !== 'unikernel-create') throw new Error('not a create');
    expect(command.config.image.buffer).toBe(big.buffer);
  });

  test('a length above the cap fails from the prefix alone, and the reader stays failed', () => {
    const reader = new FrameReader({ maxFrame: 1024 });
    expect(ok(reader.push(frame(new Uint8Array(1024))))).toHaveLength(1);
    const error = failed(reader.push(frameHeader(1025)), 'E_WIRE_FRAME_TOO_LARGE');
    expect(error.message).toBe('frame length 1025 exceeds the limit of 1024 bytes at byte 1028');
    expect(error.details).toMatchObject({ length: 1025, limit: 1024, offset: 1028 });
    failed(reader.push(frame(new Uint8Array(1))), 'E_WIRE_FRAME_TOO_LARGE');
  });

  test('the default cap is 64 MiB; an announced 2 GiB frame is refused without allocating', () => {
    failed(new FrameReader().push(frameHeader(64 * 1024 * 1024 + 1)), 'E_WIRE_FRAME_TOO_LARGE');
    failed(new FrameReader().push(hex('7f ff ff ff')), 'E_WIRE_FRAME_TOO_LARGE');
    expect(ok(new FrameReader().push(frameHeader(64 * 1024 * 1024)))).toEqual([]);
  });

  test('memory held follows the bytes that arrived, not the length announced', async () => {
    // Sampled after collections (test/memory.ts): what the readers hold, not garbage.
    const before = await keptHere();
    const announced = 20 * 60 * 1024 * 1024;
    const readers = Array.from({ length: 20 }, () => new FrameReader());
    for (const reader of readers)
      ok(reader.push(Buffer.concat([frameHeader(60 * 1024 * 1024), new Uint8Array(10)])));
    const grown = (await keptHere()) - before;
    // 20 × 60 MiB announced, about 20 × 64 KiB held: well under a sixtieth of the announced.
    expect(grown, 'bytes the readers hold').toBeLessThan(announced / 60);
    expect(readers[0]?.pending).toBe(14);
  });
});

describe('splitFrames (files)', () => {
  test('a file cut inside a frame names the frame', () => {
    const cut = stream.subarray(0, stream.length - 3);
    const error = failed(splitFrames(cut), 'E_WIRE_FRAME_TRUNCATED');
    expect(error.details?.offset).toBe(
      stream.length - frame(ok(encodeWire(messages[2] as (typeof messages)[number]))).length,
    );
    failed(splitFrames(hex('00 00')), 'E_WIRE_FRAME_TRUNCATED');
  });

  test('END_OF_STREAM and chunkFrames', () => {
    expect(toHex(END_OF_STREAM)).toBe('00 00 00 00');
    expect(chunkFrames(new Uint8Array(0))).toEqual([END_OF_STREAM]);
    const events = ok(splitFrames(Buffer.concat(chunkFrames(image, 400))));
    expect(events.map((e) => (e.kind === 'frame' ? e.payload.length : e.length))).toEqual([400, 400, 200, 0]);
  });
});

test('readFrames over an async source', async () => {
  const source = Readable.from([stream.subarray(0, 10), stream.subarray(10, 500), stream.subarray(500)]);
  const events: FrameEvent[] = [];
  for await (const event of readFrames(source)) {
    if (event.kind === 'error') throw new Error(event.error.message);
    events.push(event);
  }
  expect(plain(events)).toEqual(plain(readAll([stream])));

  const refused = [];
  for await (const event of readFrames(Readable.from([frameHeader(100), new Uint8Array(100)]), {
    maxFrame: 10,
  })) {
    refused.push(event.kind);
  }
  expect(refused).toEqual(['error']);
});

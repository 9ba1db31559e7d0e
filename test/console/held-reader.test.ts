// The console reader over a held tender's bytes: lines cut across chunks, acknowledgements at
// line boundaries, a marker where offsets jump, and the resumption of a console taken over.
import { describe, expect, it } from 'vitest';
import {
  type ConsoleBytes,
  type ConsoleSource,
  droppedMarker,
  heldConsoleReader,
} from '../../src/console/reader.js';

/** A source driven by the test, as src/host/holder.ts would drive it from the holder's frames. */
function source() {
  let listener: (chunk: ConsoleBytes) => void = () => undefined;
  let end: () => void = () => undefined;
  const calls: string[] = [];
  const acks: number[] = [];
  const s: ConsoleSource = {
    onConsole: (l) => {
      listener = l;
    },
    pause: () => calls.push('pause'),
    resume: () => calls.push('resume'),
    ack: (offset) => acks.push(offset),
    exit: new Promise((resolve) => {
      end = () => resolve(undefined);
    }),
  };
  return {
    s,
    calls,
    acks,
    send: (offset: number, text: string, time = 1000) => listener({ offset, time, bytes: Buffer.from(text) }),
    end,
  };
}

function reader() {
  const lines: { text: string; time: number }[] = [];
  const r = heldConsoleReader((batch, time) => {
    for (const line of batch) lines.push({ text: line.toString(), time });
  });
  return { r, lines, texts: () => lines.map((l) => l.text) };
}

describe('held console reader', () => {
  it('cuts lines across chunks with the read time, and acknowledges each line boundary', () => {
    const { r, lines, texts } = reader();
    const src = source();
    r.bind(src.s);
    src.send(0, 'one\ntw', 5);
    src.send(6, 'o\nthree', 6);
    src.send(13, '\n', 7);
    expect(texts()).toEqual(['one', 'two', 'three']);
    expect(lines.map((l) => l.time)).toEqual([5, 6, 7]);
    expect(src.acks).toEqual([4, 8, 14]);
  });

  it('says how many bytes were lost where the offsets jump, counting the cut lines too', () => {
    const { r, texts } = reader();
    const src = source();
    r.bind(src.s);
    src.send(0, 'a\nhalf');
    // 100 bytes never arrived; the next chunk starts inside a line.
    src.send(106, 'rest\nb\n');
    // Lost: "half" (4), the 100 missing bytes, "rest\n" (5).
    expect(texts()).toEqual(['a', droppedMarker(109).toString(), 'b']);
    expect(src.acks.at(-1)).toBe(113);
  });

  it('resumes a console taken over: lines from the oldest kept byte, a marker only for bytes nobody handled', () => {
    const handled = reader();
    const a = source();
    // The holder kept bytes from 10; the earlier petreld had handled up to 20.
    handled.r.bind(a.s, { first: 10, acked: 20 });
    a.send(10, 'tail\nx\ny\n');
    expect(handled.texts()).toEqual(['x', 'y']);

    const lost = reader();
    const b = source();
    // The holder kept bytes from 50; the earlier petreld had handled up to 20: 30 bytes lost,
    // then the partial line "tail\n" that cannot be shown.
    lost.r.bind(b.s, { first: 50, acked: 20 });
    b.send(50, 'tail\nx\n');
    expect(lost.texts()).toEqual([droppedMarker(35).toString(), 'x']);

    const whole = reader();
    const c = source();
    whole.r.bind(c.s, { first: 0, acked: 0 });
    c.send(0, 'first\n');
    expect(whole.texts()).toEqual(['first']);
  });

  it('passes flow control to the source, also when paused before it was bound', () => {
    const { r } = reader();
    const src = source();
    r.pause();
    r.bind(src.s);
    r.resume();
    expect(src.calls).toEqual(['pause', 'resume']);
  });

  it('is done once the source ended, or when closed, and then delivers nothing more', async () => {
    const first = reader();
    const a = source();
    first.r.bind(a.s);
    a.send(0, 'x\n');
    a.end();
    await first.r.done;
    a.send(2, 'late\n');
    expect(first.texts()).toEqual(['x']);

    const second = reader();
    const b = source();
    second.r.bind(b.s);
    second.r.close();
    await second.r.done;
    b.send(0, 'y\n');
    expect(second.texts()).toEqual([]);
  });
});

import { describe, expect, it } from 'vitest';
import { LineSplitter, READ_SIZE } from '../../src/console/lines.js';

const text = (lines: Buffer[]) => lines.map((l) => l.toString('latin1'));

describe('console line cutting (semantics §11.1)', () => {
  it('splits on newlines, keeps the unterminated tail for the next read, drops empty lines', () => {
    const splitter = new LineSplitter();
    expect(text(splitter.push(Buffer.from('one\ntw')))).toEqual(['one']);
    expect(text(splitter.push(Buffer.from('o\n\n\nthree\n')))).toEqual(['two', 'three']);
  });

  it('keeps arbitrary bytes', () => {
    const splitter = new LineSplitter();
    const [line] = splitter.push(Buffer.from([0xff, 0x00, 0xc3, 0x0a]));
    expect([...(line as Buffer)]).toEqual([0xff, 0x00, 0xc3]);
  });

  it('cuts a line of READ_SIZE bytes or more once, marks it, and drops the rest up to the newline', () => {
    const splitter = new LineSplitter();
    const long = Buffer.alloc(3000, 'x');
    const lines = splitter.push(Buffer.concat([long, Buffer.from('\nnext\n')]));
    expect(text(lines)).toEqual([`${'x'.repeat(READ_SIZE)} [truncated]`, 'next']);
  });

  it('cuts a line that grows slowly across many small reads', () => {
    const splitter = new LineSplitter();
    const out: Buffer[] = [];
    for (let i = 0; i < 100; i++) out.push(...splitter.push(Buffer.alloc(10, 'y')));
    out.push(...splitter.push(Buffer.from('tail\nafter\n')));
    expect(text(out)).toEqual([`${'y'.repeat(READ_SIZE)} [truncated]`, 'after']);
  });

  it('cuts a 1 MiB line without newline exactly once', () => {
    const splitter = new LineSplitter();
    const out: Buffer[] = [];
    for (let i = 0; i < 16; i++) out.push(...splitter.push(Buffer.alloc(65536, 'z')));
    expect(out).toHaveLength(1);
    expect(splitter.push(Buffer.from('\nok\n')).map(String)).toEqual(['ok']);
  });

  it('gives the same lines whatever the chunk boundaries', () => {
    const input = Buffer.from(`a\nbb\n${'c'.repeat(700)}\nddd\n\neee`);
    const whole = text(new LineSplitter().push(input));
    for (const size of [1, 7, 511, 512, 513]) {
      const splitter = new LineSplitter();
      const out: Buffer[] = [];
      for (let i = 0; i < input.length; i += size) out.push(...splitter.push(input.subarray(i, i + size)));
      expect(text(out).filter((l) => !l.startsWith('c'))).toEqual(whole.filter((l) => !l.startsWith('c')));
    }
  });
});

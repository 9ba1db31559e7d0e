// The incremental multipart/form-data reader (src/web/multipart.ts): the same parts whatever the
// body is cut into (every cut of a small body, one byte at a time, a large file in odd pieces),
// a file part handed on as it comes (never more than a delimiter's length held back), and
// malformed bodies refused with what is wrong.

import { describe, expect, it } from 'vitest';
import { boundaryOf, MultipartError, MultipartReader, type PartEvent } from '../../src/web/multipart.js';

const B = 'xYz--boundary';

function body(
  parts: readonly { name: string; filename?: string; data: Buffer | string }[],
  close = true,
): Buffer {
  const out: Buffer[] = [Buffer.from('a preamble, ignored\r\n')];
  for (const p of parts) {
    const file = p.filename === undefined ? '' : `; filename="${p.filename}"`;
    out.push(Buffer.from(`--${B}\r\nContent-Disposition: form-data; name="${p.name}"${file}\r\n\r\n`));
    out.push(Buffer.isBuffer(p.data) ? p.data : Buffer.from(p.data));
    out.push(Buffer.from('\r\n'));
  }
  if (close) out.push(Buffer.from(`--${B}--\r\nan epilogue, ignored`));
  return Buffer.concat(out);
}

/** Parts as [name, filename, content], read from `pieces`. */
function read(pieces: readonly Buffer[]): [string, string | null, string][] {
  const reader = new MultipartReader(B);
  const events: PartEvent[] = [];
  for (const piece of pieces) events.push(...reader.push(piece));
  reader.end();
  const parts: [string, string | null, Buffer[]][] = [];
  for (const e of events) {
    if (e.kind === 'part') parts.push([e.name, e.filename, []]);
    if (e.kind === 'data') parts[parts.length - 1]?.[2].push(Buffer.from(e.bytes));
  }
  expect(events.at(-1)).toEqual({ kind: 'done' });
  return parts.map(([n, f, d]) => [n, f, Buffer.concat(d).toString('latin1')]);
}

const cuts = (whole: Buffer, at: readonly number[]): Buffer[] => {
  const out: Buffer[] = [];
  let from = 0;
  for (const to of [...at, whole.length]) {
    out.push(whole.subarray(from, to));
    from = to;
  }
  return out;
};

describe('multipart/form-data, read incrementally', () => {
  const sample = body([
    { name: 'mem', data: '16' },
    { name: 'arg', data: 'a\r\n--xYz-- not the boundary' },
    { name: 'arg', data: '' },
    { name: 'image', filename: 'web.hvt', data: Buffer.from('\x7fELF\r\n\r\n--xYz--boundar', 'latin1') },
  ]);
  const expected = [
    ['mem', null, '16'],
    ['arg', null, 'a\r\n--xYz-- not the boundary'],
    ['arg', null, ''],
    ['image', 'web.hvt', '\x7fELF\r\n\r\n--xYz--boundar'],
  ];

  it('reads the same parts wherever the body is cut', () => {
    expect(read([sample])).toEqual(expected);
    for (let at = 1; at < sample.length; at++) expect(read(cuts(sample, [at]))).toEqual(expected);
    expect(read([...sample].map((b) => Buffer.from([b])))).toEqual(expected);
  });

  it('hands a file part on as it arrives, holding back at most a delimiter', () => {
    const file = Buffer.alloc(3 * 1024 * 1024);
    for (let i = 0; i < file.length; i++) file[i] = (i * 31) & 0xff;
    const whole = body([{ name: 'image', filename: 'big', data: file }]);
    const reader = new MultipartReader(B);
    let passed = 0;
    let fed = 0;
    const head = whole.indexOf('\r\n\r\n') + 4;
    for (let at = 0; at < whole.length; at += 65_537) {
      const piece = whole.subarray(at, at + 65_537);
      fed += piece.length;
      for (const e of reader.push(piece)) if (e.kind === 'data') passed += e.bytes.length;
      if (fed < head + file.length) expect(fed - head - passed).toBeLessThanOrEqual(B.length + 4);
    }
    reader.end();
    expect(passed).toBe(file.length);
  });

  it('refuses what is not a multipart body, saying why', () => {
    const fails = (pieces: Buffer[], message: RegExp) => {
      expect(() => read(pieces)).toThrow(MultipartError);
      expect(() => read(pieces)).toThrow(message);
    };
    fails([body([{ name: 'image', data: 'abc' }], false)], /truncated/);
    fails([sample.subarray(0, sample.length - 40)], /truncated/);
    fails([Buffer.from(`--${B}\r\nContent-Type: text/plain\r\n\r\nx\r\n--${B}--`)], /no Content-Disposition/);
    fails(
      [Buffer.from(`--${B}\r\nContent-Disposition: attachment; name="a"\r\n\r\nx\r\n--${B}--`)],
      /not form-data/,
    );
    fails([Buffer.from(`--${B}\r\nContent-Disposition: form-data\r\n\r\nx\r\n--${B}--`)], /no name/);
    fails(
      [Buffer.from(`--${B}\r\nContent-Disposition: form-data; name="a"\r\n${'X: y\r\n'.repeat(2000)}\r\nx`)],
      /headers exceed/,
    );
    fails([Buffer.alloc(100_000, 0x41)], /no multipart boundary within/);
    fails([Buffer.from(`--${B}xx`)], /neither CRLF nor/);
  });

  it('takes the boundary from the Content-Type, quoted or not', () => {
    expect(boundaryOf(`multipart/form-data; boundary=${B}`)).toBe(B);
    expect(boundaryOf('multipart/form-data; charset=utf-8; boundary="a b;c"')).toBe('a b;c');
    expect(String(boundaryOf('multipart/form-data'))).toMatch(/no boundary parameter/);
    expect(String(boundaryOf('multipart/mixed; boundary=x'))).toMatch(/multipart\/form-data, not/);
    expect(String(boundaryOf(`multipart/form-data; boundary=${'a'.repeat(71)}`))).toMatch(/1 to 70/);
  });
});

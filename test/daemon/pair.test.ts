// The in-memory connection petreld serves its own TLS endpoint through behaves like a unix
// socket's two ends: data both ways, end and destroy seen by the other end, writes to a closed
// end fail, and a writer is held back while its reader does not read.
import { once } from 'node:events';
import type { Duplex } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { duplexPair } from '../../src/daemon/pair.js';

const collect = (end: Duplex): Promise<string> =>
  new Promise((resolve, reject) => {
    let text = '';
    end.on('data', (chunk: Buffer) => {
      text += chunk.toString();
    });
    end.once('end', () => resolve(text));
    end.once('error', reject);
  });

describe('an in-memory connection', () => {
  it('carries bytes both ways; ending one end ends the other, and both close', async () => {
    const [a, b] = duplexPair();
    const closed = Promise.all([once(a, 'close'), once(b, 'close')]);
    const atB = collect(b);
    const atA = collect(a);
    a.write('hello ');
    b.write('back');
    a.end('there');
    expect(await atB).toBe('hello there');
    // As a socket without half-open: the end that read the end of its input ends too.
    expect(await atA).toBe('back');
    await closed;
  });

  it('destroying one end: the other reads what was sent, then the end of its input', async () => {
    const [a, b] = duplexPair();
    const closed = once(b, 'close');
    const atB = collect(b);
    a.write('last words');
    a.destroy();
    expect(await atB).toBe('last words');
    await closed;
  });

  it('a write to an end that is gone fails with EPIPE', async () => {
    const [a, b] = duplexPair();
    b.destroy();
    a.on('error', () => undefined);
    const failed = await new Promise<Error | null | undefined>((resolve) => a.write('to nobody', resolve));
    expect(failed).toMatchObject({ code: 'EPIPE' });
  });

  it('holds a write back until the reader reads; a reader that goes away fails it', async () => {
    const [a, b] = duplexPair();
    const chunk = Buffer.alloc(64 * 1024, 1);
    const written: (Error | null | undefined)[] = [];
    expect(a.write(chunk, (e) => written.push(e))).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(written).toEqual([]); // b's reader has not read: the write waits
    b.read();
    await new Promise((resolve) => setImmediate(resolve));
    expect(written).toEqual([null]);
    const [c, d] = duplexPair();
    const held: (Error | null | undefined)[] = [];
    c.on('error', () => undefined);
    c.write(chunk, (e) => held.push(e));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(held).toEqual([]);
    d.destroy();
    await new Promise((resolve) => setImmediate(resolve));
    expect(held).toMatchObject([{ code: 'EPIPE' }]);
  });
});

describe('an in-memory connection closes like a socket', () => {
  it('an end whose reader stopped reading closes once both directions are shut', async () => {
    const [client, server] = duplexPair();
    const serverClosed = once(server, 'close');
    const clientClosed = once(client, 'close');
    client.write('request');
    // The server reads one chunk, answers, ends, and never reads again (as a handler does).
    const [chunk] = (await once(server, 'data')) as [Buffer];
    server.pause();
    expect(chunk.toString()).toBe('request');
    server.end('answer');
    client.on('data', () => undefined);
    client.destroy();
    await Promise.all([serverClosed, clientClosed]);
    expect(server.destroyed && client.destroyed).toBe(true);
  });

  it('also when the client has gone before the server ends', async () => {
    const [client, server] = duplexPair();
    const serverClosed = once(server, 'close');
    const read = once(server, 'data');
    client.write('request');
    await read;
    server.pause();
    client.destroy();
    await new Promise((resolve) => setImmediate(resolve));
    expect(server.destroyed).toBe(false); // it may still answer (into nothing)
    server.end();
    await serverClosed;
  });
});

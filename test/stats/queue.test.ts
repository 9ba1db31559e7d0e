// Petrel (i) for statistics: a listener whose socket does not drain queues at most `maxQueue`
// frames, is then closed and logged, and never delays sampling or other listeners.
import type { Socket } from 'node:net';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { unwrap } from '../../src/resources/errors.js';
import { parseName } from '../../src/resources/name.js';
import { Listener } from '../../src/stats/listener.js';
import { createStatsService } from '../../src/stats/service.js';
import type { Header, Wire } from '../../src/wire/types.js';
import { until } from './helpers.js';

const header = (name: string): Header => ({ version: 5, sequence: 1n, name: unwrap(parseName(name)) });
const text = (t: string): Wire => ({ header: header(':x'), payload: { kind: 'failure', message: t } });
const said = (w: Wire) => (w.payload.kind === 'failure' ? w.payload.message : w.payload.kind);

/** A stream standing in for the client socket: `writable` false means the kernel buffer is full. */
function fakeSocket() {
  const stream = new PassThrough();
  const written: Wire[] = [];
  const state = { writable: true };
  const send = (wire: Wire) => {
    written.push(wire);
    return state.writable;
  };
  return { socket: stream as unknown as Socket, stream, written, state, send };
}

describe('a statistics listener', () => {
  it('writes while the socket takes frames, queues while it drains, in order', () => {
    const f = fakeSocket();
    const listener = new Listener(f.socket, f.send, 3, () => undefined);
    expect(listener.push(text('a'))).toBe(true);
    f.state.writable = false;
    expect(listener.push(text('b'))).toBe(true); // written; the socket now wants to drain
    expect(listener.push(text('c'))).toBe(true);
    expect(listener.push(text('d'))).toBe(true);
    expect(listener.queued).toBe(2);
    f.state.writable = true;
    f.stream.emit('drain');
    expect(f.written.map(said)).toEqual(['a', 'b', 'c', 'd']);
    expect(listener.queued).toBe(0);
  });

  it('is closed, its socket destroyed, when the queue is full', () => {
    const f = fakeSocket();
    const reasons: string[] = [];
    const listener = new Listener(f.socket, f.send, 2, (r) => reasons.push(r));
    f.state.writable = false;
    listener.push(text('a'));
    listener.push(text('b'));
    listener.push(text('c'));
    expect(listener.push(text('d'))).toBe(false);
    expect(listener.closed).toBe(true);
    expect(f.stream.destroyed).toBe(true);
    expect(reasons).toEqual(['queue full']);
    expect(listener.push(text('e'))).toBe(false);
    expect(f.written.map(said)).toEqual(['a']);
  });

  it('stops when the client goes, whichever way', () => {
    for (const event of ['close', 'end', 'finish'] as const) {
      const f = fakeSocket();
      const reasons: string[] = [];
      const listener = new Listener(f.socket, f.send, 2, (r) => reasons.push(r));
      f.stream.emit(event);
      expect(listener.closed).toBe(true);
      expect(listener.push(text('a'))).toBe(false);
      expect(reasons).toHaveLength(1);
    }
  });
});

describe('the service with a listener that never reads', () => {
  it('closes it after maxQueue frames and logs it by name, while another listener keeps receiving', async () => {
    const warnings: string[] = [];
    const service = createStatsService({
      // This test's own process stands in for the VM.
      source: { running: [':self'], pidOf: () => process.pid, netsOf: () => [] },
      interval: 10,
      maxQueue: 3,
      log: {
        warn: (fields, message) => void warnings.push(`${message} ${fields.name}`),
        debug: () => undefined,
      },
    });
    try {
      const stuck = fakeSocket();
      stuck.state.writable = false;
      service.subscribe(header(':self'), stuck.socket, stuck.send);
      const reader = fakeSocket();
      service.subscribe(header(':'), reader.socket, reader.send);
      await until(() => stuck.stream.destroyed, 'the stuck listener to be closed');
      expect(warnings).toEqual(['statistics subscriber closed :self']);
      // the subscription reply was written; everything after it stayed queued until it was full
      expect(stuck.written).toHaveLength(1);
      const count = reader.written.length;
      await until(() => reader.written.length >= count + 3, 'the other listener to go on');
      expect(service.listeners).toBe(1);
    } finally {
      service.close();
    }
    await until(() => !service.sampling, 'a sample under way to finish');
    expect(service.listeners).toBe(0);
  });
});

// petreld loads the statistics service on the first `stats subscribe`: until then nothing of it
// is resident; subscribes made while it loads are served in order; closing the daemon meanwhile
// ends them instead.
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { unwrap } from '../../src/resources/errors.js';
import { parseName } from '../../src/resources/name.js';
import { lazyStatsService } from '../../src/stats/lazy.js';
import type { StatsSource } from '../../src/stats/service.js';
import type { Header, Wire } from '../../src/wire/types.js';
import { until } from './helpers.js';

const header = (name: string): Header => ({ version: 5, sequence: 3n, name: unwrap(parseName(name)) });
const nothingRuns: StatsSource = { running: [], pidOf: () => undefined, netsOf: () => undefined };
const warnings: string[] = [];
const log = { warn: (_: unknown, message: string) => void warnings.push(message), debug: () => undefined };

function client() {
  const socket = new PassThrough();
  const written: Wire[] = [];
  return { socket, written, send: (wire: Wire) => written.push(wire) > 0 };
}
const texts = (written: Wire[]) =>
  written.map((w) =>
    w.payload.kind === 'reply' && w.payload.reply.type === 'string' ? w.payload.reply.text : '?',
  );

describe('the statistics service loaded on first use', () => {
  it('is not loaded until a subscribe, then answers every subscribe in order', async () => {
    const stats = lazyStatsService({ source: nothingRuns, log });
    expect(stats.loaded).toBe(false);
    const first = client();
    const second = client();
    stats.subscribe(header(':a'), first.socket, first.send);
    stats.subscribe(header(':b'), second.socket, second.send);
    expect(first.written).toEqual([]);
    await until(() => second.written.length > 0, 'the second subscribe answered');
    expect(stats.loaded).toBe(true);
    expect(texts(first.written)).toEqual(['subscribed']);
    expect(texts(second.written)).toEqual(['subscribed']);
    expect(first.written[0]?.header).toEqual(header(':a'));
    const third = client();
    stats.subscribe(header(':c'), third.socket, third.send);
    expect(texts(third.written)).toEqual(['subscribed']); // loaded: answered at once
    stats.close();
    expect(first.socket.writableEnded || first.socket.destroyed).toBe(true);
    expect(warnings).toEqual([]);
  });

  it('closed while loading: the waiting subscriber is ended without an answer', async () => {
    const stats = lazyStatsService({ source: nothingRuns, log });
    const waiting = client();
    stats.subscribe(header(':a'), waiting.socket, waiting.send);
    stats.close();
    await until(() => waiting.socket.writableEnded, 'the waiting subscriber ended');
    expect(waiting.written).toEqual([]);
    expect(stats.loaded).toBe(false);
  });

  it('a client gone before the service loaded gets nothing', async () => {
    const stats = lazyStatsService({ source: nothingRuns, log });
    const gone = client();
    stats.subscribe(header(':a'), gone.socket, gone.send);
    gone.socket.destroy();
    const later = client();
    stats.subscribe(header(':b'), later.socket, later.send);
    await until(() => later.written.length > 0, 'the later subscribe answered');
    expect(gone.written).toEqual([]);
    stats.close();
  });
});

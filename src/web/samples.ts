// The last hour of each unikernel's usage, for the dashboard's plots: one statistics
// subscription at the root, held while the web API runs, and a fixed ring per unikernel.
//
// Sampling runs only while the web API is enabled (petreld's statistics cost nothing while
// nobody listens): the web layer is then the listener. A ring holds SLOTS samples of five
// float64 (time, CPU seconds, resident bytes, bytes in, bytes out): 40 bytes a slot, so with
// the default statsInterval of 10 s, 360 slots, 14,400 bytes per unikernel (3,600 slots and
// 144,000 bytes at most, for a statsInterval of 1 s or less).

import type { Logger } from 'pino';
import { type Name, pathName, printName } from '../resources/name.js';
import { decodeWire } from '../wire/index.js';
import type { Json } from '../wire/json.js';
import type { StatsData } from '../wire/types.js';
import { RequestChannel } from './channel.js';

const HOUR_MS = 3_600_000;
const FIELDS = 5;
/** Linux's page: the statistics carry resident memory in pages. */
export const PAGE_BYTES = 4096;

/** How many samples cover an hour at `intervalMs`, 3,600 at most. */
export const slotsFor = (intervalMs: number): number =>
  Math.min(3600, Math.max(1, Math.ceil(HOUR_MS / Math.max(1, intervalMs))));

/** One unikernel's samples, oldest overwritten. Pure. */
export class SampleRing {
  readonly #values: Float64Array;
  readonly #slots: number;
  #next = 0;
  #count = 0;

  constructor(slots: number) {
    this.#slots = slots;
    this.#values = new Float64Array(slots * FIELDS);
  }

  get bytes(): number {
    return this.#values.byteLength;
  }

  /** The time of the latest sample, 0 when none. */
  get latest(): number {
    if (this.#count === 0) return 0;
    return this.#values[((this.#next + this.#slots - 1) % this.#slots) * FIELDS] as number;
  }

  add(at: number, cpu: number, resident: number, input: number, output: number): void {
    const at0 = this.#next * FIELDS;
    this.#values.set([at, cpu, resident, input, output], at0);
    this.#next = (this.#next + 1) % this.#slots;
    this.#count = Math.min(this.#count + 1, this.#slots);
  }

  /** The samples since `since` (ms), oldest first, each [time, cpu s, resident bytes, in, out]. */
  since(since: number): number[][] {
    const out: number[][] = [];
    for (let i = 0; i < this.#count; i++) {
      const slot = (this.#next - this.#count + i + this.#slots) % this.#slots;
      const row = Array.from(this.#values.subarray(slot * FIELDS, slot * FIELDS + FIELDS));
      if ((row[0] as number) >= since) out.push(row);
    }
    return out;
  }
}

/** A sample's five values from petreld's statistics. */
export function sampleOf(stats: StatsData): [number, number, number, number] {
  const seconds = (t: { seconds: bigint; microseconds: number }) => Number(t.seconds) + t.microseconds / 1e6;
  const cpu = seconds(stats.rusage.utime) + seconds(stats.rusage.stime);
  const resident = stats.kinfoMem === null ? 0 : Number(stats.kinfoMem.rss) * PAGE_BYTES;
  let input = 0;
  let output = 0;
  for (const n of stats.ifdata) {
    input += Number(n.inputBytes);
    output += Number(n.outputBytes);
  }
  return [cpu, resident, input, output];
}

export interface SamplerOptions {
  readonly intervalMs: number;
  /** Runs the root's stats-subscribe through the proxy (the listener's own link to petreld). */
  readonly run: (request: { readonly client: RequestChannel; readonly name: Name }) => Promise<unknown>;
  readonly log: Logger;
  readonly now?: () => number;
}

/** Resubscribing after petreld ended the subscription (a restart, a subscriber that replaced ours). */
const RETRY_MS = 5_000;

export class Sampler {
  readonly #options: SamplerOptions;
  readonly #rings = new Map<string, SampleRing>();
  readonly #slots: number;
  #stop: (() => void) | null = null;
  #stopped = false;
  #timer: NodeJS.Timeout | null = null;
  #swept = 0;

  constructor(options: SamplerOptions) {
    this.#options = options;
    this.#slots = slotsFor(options.intervalMs);
  }

  /** Bytes the rings hold (each unikernel's the same). */
  get bytes(): number {
    return this.#rings.size * this.#slots * FIELDS * 8;
  }

  start(): void {
    if (this.#stopped) return;
    const closed = new Promise<void>((resolve) => {
      this.#stop = resolve;
    });
    const client = new RequestChannel(null, closed, async (payload) => {
      const decoded = decodeWire(payload);
      if (!decoded.ok) return true;
      const { header, payload: p } = decoded.value;
      if (p.kind === 'data' && p.data.type === 'statistics') this.#add(printName(header.name), p.data.stats);
      return !this.#stopped;
    });
    this.#options
      .run({ client, name: pathName([]) })
      .catch((e: unknown) =>
        this.#options.log.warn({ event: 'web.samples', reason: String(e) }, 'sampling failed'),
      )
      .finally(() => {
        if (this.#stopped) return;
        this.#options.log.info(
          { event: 'web.samples', retryMs: RETRY_MS },
          'statistics subscription ended; resubscribing',
        );
        this.#timer = setTimeout(() => this.start(), RETRY_MS);
        this.#timer.unref();
      });
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#stop?.();
  }

  /** The last hour of `name` (a full name), oldest first. */
  samples(name: string): number[][] {
    const now = (this.#options.now ?? Date.now)();
    return this.#rings.get(name)?.since(now - HOUR_MS) ?? [];
  }

  json(name: string): Json {
    return { interval: this.#options.intervalMs / 1000, samples: this.samples(name) };
  }

  #add(name: string, stats: StatsData): void {
    const now = (this.#options.now ?? Date.now)();
    let ring = this.#rings.get(name);
    if (ring === undefined) {
      ring = new SampleRing(this.#slots);
      this.#rings.set(name, ring);
    }
    ring.add(now, ...sampleOf(stats));
    // A unikernel gone (destroyed, renamed) stops being sampled: its ring goes a while later.
    if (now - this.#swept > 60_000) {
      this.#swept = now;
      const stale = now - Math.max(3 * this.#options.intervalMs, 120_000);
      for (const [key, r] of this.#rings) if (r.latest < stale) this.#rings.delete(key);
    }
  }
}

// Statistics subscriptions (semantics §12.2, §12.3 with Petrel (f), (i)): listeners keyed by the
// subscribed name, and one sampling timer that runs only while at least one listener exists.
//
// 1. `stats subscribe` with name S stores a listener under S (replacing and closing an earlier
//    one under the same key) and replies `subscribed`, whether or not anything runs there.
// 2. Every `interval`, each running unikernel with a listener at its name or an ancestor path is
//    sampled once: /proc of its tender and one `ip` listing for all taps.
// 3. Each such listener gets `Data statistics` under the unikernel's name relative to S's path.
// 4. The last listener leaving stops the timer: nobody listening means nothing is read.

import type { Duplex } from 'node:stream';
import {
  isPrefix,
  type Name,
  nameAsPath,
  type Path,
  parseName,
  printName,
  printPath,
  relativeTo,
} from '../resources/name.js';
import type { Header, Wire } from '../wire/types.js';
import { Listener, QUEUE_FULL } from './listener.js';
import {
  fsProcReader,
  ipLinkReader,
  type LinkReader,
  type LinkTable,
  type ProcReader,
  readLinkTable,
  readProcess,
  statsData,
  type TapAttachment,
  tapCounters,
} from './sample.js';

/** What the service needs of the engine (`Engine` satisfies it). */
export interface StatsSource {
  /** Canonical names (`printName`) of the running unikernels. */
  readonly running: readonly string[];
  pidOf(name: Name): number | undefined;
  netsOf(name: Name): readonly TapAttachment[] | undefined;
}

export interface StatsLog {
  warn(fields: Record<string, unknown>, message: string): void;
  debug(fields: Record<string, unknown>, message: string): void;
}

/** What the statistics socket (src/daemon/sockets.ts) needs: serve one `stats subscribe`. */
export interface StatsService {
  /** Serves one `stats subscribe` connection until it closes. */
  subscribe(header: Header, socket: Duplex, sendFrame: (wire: Wire) => boolean): void;
}

export interface StatsServiceOptions {
  readonly source: StatsSource;
  /** Milliseconds between samples. Default 10 000 (Albatross' `--interval 10`). */
  readonly interval?: number;
  /** Frames a listener may have waiting on a slow socket before it is closed ((i)). Default 1024. */
  readonly maxQueue?: number;
  readonly log: StatsLog;
  /** Network namespace of the taps. Default: the host's. */
  readonly netns?: string;
  /** Where /proc is read (tests count reads). Default: the file system. */
  readonly procReader?: ProcReader;
  /** Where link counters come from. Default: `ip -s -j link show` (in `netns`). */
  readonly linkReader?: LinkReader;
  /** `sysconf(_SC_CLK_TCK)`. Default 100. */
  readonly clockTicks?: number;
}

export interface StatsHub extends StatsService {
  /** Listeners now subscribed. */
  readonly listeners: number;
  /** Whether a sample is scheduled or under way (one under way finishes after `close`). */
  readonly sampling: boolean;
  /** Closes every listener and stops the timer for good (daemon shutdown). */
  close(): void;
}

export const DEFAULT_STATS_INTERVAL_MS = 10_000;
export const DEFAULT_MAX_QUEUE = 1024;

interface Subscription {
  readonly key: string;
  /** S as a path: a listener hears every unikernel at or below it. */
  readonly scope: Path;
  /** S's path, removed from the front of unikernel names sent to this listener. */
  readonly base: Path;
  readonly version: Header['version'];
  readonly listener: Listener;
}

export function createStatsService(options: StatsServiceOptions): StatsHub {
  const interval = options.interval ?? DEFAULT_STATS_INTERVAL_MS;
  const maxQueue = options.maxQueue ?? DEFAULT_MAX_QUEUE;
  const { source, log } = options;
  const proc = options.procReader ?? fsProcReader;
  const links = options.linkReader ?? ipLinkReader(options.netns);
  const subscriptions = new Map<string, Subscription>();
  /** What was already logged per `name pid` (`proc` or a tap), so a failure is logged once. */
  const warned = new Map<string, Set<string>>();
  let timer: NodeJS.Timeout | null = null;
  let ticking = false;
  let closed = false;

  function schedule(delay: number): void {
    if (closed || timer !== null || ticking || subscriptions.size === 0) return;
    timer = setTimeout(() => void tick(), delay);
    timer.unref();
  }

  function stop(): void {
    if (timer !== null) clearTimeout(timer);
    timer = null;
  }

  function warnOnce(vm: string, what: string, fields: Record<string, unknown>, message: string): void {
    const seen = warned.get(vm) ?? new Set<string>();
    warned.set(vm, seen);
    if (seen.has(what)) return;
    seen.add(what);
    log.warn(fields, message);
  }

  async function tick(): Promise<void> {
    timer = null;
    ticking = true;
    const began = Date.now();
    try {
      await sampleAll();
    } catch (cause) {
      log.warn({ reason: String(cause) }, 'statistics sampling failed');
    } finally {
      ticking = false;
      schedule(Math.max(0, interval - (Date.now() - began)));
    }
  }

  async function sampleAll(): Promise<void> {
    const current = [...subscriptions.values()];
    const due: { vm: Name; pid: number; nets: readonly TapAttachment[]; to: Subscription[] }[] = [];
    for (const text of source.running) {
      const vm = parseName(text);
      if (!vm.ok || vm.value.label === null) continue;
      const at = nameAsPath(vm.value);
      const to = current.filter((s) => isPrefix(s.scope, at));
      const pid = source.pidOf(vm.value);
      if (to.length === 0 || pid === undefined) continue;
      due.push({ vm: vm.value, pid, nets: source.netsOf(vm.value) ?? [], to });
    }
    const live = new Set(due.map((d) => `${printName(d.vm)} ${d.pid}`));
    for (const vm of warned.keys()) if (!live.has(vm)) warned.delete(vm);
    if (due.length === 0) return;

    let table: LinkTable | null = null;
    if (due.some((d) => d.nets.length > 0)) table = await readLinkTable(links);
    await Promise.all(
      due.map(async ({ vm, pid, nets, to }) => {
        const name = printName(vm);
        const usage = await readProcess(pid, proc, options.clockTicks);
        if (!usage.ok) {
          // The tender is gone (the engine will notice) or /proc is hidden (hidepid, a
          // container): skip this VM now, say why once (Albatross #252 failed silently).
          warnOnce(
            `${name} ${pid}`,
            'proc',
            { name, pid, reason: usage.error.message },
            'statistics unavailable: cannot read the tender in /proc (exited, or /proc mounted with hidepid?)',
          );
          return;
        }
        const taps = tapCounters(nets, table ?? { ok: true, value: new Map() });
        for (const { tap, reason } of taps.unresolved) {
          warnOnce(`${name} ${pid}`, tap, { name, tap, reason }, 'statistics: tap counters unavailable');
        }
        const stats = statsData(usage.value, taps);
        for (const s of to) {
          const relative = relativeTo(s.base, vm) ?? relativeTo(vm.path, vm);
          if (relative === null) continue;
          s.listener.push({
            header: { version: s.version, sequence: 0n, name: relative },
            payload: { kind: 'data', data: { type: 'statistics', stats } },
          });
        }
      }),
    );
  }

  function remove(subscription: Subscription, reason: string): void {
    if (subscriptions.get(subscription.key) === subscription) subscriptions.delete(subscription.key);
    log.debug({ name: subscription.key, reason }, 'statistics subscriber gone');
    if (subscriptions.size === 0) stop();
  }

  return {
    get listeners() {
      return subscriptions.size;
    },
    get sampling() {
      return timer !== null || ticking;
    },

    subscribe(header: Header, socket: Duplex, sendFrame: (wire: Wire) => boolean): void {
      if (closed) return void socket.end();
      const scope = nameAsPath(header.name);
      // Albatross keys listeners by the name's labels, so `a:b` and `a:b:` share a slot.
      const key = `${printPath(scope)}:`;
      const subscription: Subscription = {
        key,
        scope,
        base: header.name.path,
        version: header.version,
        listener: new Listener(socket, sendFrame, maxQueue, (reason) => {
          if (reason === QUEUE_FULL) {
            log.warn({ name: printName(header.name), reason }, 'statistics subscriber closed');
          }
          remove(subscription, reason);
        }),
      };
      const reply: Wire = {
        header,
        payload: { kind: 'reply', reply: { type: 'string', text: 'subscribed' } },
      };
      if (!subscription.listener.push(reply)) return;
      const previous = subscriptions.get(key);
      subscriptions.set(key, subscription);
      previous?.listener.close('replaced by a newer subscription');
      schedule(interval);
    },

    close(): void {
      closed = true;
      stop();
      for (const s of [...subscriptions.values()]) s.listener.close('statistics service closed');
      subscriptions.clear();
    },
  };
}

// The console registry (semantics §11.2–11.4 with Petrel (c), (i)): one ring per unikernel name,
// kept after the VM stops so history and subscriptions survive restarts and force-creates, at
// most n+1 rings per path, at most max+1 subscribers per name, and no subscriber can stall it.

import type { Label, Name, Path } from '../resources/name.js';
import { childName, isPrefix, listingOrder, printName, printPath } from '../resources/name.js';
import { type ConsoleLine, Ring } from './ring.js';

export type SubscribeStatus = 'subscribed' | 'waiting for VM';
export type History = { readonly count: number } | { readonly since: number };

/**
 * One attached client. Implementations queue at most a bounded number of messages and return
 * false when full; the hub then closes them. Nothing here may block or throw.
 */
export interface Subscriber {
  /** The subscription reply and the history, delivered before any live line. */
  begin(status: SubscribeStatus, history: readonly ConsoleLine[]): boolean;
  offer(name: Name, entry: ConsoleLine): boolean;
  /** The lines of one read at once (all at `timestamp`); without it, `offer` is called per line. */
  offerLines?(name: Name, lines: readonly Uint8Array[], timestamp: number): boolean;
  close(reason: string): void;
  /** Messages queued and not yet handed to the connection (0 when not known). */
  readonly backlog?: number;
  /** Calls `listener` once, when the queue has been handed to the connection. */
  onDrained?(listener: () => void): void;
}

export interface HubLog {
  warn(fields: Record<string, unknown>, message: string): void;
}

interface Entry {
  /** Newest first. */
  subscribers: Subscriber[];
  active: boolean;
  ring: Ring | null;
}

interface PathState {
  path: Path;
  /** How many rings the path keeps beyond the running VMs (n of §11.2). */
  limit: number;
  entries: Map<Label, Entry>;
}

export interface HubOptions {
  /** Subscribers per name beyond which the oldest is closed (Albatross `--max-subscribers`). */
  readonly maxSubscribers?: number;
  readonly ringSize?: number;
  readonly log?: HubLog;
}

export class ConsoleHub {
  readonly #paths = new Map<string, PathState>();
  readonly #maxSubscribers: number;
  readonly #ringSize: number | undefined;
  readonly #log: HubLog | undefined;

  constructor(options: HubOptions = {}) {
    this.#maxSubscribers = Math.max(1, options.maxSubscribers ?? 5);
    this.#ringSize = options.ringSize;
    this.#log = options.log;
  }

  /**
   * A unikernel of this name starts (Albatross' `console add`): its entry becomes active,
   * reusing its ring and subscribers. `limit` is the number of rings its path may keep.
   */
  attach(name: Name & { label: Label }, limit: number): void {
    const state = this.#pathState(name.path, limit);
    state.limit = limit;
    let entry = state.entries.get(name.label);
    if (entry === undefined) {
      entry = { subscribers: [], active: true, ring: null };
      state.entries.set(name.label, entry);
      this.#enforcePathLimit(state, name.label);
    }
    entry.active = true;
    entry.ring ??= new Ring(this.#ringSize);
  }

  /** The unikernel's console ended (the tender exited): keep ring and subscribers. */
  detach(name: Name & { label: Label }): void {
    const entry = this.#paths.get(printPath(name.path))?.entries.get(name.label);
    if (entry !== undefined) entry.active = false;
  }

  /** Records lines read at `timestamp` and offers them to every subscriber of the name. */
  publish(name: Name & { label: Label }, lines: readonly Uint8Array[], timestamp: number): void {
    const entry = this.#paths.get(printPath(name.path))?.entries.get(name.label);
    if (entry?.ring == null) return;
    // The whole read at once: no object per line, one look-up and one offer per subscriber.
    for (const line of lines) entry.ring.pushLine(line, timestamp);
    if (entry.subscribers.length === 0) return;
    for (const subscriber of [...entry.subscribers]) {
      if (!this.#offer(name, subscriber, lines, timestamp)) this.#drop(name, entry, subscriber, 'queue full');
    }
  }

  #offer(name: Name, subscriber: Subscriber, lines: readonly Uint8Array[], timestamp: number): boolean {
    if (subscriber.offerLines !== undefined) return subscriber.offerLines(name, lines, timestamp);
    for (const line of lines) if (!subscriber.offer(name, { timestamp, line })) return false;
    return true;
  }

  /** The most messages any subscriber of the name has waiting (0 without subscribers). */
  backlog(name: Name & { label: Label }): number {
    const entry = this.#paths.get(printPath(name.path))?.entries.get(name.label);
    let most = 0;
    for (const s of entry?.subscribers ?? []) most = Math.max(most, s.backlog ?? 0);
    return most;
  }

  /** Subscribes to a unikernel name (§11.3): history first, then live lines. */
  subscribe(name: Name & { label: Label }, subscriber: Subscriber, history: History): SubscribeStatus {
    let state = this.#paths.get(printPath(name.path));
    if (state === undefined) state = this.#pathState(name.path, 1);
    let entry = state.entries.get(name.label);
    if (entry === undefined) {
      entry = { subscribers: [], active: false, ring: null };
      state.entries.set(name.label, entry);
      this.#enforcePathLimit(state, name.label);
    }
    while (entry.subscribers.length >= this.#maxSubscribers + 1) {
      const oldest = entry.subscribers.pop() as Subscriber;
      oldest.close('too many subscribers');
    }
    const status: SubscribeStatus = entry.ring === null ? 'waiting for VM' : 'subscribed';
    const lines =
      entry.ring === null
        ? []
        : 'count' in history
          ? entry.ring.last(history.count)
          : entry.ring.since(history.since);
    if (!subscriber.begin(status, lines)) {
      subscriber.close('queue full');
      this.#log?.warn({ name: printName(name) }, 'console subscriber closed: history exceeds its queue');
      return status;
    }
    entry.subscribers.unshift(subscriber);
    return status;
  }

  /** Whether some subscriber of the name has at least `threshold` messages waiting. */
  congested(name: Name & { label: Label }, threshold: number): boolean {
    const entry = this.#paths.get(printPath(name.path))?.entries.get(name.label);
    return entry?.subscribers.some((s) => (s.backlog ?? 0) >= threshold) ?? false;
  }

  /** Calls `listener` once, when a subscriber that is `threshold` messages behind has caught up. */
  onceDrained(name: Name & { label: Label }, threshold: number, listener: () => void): void {
    const entry = this.#paths.get(printPath(name.path))?.entries.get(name.label);
    const behind = entry?.subscribers.find((s) => (s.backlog ?? 0) >= threshold);
    if (behind?.onDrained !== undefined) behind.onDrained(listener);
    else setTimeout(listener, 5).unref();
  }

  /** Closes the subscribers of the name that still have `threshold` messages waiting. */
  dropCongested(name: Name & { label: Label }, threshold: number, reason: string): void {
    const entry = this.#paths.get(printPath(name.path))?.entries.get(name.label);
    if (entry === undefined) return;
    for (const subscriber of [...entry.subscribers]) {
      if ((subscriber.backlog ?? 0) >= threshold) this.#drop(name, entry, subscriber, reason);
    }
  }

  /** The client went away. */
  unsubscribe(name: Name & { label: Label }, subscriber: Subscriber): void {
    const entry = this.#paths.get(printPath(name.path))?.entries.get(name.label);
    if (entry === undefined) return;
    entry.subscribers = entry.subscribers.filter((s) => s !== subscriber);
    this.#forgetIfUnused(name.path, name.label, entry);
  }

  /** Subscribers of the names below each top-level path (`alice:`), and of all (`:`). */
  subscribersByTopPath(): Map<string, number> {
    const out = new Map<string, number>([[':', 0]]);
    for (const state of this.#paths.values()) {
      let n = 0;
      for (const entry of state.entries.values()) n += entry.subscribers.length;
      out.set(':', (out.get(':') ?? 0) + n);
      if (state.path.length > 0) out.set(`${state.path[0]}:`, (out.get(`${state.path[0]}:`) ?? 0) + n);
    }
    return out;
  }

  /** Names (relative to `base`) of stopped unikernels that still have history, listing order. */
  listInactive(base: Path): Name[] {
    const found: Label[][] = [];
    for (const state of this.#paths.values()) {
      if (!isPrefix(base, state.path)) continue;
      for (const [label, entry] of state.entries) {
        if (!entry.active && entry.ring !== null) found.push([...state.path, label]);
      }
    }
    found.sort(listingOrder);
    return found.map((labels) =>
      childName(labels.slice(base.length, -1), labels[labels.length - 1] as Label),
    );
  }

  /** Whether a ring exists for the name (for tests and statistics). */
  ring(name: Name & { label: Label }): Ring | undefined {
    return this.#paths.get(printPath(name.path))?.entries.get(name.label)?.ring ?? undefined;
  }

  #pathState(path: Path, limit: number): PathState {
    const key = printPath(path);
    let state = this.#paths.get(key);
    if (state === undefined) {
      state = { path, limit, entries: new Map() };
      this.#paths.set(key, state);
    }
    return state;
  }

  /** More than n entries after adding `added`: drop the smallest inactive label (§11.2). */
  #enforcePathLimit(state: PathState, added: Label): void {
    if (state.entries.size <= state.limit) return;
    const inactive = [...state.entries]
      .filter(([label, e]) => label !== added && !e.active)
      .map(([label]) => label);
    if (inactive.length === 0) {
      this.#log?.warn(
        { path: printPath(state.path), limit: state.limit },
        'console: no inactive ring to drop',
      );
      return;
    }
    const victim = inactive.sort()[0] as Label;
    const entry = state.entries.get(victim) as Entry;
    for (const subscriber of entry.subscribers) subscriber.close('console ring dropped');
    state.entries.delete(victim);
  }

  #drop(name: Name & { label: Label }, entry: Entry, subscriber: Subscriber, reason: string): void {
    entry.subscribers = entry.subscribers.filter((s) => s !== subscriber);
    subscriber.close(reason);
    this.#forgetIfUnused(name.path, name.label, entry);
  }

  #forgetIfUnused(path: Path, label: Label, entry: Entry): void {
    if (entry.active || entry.ring !== null || entry.subscribers.length > 0) return;
    const state = this.#paths.get(printPath(path));
    state?.entries.delete(label);
    if (state?.entries.size === 0) this.#paths.delete(printPath(path));
  }
}

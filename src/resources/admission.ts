// Admission of connections nobody has authenticated yet, so floods of them cannot starve real clients: the budgets of
// pending sockets and of bytes read from them, per peer address and in all, their deadlines,
// and which connection gives way when a budget is full. Pure: time and bytes are passed in.
//
// 1. A connection is *pending* from accept until the listener settles it (for TLS: until the
//    chain check returns). Every decision below concerns pending connections only.
// 2. Progress is recency: the pending connection silent the longest (since its last read, or
//    its accept) makes the least progress. One that read within `MOVING_MS`, or was accepted
//    within `NEW_MS` and has sent nothing yet, is *moving* and is never evicted for a budget;
//    nor is one we paused ourselves (held). A new client has those seconds to send its
//    ClientHello, which any client does at once, and is moving from then on; an idle flood
//    socket is not, once they are over.
// 3. Socket budgets (`maxPending`, `maxPendingPerAddress`) are enforced by `tick`, which evicts
//    the least-progress connections above them. With sockets within `NEW_MS` of their accept
//    the table may grow to twice `maxPending` (the bound on descriptors); beyond, an accept
//    evicts the least-progress connection at once (a young one if it has sent nothing), and is
//    refused only when every one has read within `MOVING_MS`.
// 4. Byte budgets are reservations, so they never deadlock: a connection's first `smallBytes`
//    (any ordinary handshake) are always let through; beyond that it must hold a reservation
//    of `largeBytes` (the largest handshake the listener allows) from the global and its
//    address's byte budget. Without one it is held (the shell stops reading it) until one
//    frees; a reservation holder silent for half its stall time is evicted to make room first. Bytes read
//    therefore stay within the budgets plus `smallBytes` per pending socket.
// 5. Deadlines: the first byte within `firstByteMs` of the accept; the first TLS record
//    (ClientHello) complete within `helloMs`; then a credit of at most `stallMs` that drains in
//    real time and grows by 1 s per `minRate` bytes read: a transfer at `minRate` or faster is
//    never cut, a stalled one is cut `stallMs` after its last byte. A held connection's clock
//    is stopped while it is held.

/** How long after a read a connection counts as moving. */
export const MOVING_MS = 1000;
/**
 * How long after its accept a connection that has sent nothing is spared: long enough for a
 * client to send its ClientHello on a busy machine, and it makes an idle flood that re-opens
 * what is closed cycle three times slower than a second would.
 */
export const NEW_MS = 3000;

export interface AdmissionLimits {
  readonly maxPending: number;
  readonly maxPendingPerAddress: number;
  readonly maxPendingBytes: number;
  readonly maxPendingBytesPerAddress: number;
  /** Bytes of each connection let through without a reservation. */
  readonly smallBytes: number;
  /** The largest handshake: a reservation's size, and where a connection is cut. */
  readonly largeBytes: number;
  readonly firstByteMs: number;
  readonly helloMs: number;
  /** Bytes per second. */
  readonly minRate: number;
  readonly stallMs: number;
}

export type EvictReason =
  | 'budget'
  | 'address-budget'
  | 'first-byte-timeout'
  | 'hello-timeout'
  | 'stalled'
  | 'byte-budget'
  | 'too-large';

export interface Eviction {
  readonly id: number;
  readonly reason: EvictReason;
}

interface Entry {
  readonly id: number;
  readonly key: string;
  readonly acceptedAt: number;
  bytes: number;
  lastReadAt: number | null;
  helloAt: number | null;
  /** Past the hello: when the rate credit runs out. */
  creditUntil: number;
  heldSince: number | null;
  reserved: boolean;
}

export type AdmitDecision =
  | { readonly admitted: true; readonly evict: readonly Eviction[] }
  | { readonly admitted: false; readonly reason: 'budget' };

export interface ReadDecision {
  /** Stop reading this connection until `resumable` names it. */
  readonly hold: boolean;
  readonly evict: readonly Eviction[];
}

/**
 * The peer an address's budget is charged to: IPv4 (also IPv4-mapped IPv6) as itself, IPv6 by
 * its /64, since one host commonly holds a whole /64.
 */
export function addressKey(address: string): string {
  const bare = address.includes('%') ? address.slice(0, address.indexOf('%')) : address;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(bare);
  if (mapped !== null) return mapped[1] as string;
  if (!bare.includes(':')) return bare;
  const groups = expandIpv6(bare);
  if (groups === null) return bare.toLowerCase();
  return `${groups.slice(0, 4).join(':')}::/64`;
}

function expandIpv6(address: string): string[] | null {
  const halves = address.toLowerCase().split('::');
  if (halves.length > 2) return null;
  const parse = (part: string) => (part === '' ? [] : part.split(':'));
  const head = parse(halves[0] as string);
  const tail = halves.length === 2 ? parse(halves[1] as string) : [];
  // An embedded IPv4 tail counts as two groups; the /64 never reaches it.
  const width = (groups: string[]) => groups.reduce((n, g) => n + (g.includes('.') ? 2 : 1), 0);
  const missing = 8 - width(head) - width(tail);
  if (missing < 0 || (halves.length === 1 && missing !== 0)) return null;
  const groups = [...head, ...Array<string>(missing).fill('0'), ...tail];
  return groups.map((g) => (g.includes('.') ? g : g.replace(/^0+(?=.)/, '')));
}

/** The pending connections of one listener and every decision about them. */
export class AdmissionTable {
  readonly #limits: AdmissionLimits;
  readonly #entries = new Map<number, Entry>();
  readonly #perKey = new Map<string, Set<Entry>>();
  readonly #reservedPerKey = new Map<string, number>();
  /** Held connections, oldest first: they get reservations in that order. */
  readonly #held: Entry[] = [];
  #reserved = 0;
  #bytes = 0;

  constructor(limits: AdmissionLimits) {
    this.#limits = limits;
  }

  get pending(): number {
    return this.#entries.size;
  }

  /** Bytes read from pending connections. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Bytes reserved for large handshakes (counted against the byte budgets). */
  get reserved(): number {
    return this.#reserved;
  }

  pendingAt(key: string): number {
    return this.#perKey.get(key)?.size ?? 0;
  }

  reservedAt(key: string): number {
    return this.#reservedPerKey.get(key) ?? 0;
  }

  has(id: number): boolean {
    return this.#entries.has(id);
  }

  isHeld(id: number): boolean {
    return this.#entries.get(id)?.heldSince != null;
  }

  /** The size of one reservation: the largest handshake, within both byte budgets. */
  get #reservation(): number {
    const l = this.#limits;
    return Math.min(l.largeBytes, l.maxPendingBytes, l.maxPendingBytesPerAddress);
  }

  /**
   * A new connection. Beyond twice the socket budget, the least-progress connection makes
   * room for it at once (the newcomer may be the one client that will speak); only when
   * none may be evicted is the newcomer refused.
   */
  admit(id: number, key: string, now: number): AdmitDecision {
    const l = this.#limits;
    const evict: Eviction[] = [];
    if (this.#entries.size >= 2 * l.maxPending) {
      // Past the bound even a socket in its first second goes, if it has sent nothing yet:
      // the oldest such is no likelier to speak than the newcomer.
      const victim = this.#leastProgress(now, () => true) ?? this.#leastProgress(now, () => true, true);
      if (victim === null) return { admitted: false, reason: 'budget' };
      evict.push({ id: victim.id, reason: 'budget' });
      this.remove(victim.id);
    }
    const entry: Entry = {
      id,
      key,
      acceptedAt: now,
      bytes: 0,
      lastReadAt: null,
      helloAt: null,
      creditUntil: Number.POSITIVE_INFINITY,
      heldSince: null,
      reserved: false,
    };
    this.#entries.set(id, entry);
    const set = this.#perKey.get(key) ?? new Set<Entry>();
    this.#perKey.set(key, set);
    set.add(entry);
    return { admitted: true, evict };
  }

  /**
   * `total` bytes have now been read from `id` in all; `helloDone` once its first record is
   * complete. Says whether to stop reading it, and whom to evict for its sake.
   */
  read(id: number, total: number, helloDone: boolean, now: number): ReadDecision {
    const entry = this.#entries.get(id);
    if (entry === undefined) return { hold: false, evict: [] };
    const l = this.#limits;
    const added = Math.max(0, total - entry.bytes);
    this.#bytes += added;
    entry.bytes = total;
    if (added > 0) entry.lastReadAt = now;
    if (entry.helloAt === null && helloDone) {
      entry.helloAt = now;
      entry.creditUntil = now + l.stallMs;
    } else if (entry.helloAt !== null && added > 0) {
      entry.creditUntil = Math.min(now + l.stallMs, entry.creditUntil + (added * 1000) / l.minRate);
    }
    // A reservation is all a connection may read (a handshake is at most `largeBytes`).
    if (entry.bytes > Math.max(l.smallBytes, this.#reservation)) {
      this.remove(id);
      return { hold: false, evict: [{ id, reason: 'too-large' }] };
    }
    if (entry.bytes <= l.smallBytes || entry.reserved || entry.heldSince !== null) {
      return { hold: entry.heldSince !== null, evict: [] };
    }
    const evict: Eviction[] = [];
    while (!this.#canReserve(entry.key)) {
      // A bulk transfer pauses longer than a handshake does (a busy sender, a slow link): a
      // reservation goes to another only once its holder has been silent half its stall time.
      const victim = this.#leastProgress(
        now,
        (e) =>
          e.reserved &&
          this.#needsRoomFrom(e, entry.key) &&
          now - (e.lastReadAt ?? e.acceptedAt) >= l.stallMs / 2,
      );
      if (victim === null) break;
      evict.push({ id: victim.id, reason: 'byte-budget' });
      this.remove(victim.id);
    }
    if (this.#canReserve(entry.key)) {
      this.#reserve(entry);
      return { hold: false, evict };
    }
    entry.heldSince = now;
    this.#held.push(entry);
    return { hold: true, evict };
  }

  /** Held connections that got a reservation and may be read again, oldest first. */
  resumable(now: number): number[] {
    const resumed: number[] = [];
    for (let i = 0; i < this.#held.length; ) {
      const entry = this.#held[i] as Entry;
      if (!this.#canReserve(entry.key)) {
        i++;
        continue;
      }
      this.#held.splice(i, 1);
      this.#reserve(entry);
      const paused = now - (entry.heldSince as number);
      entry.heldSince = null;
      // The clock stopped while we held it; a read is due from now, so it counts as moving.
      entry.lastReadAt = now;
      if (entry.helloAt !== null) entry.creditUntil += paused;
      resumed.push(entry.id);
    }
    return resumed;
  }

  /** The connection is no longer pending (settled, evicted or closed). */
  remove(id: number): void {
    const entry = this.#entries.get(id);
    if (entry === undefined) return;
    this.#entries.delete(id);
    this.#bytes -= entry.bytes;
    const set = this.#perKey.get(entry.key);
    set?.delete(entry);
    if (set?.size === 0) this.#perKey.delete(entry.key);
    this.#unreserve(entry);
    if (entry.heldSince !== null) this.#held.splice(this.#held.indexOf(entry), 1);
  }

  /**
   * One sweep (on a timer): overdue connections, then the least-progress ones above a socket
   * budget. The evicted are removed here already.
   */
  tick(now: number): { readonly evict: readonly Eviction[] } {
    const l = this.#limits;
    const evict: Eviction[] = [];
    for (const entry of this.#entries.values()) {
      const reason = this.#overdue(entry, now);
      if (reason !== null) evict.push({ id: entry.id, reason });
    }
    for (const e of evict) this.remove(e.id);
    for (const [key, set] of this.#perKey) {
      while (set.size > l.maxPendingPerAddress) {
        const victim = this.#leastProgress(now, (e) => e.key === key);
        if (victim === null) break;
        evict.push({ id: victim.id, reason: 'address-budget' });
        this.remove(victim.id);
      }
    }
    while (this.#entries.size > l.maxPending) {
      const victim = this.#leastProgress(now, () => true);
      if (victim === null) break;
      evict.push({ id: victim.id, reason: 'budget' });
      this.remove(victim.id);
    }
    return { evict };
  }

  /** Whether `id` is moving now (tests and logs). */
  moving(id: number, now: number): boolean {
    const entry = this.#entries.get(id);
    return entry !== undefined && isMoving(entry, now);
  }

  #overdue(entry: Entry, now: number): EvictReason | null {
    if (entry.heldSince !== null) return null;
    const l = this.#limits;
    if (entry.bytes === 0) return now - entry.acceptedAt >= l.firstByteMs ? 'first-byte-timeout' : null;
    if (entry.helloAt === null) return now - entry.acceptedAt >= l.helloMs ? 'hello-timeout' : null;
    return now >= entry.creditUntil ? 'stalled' : null;
  }

  /**
   * The entry neither moving nor held, silent the longest, among those `where` admits;
   * `unread`: counting as moving only what has read (not a socket's first second).
   */
  #leastProgress(now: number, where: (e: Entry) => boolean, unread = false): Entry | null {
    let best: Entry | null = null;
    let bestSince = Number.POSITIVE_INFINITY;
    for (const entry of this.#entries.values()) {
      const moving = unread ? entry.lastReadAt !== null && isMoving(entry, now) : isMoving(entry, now);
      if (entry.heldSince !== null || moving || !where(entry)) continue;
      const since = entry.lastReadAt ?? entry.acceptedAt;
      if (since < bestSince || (since === bestSince && best !== null && entry.bytes < best.bytes)) {
        best = entry;
        bestSince = since;
      }
    }
    return best;
  }

  #canReserve(key: string): boolean {
    const size = this.#reservation;
    const l = this.#limits;
    return (
      this.#reserved + size <= l.maxPendingBytes && this.reservedAt(key) + size <= l.maxPendingBytesPerAddress
    );
  }

  /** Whether evicting `victim` frees room `key` lacks. */
  #needsRoomFrom(victim: Entry, key: string): boolean {
    const size = this.#reservation;
    const globalFull = this.#reserved + size > this.#limits.maxPendingBytes;
    const keyFull = this.reservedAt(key) + size > this.#limits.maxPendingBytesPerAddress;
    return (keyFull && victim.key === key) || (globalFull && !keyFull);
  }

  #reserve(entry: Entry): void {
    entry.reserved = true;
    this.#reserved += this.#reservation;
    this.#reservedPerKey.set(entry.key, this.reservedAt(entry.key) + this.#reservation);
  }

  #unreserve(entry: Entry): void {
    if (!entry.reserved) return;
    entry.reserved = false;
    this.#reserved -= this.#reservation;
    const left = this.reservedAt(entry.key) - this.#reservation;
    if (left > 0) this.#reservedPerKey.set(entry.key, left);
    else this.#reservedPerKey.delete(entry.key);
  }
}

const isMoving = (entry: Entry, now: number): boolean =>
  entry.lastReadAt === null ? now - entry.acceptedAt < NEW_MS : now - entry.lastReadAt < MOVING_MS;

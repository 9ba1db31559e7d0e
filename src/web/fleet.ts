// The fleet as the dashboard sees it: the fresh nodes of the registry with their web
// origins (GET /api/v1/fleet), the origins this node answers CORS for, and the connect-src of
// the dashboard's CSP. Read from the registry at most every few seconds, shared by every request.

import type { Logger } from 'pino';
import type { PetrelError, Result } from '../resources/errors.js';

/** One node of the registry (src/fleet/registry.ts webNodes). */
export interface RegistryNode {
  readonly id: string;
  readonly webOrigin: string;
  readonly lastSeen: Date;
}

/** Where the nodes come from: the registry, when `fleetDb` is set. */
export interface FleetSource {
  list(): Promise<Result<readonly RegistryNode[], PetrelError>>;
  stop(): Promise<void>;
}

/** A node as GET /api/v1/fleet gives it. */
export interface FleetNode {
  readonly id: string;
  /** `https://HOST:PORT`; null when the node has no web API (or is this one, not yet reported). */
  readonly origin: string | null;
  /** The node serving this answer: the page reaches it by its own origin, with its cookie. */
  readonly self: boolean;
  readonly lastSeen: string | null;
}

export interface FleetList {
  readonly nodes: readonly FleetNode[];
  /** Why the registry could not be read (the last list read is given, or this node alone). */
  readonly error: { readonly code: string; readonly message: string } | null;
}

/** How long a list read from the registry is used. */
export const FLEET_CACHE_MS = 5000;

/**
 * An origin as a browser sends it: `https://` and a host name or address and a port, nothing
 * else. What the registry holds goes into CORS and CSP headers, so anything else is dropped: a
 * row must not be able to add a directive to the page's CSP.
 */
const ORIGIN = /^https:\/\/(\[[0-9a-f:.]+\]|[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?)(:\d{1,5})?$/u;

export function isOrigin(text: string): boolean {
  return ORIGIN.test(text);
}

export class FleetView {
  readonly #self: string;
  readonly #source: FleetSource | null;
  readonly #log: Logger;
  readonly #cacheMs: number;
  #list: FleetList;
  #readAt = Number.NEGATIVE_INFINITY;
  #reading: Promise<FleetList> | null = null;

  constructor(self: string, source: FleetSource | null, log: Logger, cacheMs = FLEET_CACHE_MS) {
    this.#self = self;
    this.#source = source;
    this.#log = log;
    this.#cacheMs = cacheMs;
    this.#list = { nodes: [{ id: self, origin: null, self: true, lastSeen: null }], error: null };
  }

  /**
   * The nodes: this one first, then the others by id. Without a registry, this one alone. Once
   * read, a list past its time is given at once while it is read again behind it, so a registry
   * that is slow or down never holds a request (CORS asks on every cross-origin one).
   */
  nodes(): Promise<FleetList> {
    if (this.#source === null || performance.now() - this.#readAt < this.#cacheMs)
      return Promise.resolve(this.#list);
    const source = this.#source;
    this.#reading ??= this.#read(source).finally(() => {
      this.#reading = null;
    });
    return this.#readAt === Number.NEGATIVE_INFINITY ? this.#reading : Promise.resolve(this.#list);
  }

  /** The web origins of the fleet's nodes: those this node's CORS answers, and its page connects to. */
  async origins(): Promise<ReadonlySet<string>> {
    const { nodes } = await this.nodes();
    return new Set(nodes.flatMap((n) => (n.origin === null ? [] : [n.origin])));
  }

  async stop(): Promise<void> {
    await this.#source?.stop();
  }

  async #read(source: FleetSource): Promise<FleetList> {
    const read = await source.list();
    this.#readAt = performance.now();
    if (!read.ok) {
      this.#log.warn(
        { event: 'web.fleet', code: read.error.code, reason: read.error.message },
        'the fleet registry cannot be read: the last list read is used',
      );
      this.#list = { nodes: this.#list.nodes, error: { code: read.error.code, message: read.error.message } };
      return this.#list;
    }
    const nodes = read.value.map((n) => ({
      id: n.id,
      origin: isOrigin(n.webOrigin) ? n.webOrigin : null,
      self: n.id === this.#self,
      lastSeen: n.lastSeen.toISOString(),
    }));
    const self = nodes.find((n) => n.self) ?? { id: this.#self, origin: null, self: true, lastSeen: null };
    this.#list = { nodes: [self, ...nodes.filter((n) => !n.self)], error: null };
    return this.#list;
  }
}

// The statistics service behind a stand-in that loads it on the first `stats subscribe`: a node
// nobody asks for statistics never loads (or keeps resident) the sampling code.

import type { Duplex } from 'node:stream';
import type { Header, Wire } from '../wire/types.js';
import type { StatsHub, StatsService, StatsServiceOptions } from './service.js';

export interface LazyStatsService extends StatsService {
  /** Whether the service has been loaded (the first subscribe loads it). */
  readonly loaded: boolean;
  /** Closes the service if it was loaded, and any that is still loading. */
  close(): void;
}

export function lazyStatsService(options: StatsServiceOptions): LazyStatsService {
  let hub: StatsHub | null = null;
  let loading: Promise<StatsHub | null> | null = null;
  let closed = false;
  const load = (): Promise<StatsHub | null> => {
    loading ??= import('./service.js').then(({ createStatsService }) => {
      if (closed) return null;
      hub = createStatsService(options);
      return hub;
    });
    return loading;
  };
  return {
    get loaded() {
      return hub !== null;
    },
    subscribe(header: Header, socket: Duplex, sendFrame: (wire: Wire) => boolean): void {
      if (hub !== null) {
        hub.subscribe(header, socket, sendFrame);
        return;
      }
      // Subscribes that arrive while it loads are served in their order, once it has loaded.
      load().then(
        (loaded) => {
          if (loaded === null || socket.destroyed || socket.writableEnded) return void socket.end();
          loaded.subscribe(header, socket, sendFrame);
        },
        (cause: unknown) => {
          options.log.warn({ reason: String(cause) }, 'statistics service could not be loaded');
          socket.destroy();
        },
      );
    },
    close(): void {
      closed = true;
      hub?.close();
    },
  };
}

// Following a Read-mode stream (console, stats) until the user interrupts: SIGINT or SIGTERM
// closes our side, petreld unsubscribes and closes, and the command ends with success.

import type { Data, Name } from '../../wire/types.js';
import type { CliIo } from '../command.js';
import { CLIENT_EXIT, Stop } from './shell.js';
import type { Stream } from './transport.js';

/**
 * Hands every Data frame to `onData` until the stream ends. Ending because we were interrupted
 * is success; petreld closing on its own (its subscriber limit, a full queue, shutting down)
 * stops with exit 4, unless `until` is 'server': we ended our side and wait for petreld's.
 */
export async function follow(
  io: CliIo,
  stream: Stream,
  onData: (name: Name, data: Data) => void,
  until: 'interrupt' | 'server' = 'interrupt',
): Promise<number> {
  const signal = io.interrupted?.();
  const stop = () => stream.close();
  if (signal?.aborted === true) stop();
  signal?.addEventListener('abort', stop, { once: true });
  try {
    for await (const event of stream.events) {
      if (event.kind === 'broken') throw new Stop(CLIENT_EXIT.PROTOCOL, event.error.message);
      if (event.kind === 'failure') throw new Stop(CLIENT_EXIT.REFUSED, event.message);
      onData(event.name, event.data);
    }
  } finally {
    signal?.removeEventListener('abort', stop);
    stream.close();
  }
  if (signal?.aborted === true || until === 'server') return CLIENT_EXIT.OK;
  throw new Stop(CLIENT_EXIT.PROTOCOL, 'petreld closed the subscription');
}

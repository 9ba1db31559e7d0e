// Server-Sent Events from a node of the fleet: EventSource for the node serving the page (its
// cookie goes by itself), fetch and a stream reader for the others, since EventSource cannot
// send the Authorization header their API needs.

import { authHeaders, type Target, urlOf } from './api.js';

export interface Events {
  close(): void;
}

export interface EventHandlers {
  /** One event: its name and data. */
  event(name: string, data: string): void;
  /** The stream ended or broke (after close(), never). */
  ended(): void;
}

export function openEvents(target: Target, path: string, on: EventHandlers): Events {
  if (target.origin === null) {
    const source = new EventSource(path);
    let closed = false;
    const end = () => {
      if (closed) return;
      closed = true;
      source.close();
      on.ended();
    };
    for (const name of ['line', 'stats'])
      source.addEventListener(name, (e) => on.event(name, (e as MessageEvent<string>).data));
    source.addEventListener('end', (e) => {
      on.event('end', (e as MessageEvent<string>).data);
      end();
    });
    // EventSource would reconnect by itself: the caller decides instead.
    source.addEventListener('error', end);
    return {
      close() {
        closed = true;
        source.close();
      },
    };
  }
  const abort = new AbortController();
  void (async () => {
    try {
      const response = await fetch(urlOf(target, path), {
        headers: authHeaders(target),
        credentials: 'omit',
        signal: abort.signal,
      });
      if (response.status !== 200 || response.body === null) {
        on.event('error', await response.text());
        return;
      }
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          dispatch(buffer.slice(0, end), on);
          buffer = buffer.slice(end + 2);
        }
      }
    } catch {
      // Aborted, or the connection broke: ended below either way.
    }
    if (!abort.signal.aborted) on.ended();
  })();
  return { close: () => abort.abort() };
}

/** One event block of text/event-stream: `event:` and `data:` lines (comments skipped). */
function dispatch(block: string, on: EventHandlers): void {
  let name = 'message';
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line.startsWith('event:')) name = line.slice(6).trim();
    else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
  }
  if (data.length > 0) on.event(name, data.join('\n'));
}

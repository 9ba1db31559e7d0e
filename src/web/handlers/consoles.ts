// The web API's subscriptions as Server-Sent Events: a unikernel's console (one subscription to
// petreld per name for all followers, console-feed.ts) and its statistics as petreld samples them.

import { printName } from '../../resources/name.js';
import { apiError, EXIT, nameUnder } from '../api.js';
import { FEED_COMMAND } from '../console-feed.js';
import { sendJson } from '../respond.js';
import { consoleSelect, relayEvents, statsJson } from '../streams.js';
import { type Handler, relay } from './call.js';

/**
 * GET /api/v1/unikernels/{name}/console?count=N|since=TIME: the history first, then lines as the
 * unikernel prints them. Each line is `event: line` with `data: {"timestamp", "line"}`.
 */
export const follow: Handler = async (call) => {
  const select = consoleSelect(call.query);
  if (!select.ok) {
    sendJson(call.response, select.error);
    return null;
  }
  const name = nameUnder(call.token.path, call.text);
  if (!name.ok) {
    sendJson(call.response, name.error);
    return null;
  }
  // One subscription per unikernel name for all the web's followers (console-feed.ts).
  const open = call.run(name.value, FEED_COMMAND);
  await call.web.feeds.follow(printName(name.value), select.value, call.response, open);
  return null;
};

/**
 * GET /api/v1/unikernels/{name}/stats: one `event: stats` each time petreld samples the unikernel
 * (statsInterval), with CPU time, memory and each network's counters.
 */
export const stats: Handler = async (call) => {
  for (const key of call.query.keys()) {
    const message = `unknown parameter ${JSON.stringify(key)} (stats takes none)`;
    sendJson(call.response, apiError(400, 'E_WEB_QUERY', message, EXIT.usage));
    return null;
  }
  return relay(call, { type: 'stats-subscribe' }, (response, run) =>
    relayEvents(
      response,
      (data) => (data.type === 'statistics' ? ['stats', statsJson(data.stats)] : null),
      run,
    ),
  );
};

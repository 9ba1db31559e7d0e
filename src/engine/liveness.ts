// Runs a replace's liveness check from the host (Petrel (m)): HTTP GET and TCP connect are tried
// again every RETRY_MS until one passes or the deadline is reached; a console line is awaited
// through a console subscription of the new unikernel. Never inside the engine's queue.

import { connect } from 'node:net';
import type { ConsoleHub, Subscriber } from '../console/hub.js';
import type { LivenessCheck } from '../resources/liveness.js';
import type { Label, Name } from '../resources/name.js';

export type CheckOutcome =
  | { readonly passed: true; readonly detail: string }
  | { readonly passed: false; readonly reason: string };

export interface CheckContext {
  readonly hub: ConsoleHub;
  readonly name: Name & { label: Label };
  /** When the new unikernel started (ms since the epoch): older console lines do not count. */
  readonly startedAt: number;
  /** Aborted when the replacement is given up (a destroy or create of the name). */
  readonly signal: AbortSignal;
}

/** Pause between two tries of an HTTP or TCP check. */
const RETRY_MS = 250;
/** At most this long for one try, so a stalled one leaves time for another. */
const TRY_MS = 5_000;

const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;

export async function runCheck(check: LivenessCheck, context: CheckContext): Promise<CheckOutcome> {
  const deadline = Date.now() + check.withinMs;
  const { probe } = check;
  // Given up before it began (a destroy queued right behind the force-create).
  if (context.signal.aborted) return { passed: false, reason: 'the replacement was given up' };
  if (probe.kind === 'console') return consoleLine(probe.regex, deadline, context, check.withinMs);
  const attempt =
    probe.kind === 'http'
      ? () => httpOnce(probe.url, deadline)
      : () => tcpOnce(probe.host, probe.port, deadline);
  let last = 'not tried';
  let tries = 0;
  while (!context.signal.aborted) {
    tries++;
    const outcome = await attempt();
    if (outcome.passed) return outcome;
    last = outcome.reason;
    const left = deadline - Date.now();
    if (left <= 0) break;
    await sleep(Math.min(RETRY_MS, left), context.signal);
    if (Date.now() >= deadline) break;
  }
  if (context.signal.aborted) return { passed: false, reason: 'the replacement was given up' };
  return {
    passed: false,
    reason: `no pass within ${seconds(check.withinMs)} (${tries} ${tries === 1 ? 'try' : 'tries'}), the last: ${last}`,
  };
}

async function httpOnce(url: string, deadline: number): Promise<CheckOutcome> {
  const budget = Math.max(1, Math.min(TRY_MS, deadline - Date.now()));
  try {
    const response = await fetch(url, { redirect: 'manual', signal: AbortSignal.timeout(budget) });
    await response.body?.cancel().catch(() => undefined);
    if (response.status >= 200 && response.status < 400)
      return { passed: true, detail: `HTTP ${response.status} from ${url}` };
    return { passed: false, reason: `HTTP status ${response.status}` };
  } catch (e) {
    return { passed: false, reason: networkReason(e, budget) };
  }
}

function tcpOnce(host: string, port: number, deadline: number): Promise<CheckOutcome> {
  const budget = Math.max(1, Math.min(TRY_MS, deadline - Date.now()));
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (outcome: CheckOutcome) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(outcome);
    };
    const timer = setTimeout(
      () => done({ passed: false, reason: `connection timed out after ${seconds(budget)}` }),
      budget,
    );
    socket.once('connect', () =>
      done({ passed: true, detail: `TCP connection to ${host}:${port} accepted` }),
    );
    socket.once('error', (e) => done({ passed: false, reason: networkReason(e, budget) }));
  });
}

/** "connection refused", "timed out after 5 s", "host not found" — what a person needs to hear. */
function networkReason(e: unknown, budget: number): string {
  const error = e as { name?: string; code?: string; cause?: { code?: string; message?: string } };
  if (error?.name === 'TimeoutError' || error?.name === 'AbortError')
    return `timed out after ${seconds(budget)}`;
  const code = error?.code ?? error?.cause?.code;
  switch (code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ECONNRESET':
      return 'connection reset';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'no route to host';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'host not found';
    default:
      return error?.cause?.message ?? (e instanceof Error ? e.message : String(e));
  }
}

function consoleLine(
  regex: string,
  deadline: number,
  context: CheckContext,
  withinMs: number,
): Promise<CheckOutcome> {
  const pattern = new RegExp(regex, 'u');
  const { hub, name, startedAt, signal } = context;
  return new Promise((resolve) => {
    let settled = false;
    let subscribed = false;
    const finish = (outcome: CheckOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', abort);
      if (subscribed) hub.unsubscribe(name, subscriber);
      resolve(outcome);
    };
    const test = (timestamp: number, line: Uint8Array): boolean => {
      if (timestamp < startedAt) return true;
      const text = Buffer.from(line).toString('utf8');
      if (pattern.test(text)) {
        finish({ passed: true, detail: `console line ${JSON.stringify(text.slice(0, 200))}` });
        return true;
      }
      return true;
    };
    const subscriber: Subscriber = {
      begin: (_status, history) => {
        for (const entry of history) test(entry.timestamp, entry.line);
        return true;
      },
      offer: (_name, entry) => test(entry.timestamp, entry.line),
      close: (reason) => finish({ passed: false, reason: `the console subscription ended: ${reason}` }),
    };
    const abort = () => finish({ passed: false, reason: 'the replacement was given up' });
    const timer = setTimeout(
      () =>
        finish({ passed: false, reason: `no console line matching /${regex}/ within ${seconds(withinMs)}` }),
      Math.max(0, deadline - Date.now()),
    );
    signal.addEventListener('abort', abort, { once: true });
    hub.subscribe(name, subscriber, { since: startedAt });
    subscribed = true;
    // A line of the history may have passed it already, before the hub held the subscriber.
    if (settled) hub.unsubscribe(name, subscriber);
  });
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

// Runs a replace's liveness check from the host (Petrel (m)): HTTP GET and TCP connect are tried
// again every RETRY_MS until one passes or the deadline is reached; a console line is looked for
// in the new unikernel's console ring. Never inside the engine's queue.

import { connect } from 'node:net';
import type { ConsoleHub } from '../console/hub.js';
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
/** How often a console check reads the ring. */
const CONSOLE_POLL_MS = 100;

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
    const began = Date.now();
    const outcome = await attempt();
    if (outcome.passed) return outcome;
    // A try the deadline cut short (it had less than a whole try's time left, and ran out) says
    // only that time was up: the failure before it is what the user needs to hear.
    const cutShort = deadline - began < TRY_MS && Date.now() >= deadline;
    if (!cutShort || tries === 1) last = outcome.reason;
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

/**
 * Reads the name's console ring (the history petreld keeps) every CONSOLE_POLL_MS for lines
 * since the last read: no subscriber slot is taken, so a check never pushes a follower out.
 * A guest printing more than the ring holds between two reads may have lines skipped.
 */
async function consoleLine(
  regex: string,
  deadline: number,
  context: CheckContext,
  withinMs: number,
): Promise<CheckOutcome> {
  const pattern = new RegExp(regex, 'u');
  const { hub, name, signal } = context;
  // Lines at `cursor` already tested: the next read starts there again.
  let cursor = context.startedAt;
  let atCursor = 0;
  for (;;) {
    const lines = hub.ring(name)?.since(cursor) ?? [];
    let skip = atCursor;
    for (const { timestamp, line } of lines) {
      if (timestamp === cursor && skip > 0) {
        skip--;
        continue;
      }
      const text = Buffer.from(line).toString('utf8');
      if (pattern.test(text))
        return { passed: true, detail: `console line ${JSON.stringify(text.slice(0, 200))}` };
    }
    const newest = lines[lines.length - 1]?.timestamp;
    if (newest !== undefined) {
      // Every line read is at or after `cursor`: those at the newest time are the ones tested.
      atCursor = newest === cursor ? lines.length : lines.filter((l) => l.timestamp === newest).length;
      cursor = newest;
    }
    if (signal.aborted) return { passed: false, reason: 'the replacement was given up' };
    const left = deadline - Date.now();
    if (left <= 0)
      return { passed: false, reason: `no console line matching /${regex}/ within ${seconds(withinMs)}` };
    await sleep(Math.min(CONSOLE_POLL_MS, left), signal);
  }
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

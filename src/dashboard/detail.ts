// One unikernel in the dashboard: its configuration, restart history, console (history, then
// live, each line as text only: a guest is hostile) and plots of its last hour, all from the
// node it runs on.

import { call, enc, HERE, messageOf, type Target } from './api.js';
import { byId, clear, el, mib } from './dom.js';
import { type Events, openEvents } from './events.js';
import { drawPlot, rates, type Series } from './plot.js';
import type { Exit, Unikernel } from './types.js';

/** Lines the console view keeps; older ones are removed. */
const MAX_LINES = 2000;
/** Plots are fetched again each sample interval, between one and ten seconds. */
const PLOT_MS = { least: 1000, most: 10_000 };

let events: Events | null = null;
let plotTimer: number | null = null;
let shown: string | null = null;
let shownOn: Target = HERE;

export function shownName(): string | null {
  return shown;
}

/** The node of the unikernel shown. */
export function shownTarget(): Target {
  return shownOn;
}

export function hideDetail(): void {
  events?.close();
  events = null;
  if (plotTimer !== null) window.clearTimeout(plotTimer);
  plotTimer = null;
  shown = null;
  byId('detail').hidden = true;
}

/** Shows `u` of `target`; the console and plots start when it is newly shown, the rest is refreshed. */
export function showDetail(u: Unikernel, exit: Exit | undefined, target: Target = HERE): void {
  const fresh = shown !== u.name || shownOn.id !== target.id;
  if (fresh) hideDetail();
  shown = u.name;
  shownOn = target;
  byId('detail').hidden = false;
  byId('detail-name').textContent = u.name;
  byId('detail-node').textContent = target.origin === null ? 'on this node' : `on node ${target.id}`;
  const config = byId('detail-config');
  clear(config);
  const rows: [string, string][] = [
    ['Full name', u.fullName],
    ['State', u.state],
    ['Type', u.type],
    ['Memory', `${u.memory} MiB`],
    ['CPUs', `${u.cpus} (ids ${u.cpuids.join(', ')})`],
    ['Networks', u.networks.map((n) => `${n.netif} → ${n.bridge} (${n.mac})`).join('; ') || 'none'],
    [
      'Block devices',
      u.blocks.map((b) => `${b.device} → ${b.hostDevice} (${b.size} MiB)`).join('; ') || 'none',
    ],
    ['Arguments', u.arguments.join(' ') || 'none'],
    ['Restart on failure', u.restartOnFail ? 'yes' : 'no'],
    ['Started', new Date(u.started).toLocaleString()],
    ['Image SHA-256', u.digest],
  ];
  for (const [term, value] of rows) config.append(el('dt', {}, term), el('dd', {}, value));
  byId('detail-exits').textContent =
    exit === undefined
      ? 'No exit recorded since petreld started.'
      : `Last exit: ${exit.exit}${exit.limit === null ? '' : ` (${exit.limit})`} at ${new Date(exit.at).toLocaleString()}; ${exit.restarts} restart(s) on failure in the current window.`;
  if (fresh) {
    follow(u.name, target);
    void plots(u.name, target);
  }
}

/**
 * The console of `name`: its history, then live. When petreld ends the stream (or it breaks), it
 * is taken up again two seconds later from the last line's time, lines already shown skipped.
 */
function follow(name: string, target: Target, since: string | null = null): void {
  const view = byId('console');
  if (since === null) clear(view);
  let last = since;
  const select = since === null ? 'count=200' : `since=${encodeURIComponent(since)}`;
  const line = (data: string) => {
    const { timestamp, line } = JSON.parse(data) as { timestamp: string; line: string };
    if (last !== null && timestamp <= last) return;
    last = timestamp;
    const atBottom = view.scrollTop + view.clientHeight >= view.scrollHeight - 4;
    // Text nodes only, never innerHTML: a guest's `<script>` stays text.
    view.append(
      el(
        'div',
        { class: 'line', title: timestamp },
        el('span', { class: 'time' }, timestamp.slice(11, 23)),
        line,
      ),
    );
    while (view.childElementCount > MAX_LINES) view.firstElementChild?.remove();
    if (atBottom) view.scrollTop = view.scrollHeight;
  };
  const source = openEvents(target, `/api/v1/unikernels/${enc(name)}/console?${select}`, {
    event(kind, data) {
      if (kind === 'line') line(data);
      else if (kind === 'error') byId('app-error').textContent = errorText(data);
    },
    ended() {
      window.setTimeout(() => {
        if (shown === name && shownOn.id === target.id && events === source)
          follow(name, target, last ?? new Date().toISOString());
      }, 2000);
    },
  });
  events = source;
}

/** The message of an error reply's text. */
function errorText(text: string): string {
  try {
    const error = (JSON.parse(text) as { error?: { code: string; message: string } }).error;
    if (error !== undefined) return `${error.message} (${error.code})`;
  } catch {
    // Not JSON: shown as it is.
  }
  return text.slice(0, 200);
}

async function plots(name: string, target: Target): Promise<void> {
  const reply = await call<{ interval: number; samples: number[][] }>(
    'GET',
    `/api/v1/unikernels/${enc(name)}/samples`,
    undefined,
    target,
  );
  if (shown !== name || shownOn.id !== target.id) return;
  const next = reply.status === 200 ? reply.body.interval * 1000 : PLOT_MS.most;
  plotTimer = window.setTimeout(
    () => void plots(name, target),
    Math.min(PLOT_MS.most, Math.max(PLOT_MS.least, next)),
  );
  if (reply.status !== 200) {
    byId('app-error').textContent = messageOf(reply);
    return;
  }
  const samples = reply.body.samples;
  const now = Date.now();
  const column = (i: number): Series => samples.map((s) => [s[0] as number, s[i] as number] as const);
  drawPlot(byId<HTMLCanvasElement>('plot-memory'), [column(2)], now, mib);
  const cpu = rates(column(1)).map(([t, v]) => [t, v * 100] as const);
  drawPlot(byId<HTMLCanvasElement>('plot-cpu'), [cpu], now, (v) => `${v.toFixed(1)} %`);
  drawPlot(
    byId<HTMLCanvasElement>('plot-net'),
    [rates(column(3)), rates(column(4))],
    now,
    (v) => `${Math.round(v)} B/s`,
  );
}

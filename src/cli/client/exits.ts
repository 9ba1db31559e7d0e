// `petrel info` with petreld's unikernel-exits (differences (l)): the running unikernels' info
// entries, each with its last exit, then the recently exited ones that do not run, as JSON or text.

import { printName } from '../../resources/name.js';
import type { Json } from '../../wire/json.js';
import type { Named, UnikernelExit, UnikernelInfo } from '../../wire/types.js';
import { formatUnikernels, table, unikernelsJson } from './format.js';

/** What `petrel info` shows: the info entries, and the exits when petreld reports them. */
export interface InfoView {
  readonly running: readonly Named<UnikernelInfo>[];
  /** null: petreld does not know unikernel-exits (Albatross, an older petreld). */
  readonly exits: readonly Named<UnikernelExit>[] | null;
}

interface Merged {
  /** The last exit of each running entry, by printed name (absent: none). */
  readonly lastOf: ReadonlyMap<string, UnikernelExit>;
  /** Exits of unikernels that do not run: waiting for a restart, or dropped. */
  readonly gone: readonly Named<UnikernelExit>[];
}

/**
 * The two answers side by side. They are two requests, so a unikernel may exit or start in
 * between: a running entry takes its name's exit unless that says dropped (a later one's), and
 * an exit that says restarted without a running entry (it exited since) is left out.
 */
function merge(running: readonly Named<UnikernelInfo>[], exits: readonly Named<UnikernelExit>[]): Merged {
  const names = new Set(running.map((e) => printName(e.name)));
  const lastOf = new Map<string, UnikernelExit>();
  const gone: Named<UnikernelExit>[] = [];
  for (const entry of exits) {
    const key = printName(entry.name);
    if (names.has(key)) {
      if (entry.info.outcome.kind !== 'dropped') lastOf.set(key, entry.info);
    } else if (entry.info.outcome.kind !== 'restarted') gone.push(entry);
  }
  return { lastOf, gone };
}

function lastExitJson(exit: UnikernelExit): Json {
  return { exit: exit.exit, limit: exit.limit, at: exit.at.toISOString(), restarts: exit.restarts };
}

function goneJson({ name, info }: Named<UnikernelExit>): Json {
  const { outcome } = info;
  return {
    name: printName(name),
    state: outcome.kind,
    ...(outcome.kind === 'restarting' ? { restartAt: outcome.restartAt.toISOString() } : {}),
    ...(outcome.kind === 'dropped' ? { reason: outcome.reason } : {}),
    lastExit: lastExitJson(info),
  };
}

/**
 * JSON: the info entries as before; with exits known each has `state: "running"` and
 * `lastExit` (an object, or null), and the unikernels that do not run follow with their state.
 */
export function infoViewJson(view: InfoView): Json {
  const entries = unikernelsJson(view.running) as { [k: string]: Json }[];
  if (view.exits === null) return entries;
  const { lastOf, gone } = merge(view.running, view.exits);
  const running = entries.map((entry) => {
    const last = lastOf.get(String(entry.name));
    return { ...entry, state: 'running', lastExit: last === undefined ? null : lastExitJson(last) };
  });
  return [...running, ...gone.map(goneJson)];
}

const shortTime = (time: Date): string => time.toISOString().replace(/\.\d{3}Z$/u, 'Z');

/** Text: the info table, then (when any is known) a table of last exits. */
export function formatInfoView(view: InfoView): string {
  const listing = formatUnikernels(view.running);
  if (view.exits === null) return listing;
  const { lastOf, gone } = merge(view.running, view.exits);
  const rows = [
    ...view.running.flatMap(({ name }) => {
      const last = lastOf.get(printName(name));
      return last === undefined ? [] : [exitRow(printName(name), 'running', last, 'restarted')];
    }),
    ...gone.map(({ name, info }) => {
      const { outcome } = info;
      const then =
        outcome.kind === 'restarting'
          ? `restart at ${shortTime(outcome.restartAt)}`
          : outcome.kind === 'dropped'
            ? outcome.reason
            : 'restarted';
      return exitRow(printName(name), outcome.kind, info, then);
    }),
  ];
  if (rows.length === 0) return listing;
  return `${listing}\nlast exits:\n${table(['NAME', 'STATE', 'EXIT', 'LIMIT', 'EXITED', 'RESTARTS', 'THEN'], rows)}`;
}

function exitRow(name: string, state: string, exit: UnikernelExit, then: string): string[] {
  return [name, state, exit.exit, exit.limit ?? '-', shortTime(exit.at), String(exit.restarts), then];
}

/** The note `petrel info` prints on stderr when petreld cannot say what exited. */
export const EXITS_UNKNOWN =
  'petreld does not report exits (Albatross, or a petreld without unikernel-exits): last exits unknown';

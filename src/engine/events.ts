// Lifecycle events of engine transactions on a diagnostics channel (as undici publishes its
// request lifecycle): logs, metrics and the crash-safety tests subscribe; nothing is published
// when nobody listens. Each command answered is timed, published and logged here (observeCommand).

import diagnostics from 'node:diagnostics_channel';
import type { Logger } from 'pino';
import { type Name, printName } from '../resources/name.js';
import type { Command } from '../wire/types.js';
import { type EngineResponse, TEXT } from './replies.js';

export const TRANSACTION_CHANNEL = 'petrel:transaction';

/** The points of a transaction, in order; crash tests kill the daemon at each of them. */
export type TransactionStep =
  | 'planned'
  | 'validated'
  /** The received image is in the store (renamed, directory synced); no state refers to it yet. */
  | 'image-stored'
  /** `<run-dir>/<name>.img` links to it. */
  | 'image-linked'
  | 'fifo-made'
  /** The tender's jail id is taken (nothing on disk yet: petrel-jail makes the rest). */
  | 'jail-taken'
  | 'tap-created'
  | 'console-opened'
  | 'tender-spawned'
  | 'committed'
  | 'old-stopping'
  | 'old-released'
  | 'stopped'
  /** The transaction's journal entry (or a snapshot holding it) is on disk. */
  | 'state-written'
  /** A new snapshot is written and the journal is about to be emptied (name `:`). */
  | 'compacted'
  /** A replace's new unikernel runs and its liveness check starts (Petrel (m)). */
  | 'replace-checking'
  /** A replace passed its check and "passed" is on disk; the pending record is still there. */
  | 'replace-passed';

export interface TransactionEvent {
  /** The unikernel's name string. */
  readonly name: string;
  readonly step: TransactionStep;
}

const channel = diagnostics.channel(TRANSACTION_CHANNEL);

export function publishStep(name: string, step: TransactionStep): void {
  if (channel.hasSubscribers) channel.publish({ name, step } satisfies TransactionEvent);
}

export const COMMAND_CHANNEL = 'petrel:command';

/** One command answered by the engine. */
export interface CommandEvent {
  readonly command: string;
  readonly outcome: 'done' | 'refused';
  readonly ms: number;
}

export const RESTART_CHANNEL = 'petrel:restart';

/** A restart-on-failure was scheduled for a unikernel. */
export interface RestartEvent {
  readonly name: string;
  readonly delayMs: number;
}

const commands = diagnostics.channel(COMMAND_CHANNEL);
const restarts = diagnostics.channel(RESTART_CHANNEL);

export function publishCommand(event: CommandEvent): void {
  if (commands.hasSubscribers) commands.publish(event);
}

export function publishRestart(event: RestartEvent): void {
  if (restarts.hasSubscribers) restarts.publish(event);
}

const READ_ONLY: ReadonlySet<Command['type']> = new Set([
  'unikernel-info',
  'unikernel-exits',
  'unikernel-get',
  'policy-info',
  'block-info',
]);

/**
 * Answered without changing anything: a query, or the policy a TLS session re-installs on every
 * connection. Logged at debug: at info they were most of the log (the TLS endpoint logs each
 * session's request and outcome at info already), and each line costs a write.
 */
function changedNothing(type: Command['type'], response: EngineResponse): boolean {
  if (READ_ONLY.has(type)) return true;
  return (
    response.kind === 'reply' &&
    response.reply.type === 'string' &&
    response.reply.text === TEXT.policyUnchanged
  );
}

/** Times, publishes and logs one command. */
export async function observeCommand(
  { log, now }: { readonly log: Logger; readonly now: () => number },
  name: Name,
  type: Command['type'],
  run: () => Promise<EngineResponse> | EngineResponse,
): Promise<EngineResponse> {
  const started = now();
  const response = await run();
  const fields = { command: type, name: printName(name), ms: now() - started };
  publishCommand({
    command: type,
    outcome: response.kind === 'failure' ? 'refused' : 'done',
    ms: fields.ms,
  });
  if (response.kind === 'failure') log.info({ ...fields, reason: response.message }, 'command refused');
  else if (changedNothing(type, response)) log.debug(fields, 'command done');
  else log.info(fields, 'command done');
  return response;
}

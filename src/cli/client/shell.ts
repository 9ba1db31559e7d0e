// The shared shell of the client subcommands: exit codes by failure kind, argument parsing that
// turns mistakes into usage errors, and a session that sends commands and reports refusals.
// A `Stop` thrown anywhere in a subcommand ends it with its exit code (this is the process edge).

import { type ParseArgsConfig, parseArgs } from 'node:util';
import type { Label, Name } from '../../resources/name.js';
import { parseName, parsePath, pathName, printName } from '../../resources/name.js';
import { readWholeNumber } from '../../wire/config-flags.js';
import type { Command, Reply } from '../../wire/types.js';
import type { CliCommand, CliIo } from '../command.js';
import { type Direction, ProgressLine } from './progress.js';
import { type ConnectionFlags, openTarget, parseTarget, type Target } from './target.js';
import type { Stream, TransferMeter, Transport, TransportError } from './transport.js';

/**
 * Exit statuses of the client subcommands: Albatross' client codes (albatross-semantics.md
 * §16.2), so scripts written for albatross-client read petrel's the same way.
 */
export const CLIENT_EXIT = {
  OK: 0,
  /** The server answered Failure. */
  REFUSED: 117,
  /** The server rejected our certificate. */
  AUTH: 119,
  /** Communication failure: broken stream, unexpected message, no final reply. */
  PROTOCOL: 121,
  /** Connection failed. */
  CONNECT: 122,
  /** Command-line error, and refusals before connecting (name, flags, image, policy, files). */
  USAGE: 124,
  LOCAL: 124,
} as const;

export const EXIT_HELP = `exit status (as albatross-client's):
  0    success
  117  petreld refused the command; its Failure text is printed on stderr
  119  TLS: petreld rejected our certificate (--remote)
  121  the connection broke, or petreld answered something unexpected
  122  cannot connect; the message names the socket (see --run-dir, --socket) or address
  124  usage error, or input refused before connecting (name, flags, image, policy, files)
`;

export class Stop extends Error {
  readonly exit: number;
  /** Whether to point at `--help` (a mistake on the command line). */
  readonly hint: boolean;
  constructor(exit: number, message: string, hint = false) {
    super(message);
    this.exit = exit;
    this.hint = hint;
  }
}

export const usageError = (message: string): Stop => new Stop(CLIENT_EXIT.USAGE, message, true);

const TRANSPORT_EXIT: Readonly<Record<TransportError['code'], number>> = {
  E_CLIENT_CONNECT: CLIENT_EXIT.CONNECT,
  E_CLIENT_PROTOCOL: CLIENT_EXIT.PROTOCOL,
  E_CLIENT_AUTH: CLIENT_EXIT.AUTH,
  E_CLIENT_UNSUPPORTED: CLIENT_EXIT.USAGE,
};

export const transportStop = (error: TransportError): Stop =>
  new Stop(TRANSPORT_EXIT[error.code] ?? CLIENT_EXIT.PROTOCOL, error.message);

/** `--help`/`-h` anywhere before a `--` terminator (an `--arg=--help` value is one token). */
function wantsHelp(args: readonly string[]): boolean {
  for (const arg of args) {
    if (arg === '--') return false;
    if (arg === '--help' || arg === '-h') return true;
  }
  return false;
}

/** A subcommand whose body may throw Stop; `--help` prints `usage` and succeeds. */
export function clientCommand(
  name: string,
  usage: string,
  body: (args: readonly string[], io: CliIo) => Promise<number>,
): CliCommand {
  return {
    name,
    usage,
    run: async (args, io) => {
      if (wantsHelp(args)) {
        io.stdout(usage);
        return CLIENT_EXIT.OK;
      }
      try {
        return await body(args, io);
      } catch (e) {
        if (!(e instanceof Stop)) throw e;
        const hint = e.hint ? `Run 'petrel ${name} --help' for usage.\n` : '';
        io.stderr(`petrel ${name}: ${e.message}\n${hint}`);
        return e.exit;
      }
    },
  };
}

/** Node's parseArgs, strict, with its complaints as usage errors. */
export function parseCommandLine<const O extends NonNullable<ParseArgsConfig['options']>>(
  args: readonly string[],
  options: O,
) {
  try {
    return parseArgs({ args: [...args], options, allowPositionals: true, strict: true });
  } catch (e) {
    throw usageError(e instanceof Error ? e.message : String(e));
  }
}

/** Exactly `names.length` positionals, the trailing `optional` of them may be missing. */
export function positionals(
  given: readonly string[],
  names: readonly string[],
  optional = 0,
): (string | undefined)[] {
  const required = names.length - optional;
  if (given.length < required)
    throw usageError(`missing ${names.slice(given.length, required).join(' and ')}`);
  if (given.length > names.length) throw usageError(`unexpected argument '${given[names.length]}'`);
  return names.map((_, i) => given[i]);
}

// --- names ------------------------------------------------------------------------------------

/** A unikernel or block device: `hello` (≡ `:hello`) or `user:web`, never a path. */
export function labelledName(text: string): Name & { readonly label: Label } {
  const name = parseName(text);
  if (!name.ok) throw usageError(name.error.message);
  if (name.value.label === null) {
    throw usageError(`path used instead of name: ${JSON.stringify(text)} (a name is like hello or user:web)`);
  }
  return name.value as Name & { readonly label: Label };
}

/** What a listing covers: a name (exactly that one) or a path (`user:`); default the root. */
export function listingName(text: string | undefined): Name {
  if (text === undefined) return pathName([]);
  const name = parseName(text);
  if (!name.ok) throw usageError(name.error.message);
  return name.value;
}

/** A path (`user`, `user:`, `a:b`; `:` or nothing is the root) as a header name. */
export function pathArgument(text: string | undefined): Name {
  if (text === undefined || text === ':') return pathName([]);
  const path = parsePath(text.endsWith(':') ? text.slice(0, -1) : text);
  if (!path.ok) throw usageError(path.error.message);
  return pathName(path.value);
}

/** A whole number in [min, max] from a flag or argument. */
export function wholeNumber(text: string, what: string, min: number, max = 2 ** 31 - 1): number {
  const n = readWholeNumber(text, what, min, max);
  if (!n.ok) throw usageError(n.error.message);
  return n.value;
}

// --- talking to petreld -----------------------------------------------------------------------

/** One subcommand's conversation: the target, the output mode and the I/O. */
export class Session {
  readonly io: CliIo;
  readonly json: boolean;
  readonly #target: Target;
  #transport: Transport | null = null;
  /** The transfer whose progress is on show, if any; the transport's meter feeds it. */
  #progress: ProgressLine | null = null;

  /** Checks the connection flags; call it before other validation reads files. */
  constructor(io: CliIo, flags: ConnectionFlags & { readonly json?: boolean | undefined }) {
    const target = parseTarget(flags);
    if (!target.ok) throw usageError(target.error);
    this.io = io;
    this.json = flags.json === true;
    this.#target = target.value;
  }

  get target(): Target {
    return this.#target;
  }

  /** Progress is for people: on a terminal's stderr, and never beside JSON output. */
  get #showsProgress(): boolean {
    return !this.json && this.io.isTty?.stderr === true;
  }

  async #open(): Promise<Transport> {
    if (this.#transport === null) {
      const meter: TransferMeter = {
        sent: (bytes) => this.#progress?.sent(bytes),
        received: (bytes) => this.#progress?.received(bytes),
      };
      const opened = await openTarget(this.#target, meter);
      if (!opened.ok) throw transportStop(opened.error);
      this.#transport = opened.value;
    }
    return this.#transport;
  }

  /**
   * Runs `transfer` with a progress line of its bytes in `direction` (`total` when known) on
   * stderr if that is a terminal and the output not JSON; the line ends when `transfer` does.
   */
  async withProgress<T>(
    label: string,
    direction: Direction,
    total: number | null,
    transfer: () => Promise<T>,
  ): Promise<T> {
    if (!this.#showsProgress) return transfer();
    const line = new ProgressLine(this.io, `petrel ${label}`, direction, total);
    this.#progress = line;
    try {
      return await transfer();
    } finally {
      this.#progress = null;
      line.finish();
    }
  }

  /** Sends one command; a Failure stops with exit 1 and petreld's text. */
  async ask(name: Name, command: Command, input?: AsyncIterable<Uint8Array>): Promise<Reply> {
    const transport = await this.#open();
    const answer = await transport.request(name, command, input);
    if (!answer.ok) throw transportStop(answer.error);
    if (answer.value.kind === 'failure') throw new Stop(CLIENT_EXIT.REFUSED, answer.value.message);
    return answer.value.reply;
  }

  /**
   * Sends a command of Petrel's own (differences (l)) that Albatross and older petrelds do not
   * know: they close the connection unanswered (or refuse the certificate that carries it), so
   * any failure is "not known here", with its reason, not a stop.
   */
  async askExtension(
    name: Name,
    command: Command,
  ): Promise<{ readonly ok: true; readonly reply: Reply } | { readonly ok: false; readonly reason: string }> {
    const transport = await this.#open();
    const answer = await transport.request(name, command);
    if (!answer.ok) return { ok: false, reason: answer.error.message };
    if (answer.value.kind === 'failure') return { ok: false, reason: answer.value.message };
    return { ok: true, reply: answer.value.reply };
  }

  /** Opens a stream; a Failure answer stops with exit 1. */
  async subscribe(name: Name, command: Command): Promise<{ reply: Reply; stream: Stream }> {
    const transport = await this.#open();
    const opened = await transport.stream(name, command);
    if (!opened.ok) throw transportStop(opened.error);
    const stream = opened.value;
    if (stream.answer.kind === 'failure') {
      stream.close();
      throw new Stop(CLIENT_EXIT.REFUSED, stream.answer.message);
    }
    return { reply: stream.answer.reply, stream };
  }

  /** Human text, or the JSON value on one indented document. */
  print(human: () => string, json: () => unknown): void {
    this.io.stdout(this.json ? `${JSON.stringify(json(), null, 2)}\n` : human());
  }

  /** A string reply ("created unikernel") as text or `{"reply": …}`. */
  printText(name: Name, reply: Reply): void {
    const text = expectReply(reply, 'string').text;
    this.print(
      () => `${text}\n`,
      () => ({ name: printName(name), reply: text }),
    );
  }
}

/** Narrows a reply to the type the command expects; anything else is a protocol error. */
export function expectReply<T extends Reply['type']>(reply: Reply, type: T): Extract<Reply, { type: T }> {
  if (reply.type !== type) {
    throw new Stop(CLIENT_EXIT.PROTOCOL, `petreld answered ${reply.type} where ${type} was expected`);
  }
  return reply as Extract<Reply, { type: T }>;
}

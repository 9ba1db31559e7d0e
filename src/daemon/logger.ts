// petreld's logger: pino, writing JSON lines, or one human line an event (pino-pretty, in this
// process) when the format says pretty or says auto and standard output is a terminal.

import pino, { type DestinationStream, type Logger } from 'pino';
import { prettyFactory } from 'pino-pretty';
import type { LogFormat, LogLevel } from './config.js';

export interface LoggerOptions {
  readonly level: LogLevel;
  readonly format: LogFormat;
  /** Where lines go: default standard output (fd 1). */
  readonly fd?: 1 | 2;
}

/** `auto` means pretty exactly when the destination is a terminal. */
export function resolveLogFormat(format: LogFormat, fd: 1 | 2 = 1): 'json' | 'pretty' {
  if (format !== 'auto') return format;
  const stream = fd === 1 ? process.stdout : process.stderr;
  return stream.isTTY === true ? 'pretty' : 'json';
}

/**
 * The daemon's logger. Pretty output is formatted synchronously in this process, not in a pino
 * worker transport: a transport loads its module by path (which a bundle or a package layout
 * breaks) and may lose the last lines when the process exits on a fatal error.
 */
export function createLogger(options: LoggerOptions): Logger {
  const fd = options.fd ?? 1;
  const base = { pid: process.pid };
  if (resolveLogFormat(options.format, fd) === 'json') {
    return pino({ level: options.level, base }, pino.destination(fd));
  }
  const output = fd === 1 ? process.stdout : process.stderr;
  const prettify = prettyFactory({
    colorize: output.isTTY === true && process.env.NO_COLOR === undefined,
    singleLine: true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname',
  });
  const destination: DestinationStream = {
    write(line: string): void {
      output.write(prettify(line));
    },
  };
  return pino({ level: options.level, base }, destination);
}

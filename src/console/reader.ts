// Reads one unikernel's console FIFO (semantics §8.3, §11.1): the read end is opened
// non-blocking BEFORE the tender opens the write end, and reading starts once the tender runs,
// so end-of-file means "every writer (the tender) has gone". The FIFO is always drained.

import { constants, open } from 'node:fs';
import { Socket } from 'node:net';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import { LineSplitter } from './lines.js';

export interface ConsoleReader {
  /** Starts draining; call once the tender holds the write end. */
  start(): void;
  /** Resolves at end of file (or on a read error), after the last lines were delivered. */
  readonly done: Promise<void>;
  /** Stops reading for a while (flow control); the tender blocks once the FIFO is full. */
  pause(): void;
  resume(): void;
  /** Stops reading and closes the descriptor (used when the launch is undone). */
  close(): void;
}

/** Called with the complete lines of one read and the wall-clock time (ms) of that read. */
export type LineSink = (lines: Buffer[], timestamp: number) => void;

function openReadEnd(fifo: string): Promise<Result<number, PetrelError<'E_CONSOLE_OPEN'>>> {
  return new Promise((resolve) => {
    open(fifo, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW, (error, fd) => {
      if (error === null) resolve(ok(fd));
      else resolve(err('E_CONSOLE_OPEN', `opening console ${fifo}: ${error.message}`, { path: fifo }));
    });
  });
}

export async function openConsoleReader(
  fifo: string,
  sink: LineSink,
  now: () => number = Date.now,
): Promise<Result<ConsoleReader, PetrelError<'E_CONSOLE_OPEN'>>> {
  const fd = await openReadEnd(fifo);
  if (!fd.ok) return fd;
  let socket: Socket | null = null;
  let finish: () => void = () => undefined;
  const done = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const splitter = new LineSplitter();
  return ok({
    done,
    start() {
      if (socket !== null) return;
      socket = new Socket({ fd: fd.value, readable: true, writable: false });
      socket.on('data', (chunk: Buffer) => {
        const lines = splitter.push(chunk);
        if (lines.length > 0) sink(lines, now());
      });
      socket.once('close', () => finish());
      // A read error ends the console like end of file does; the tender keeps running.
      socket.on('error', () => socket?.destroy());
    },
    pause() {
      socket?.pause();
    },
    resume() {
      socket?.resume();
    },
    close() {
      if (socket === null) {
        socket = new Socket({ fd: fd.value, readable: true, writable: false });
        socket.once('close', () => finish());
      }
      socket.destroy();
    },
  });
}

// The real process I/O behind CliIo: stdout/stderr streams, the file system, the terminal and
// the interrupt signals. Every part is set up when first used: a short command pays for nothing
// it does not touch (node:fs/promises, node:stream/promises, a stderr it never writes to).

import { createReadStream, createWriteStream } from 'node:fs';
import type { CliIo } from './command.js';

async function readStdin(): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

let interrupt: AbortController | null = null;

/**
 * One controller for the process, aborted by the first SIGINT or SIGTERM; a second signal
 * exits at once (128 + signal number) in case the clean ending hangs.
 */
function interrupted(): AbortSignal {
  if (interrupt !== null) return interrupt.signal;
  const controller = new AbortController();
  interrupt = controller;
  for (const [signal, number] of [
    ['SIGINT', 2],
    ['SIGTERM', 15],
  ] as const) {
    process.on(signal, () => {
      if (controller.signal.aborted) process.exit(128 + number);
      controller.abort(signal);
    });
  }
  return controller.signal;
}

/** What a shell reports for a process that SIGPIPE ended (128 + 13). */
export const READER_GONE = 141;

/**
 * When the reader of our output goes away (`petrel … | head`), stop at once and quietly with
 * READER_GONE, as a Unix tool that SIGPIPE ends does, whatever the command was printing. Node
 * ignores SIGPIPE and reports EPIPE as an error event on the stream instead, which, unhandled,
 * ends the process with a stack trace.
 */
function exitQuietlyWhenReaderGoes(stream: NodeJS.WriteStream): NodeJS.WriteStream {
  stream.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(READER_GONE);
    throw e;
  });
  return stream;
}

/** process.stdout or process.stderr (Node makes each on first access), guarded as above. */
function lazyOutput(open: () => NodeJS.WriteStream): () => NodeJS.WriteStream {
  let stream: NodeJS.WriteStream | null = null;
  return () => {
    stream ??= exitQuietlyWhenReaderGoes(open());
    return stream;
  };
}

/** The real process I/O; a write to a reader that went away ends the process (READER_GONE). */
export function processIo(): CliIo {
  const stdout = lazyOutput(() => process.stdout);
  const stderr = lazyOutput(() => process.stderr);
  return {
    stdout: (chunk) => {
      stdout().write(chunk);
    },
    stderr: (text) => {
      stderr().write(text);
    },
    readFile: async (path) =>
      path === '-' ? readStdin() : (await import('node:fs/promises')).readFile(path),
    writeFile: async (path, data) => (await import('node:fs/promises')).writeFile(path, data),
    openRead: async (path) => {
      if (path === '-') return { size: null, chunks: process.stdin };
      const { size } = await (await import('node:fs/promises')).stat(path);
      // Opened before returning, so a missing or unreadable file fails here, not mid-stream.
      const stream = createReadStream(path, { highWaterMark: 64 * 1024 });
      await new Promise<void>((resolve, reject) => {
        stream.once('open', () => resolve());
        stream.once('error', reject);
      });
      return { size, chunks: stream };
    },
    writeChunks: async (path, chunks) => {
      const [{ Readable }, { pipeline }] = await Promise.all([
        import('node:stream'),
        import('node:stream/promises'),
      ]);
      await pipeline(Readable.from(chunks), createWriteStream(path));
    },
    isTty: {
      get stdout() {
        return stdout().isTTY === true;
      },
      get stderr() {
        return stderr().isTTY === true;
      },
    },
    interrupted,
  };
}

// What every `petrel` subcommand module provides, and the I/O it is given (injected so tests run
// subcommands without a process, files or a terminal).

export interface CliIo {
  /** Standard output; binary output is written as bytes. */
  readonly stdout: (chunk: string | Uint8Array) => void;
  readonly stderr: (text: string) => void;
  /** Reads a whole file; `-` is standard input. */
  readonly readFile: (path: string) => Promise<Uint8Array>;
  readonly writeFile: (path: string, data: Uint8Array) => Promise<void>;
  // Optional streaming and terminal access, for the client's block images and followed streams.
  // Absent members fall back to readFile/writeFile, "not a terminal" and "never interrupted".
  /** A file in pieces, with its size when known (`-` = standard input, size null). */
  readonly openRead?: (
    path: string,
  ) => Promise<{ readonly size: number | null; readonly chunks: AsyncIterable<Uint8Array> }>;
  /** Writes pieces to a file as they arrive, so a large dump never sits in memory. */
  readonly writeChunks?: (path: string, chunks: AsyncIterable<Uint8Array>) => Promise<void>;
  readonly isTty?: { readonly stdout: boolean; readonly stderr: boolean };
  /**
   * A signal aborted on the first SIGINT or SIGTERM (followed streams end cleanly on it).
   * Calling it is what installs the handlers, so commands that never ask keep Node's defaults.
   */
  readonly interrupted?: () => AbortSignal;
}

export interface CliCommand {
  readonly name: string;
  readonly usage: string;
  /** Runs with the arguments after the subcommand's name; resolves to the exit code. */
  run(args: readonly string[], io: CliIo): Promise<number>;
}

/** Exit codes: success, a failure of the work itself, a command line that could not be understood. */
export const EXIT = { OK: 0, FAILURE: 1, USAGE: 2 } as const;

// Cuts a tender's console bytes into lines as Albatross' console does (semantics §11.1), with
// memory bounded per VM: a line that reaches READ_SIZE bytes without a newline is cut once.

/** Albatross reads the FIFO 512 bytes at a time; its cutting rules are stated per such read. */
export const READ_SIZE = 512;
const TRUNCATED = Buffer.from(' [truncated]');
const NEWLINE = 0x0a;
/** The slack of every splitter that holds none: one per running unikernel would cost a Buffer
 * and an ArrayBuffer each. Never written to (zero bytes). */
const NO_SLACK = Buffer.alloc(0);

export class LineSplitter {
  /** The unterminated tail of earlier reads, always shorter than READ_SIZE. */
  #slack: Buffer = NO_SLACK;
  /** After a cut, input is dropped up to and including the next newline. */
  #dropping = false;

  /** Bytes pushed that are not part of a line yet (the unterminated tail). */
  get pending(): number {
    return this.#slack.length;
  }

  /**
   * Feeds bytes as they came from the FIFO; returns the complete, non-empty lines (without
   * their newline). Processing happens in READ_SIZE slices so the result is what Albatross
   * produces for the same bytes read in full reads.
   */
  push(chunk: Uint8Array): Buffer[] {
    const lines: Buffer[] = [];
    for (let offset = 0; offset < chunk.length; offset += READ_SIZE) {
      this.#read(
        Buffer.from(chunk.buffer, chunk.byteOffset + offset, Math.min(READ_SIZE, chunk.length - offset)),
        lines,
      );
    }
    return lines;
  }

  #read(data: Buffer, lines: Buffer[]): void {
    let input = data;
    if (this.#dropping) {
      const end = input.indexOf(NEWLINE);
      if (end < 0) return;
      this.#dropping = false;
      input = input.subarray(end + 1);
    }
    let start = 0;
    let end = input.indexOf(NEWLINE);
    while (end >= 0) {
      const line =
        this.#slack.length === 0
          ? input.subarray(start, end)
          : Buffer.concat([this.#slack, input.subarray(start, end)]);
      this.#slack = NO_SLACK;
      if (line.length > 0) lines.push(Buffer.from(line)); // copy: the chunk's memory is not kept
      start = end + 1;
      end = input.indexOf(NEWLINE, start);
    }
    const rest = input.subarray(start);
    if (this.#slack.length + rest.length >= READ_SIZE) {
      const pending = Buffer.concat([this.#slack, rest]);
      lines.push(Buffer.concat([pending.subarray(0, READ_SIZE), TRUNCATED]));
      this.#slack = NO_SLACK;
      this.#dropping = true;
    } else if (rest.length > 0) {
      this.#slack = Buffer.concat([this.#slack, rest]);
    }
  }
}

// multipart/form-data (RFC 7578, RFC 2046 §5.1) read incrementally: each chunk as it arrives
// becomes part heads and pieces of part bodies, so a file part passes through in the chunks it
// came in and is never held whole (at most a delimiter's length of it waits for the next chunk).
// Pure; no library: the format is small, and the streaming ones for Node either buffer a part
// to disk or memory or bring a dependency tree for what is fifty lines.

/** What a chunk of the body turned out to hold. */
export type PartEvent =
  | { readonly kind: 'part'; readonly name: string; readonly filename: string | null }
  | { readonly kind: 'data'; readonly bytes: Buffer }
  | { readonly kind: 'part-end' }
  /** The closing delimiter: anything after it (the epilogue) is ignored. */
  | { readonly kind: 'done' };

export class MultipartError extends Error {}

/** The most a part's head (its header lines) may take. */
export const MAX_PART_HEAD = 8 * 1024;
/** The most the preamble before the first delimiter may take. */
export const MAX_PREAMBLE = 64 * 1024;

/** The boundary of a `multipart/form-data` Content-Type, or an error saying what is wrong. */
export function boundaryOf(contentType: string): string | MultipartError {
  const [type, ...params] = splitParams(contentType);
  if (type?.trim().toLowerCase() !== 'multipart/form-data')
    return new MultipartError(
      `a multipart create is multipart/form-data, not ${JSON.stringify(type?.trim())}`,
    );
  for (const param of params) {
    const m = /^\s*boundary\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s";]+))\s*$/i.exec(param);
    if (m === null) continue;
    const boundary = m[1] === undefined ? (m[2] as string) : m[1].replace(/\\(.)/g, '$1');
    // RFC 2046: 1 to 70 characters, not ending in a space.
    if (boundary.length < 1 || boundary.length > 70 || boundary.endsWith(' '))
      return new MultipartError(
        `the multipart boundary must have 1 to 70 characters, not ${boundary.length}`,
      );
    return boundary;
  }
  return new MultipartError('the multipart Content-Type has no boundary parameter');
}

type State = 'preamble' | 'after-delimiter' | 'head' | 'body' | 'done';

export class MultipartReader {
  /** CRLF--boundary: what ends a part's body (the first delimiter is read as if a CRLF preceded it). */
  readonly #delimiter: Buffer;
  #pending: Buffer;
  #state: State = 'preamble';
  #preamble = 0;

  constructor(boundary: string) {
    this.#delimiter = Buffer.from(`\r\n--${boundary}`, 'latin1');
    this.#pending = Buffer.from('\r\n', 'latin1');
  }

  get done(): boolean {
    return this.#state === 'done';
  }

  /** The events a chunk completes; throws a MultipartError for a body that is not multipart. */
  push(chunk: Buffer): PartEvent[] {
    if (this.#state === 'done') return [];
    this.#pending = this.#pending.length === 0 ? chunk : Buffer.concat([this.#pending, chunk]);
    const events: PartEvent[] = [];
    for (;;) {
      const before: State = this.#state;
      const progressed = this.#step(events);
      if (!progressed && before === this.#state) return events;
    }
  }

  /** The body has ended: it must have ended with the closing delimiter. */
  end(): void {
    if (this.#state !== 'done')
      throw new MultipartError('the multipart body is truncated: it ended before its closing boundary');
  }

  /** One step of the state machine; false when it needs more bytes. */
  #step(events: PartEvent[]): boolean {
    const pending = this.#pending;
    const delimiter = this.#delimiter;
    switch (this.#state) {
      case 'preamble': {
        const at = pending.indexOf(delimiter);
        if (at < 0) {
          const keep = Math.min(pending.length, delimiter.length - 1);
          this.#preamble += pending.length - keep;
          if (this.#preamble > MAX_PREAMBLE)
            throw new MultipartError(`no multipart boundary within the first ${MAX_PREAMBLE} bytes`);
          this.#pending = pending.subarray(pending.length - keep);
          return false;
        }
        this.#pending = pending.subarray(at + delimiter.length);
        this.#state = 'after-delimiter';
        return true;
      }
      case 'after-delimiter': {
        // Transport padding (spaces, tabs), then CRLF for another part or "--" for the end.
        let i = 0;
        while (i < pending.length && (pending[i] === 0x20 || pending[i] === 0x09)) i++;
        if (i > 256) throw new MultipartError('a multipart delimiter line is malformed');
        if (pending.length < i + 2) return false;
        const two = pending.toString('latin1', i, i + 2);
        this.#pending = pending.subarray(i + 2);
        if (two === '--') {
          this.#state = 'done';
          this.#pending = Buffer.alloc(0);
          events.push({ kind: 'done' });
          return false;
        }
        if (two !== '\r\n')
          throw new MultipartError('a multipart delimiter is followed by neither CRLF nor "--"');
        this.#state = 'head';
        return true;
      }
      case 'head': {
        // An empty head (no header lines) is CRLF at once.
        const end = pending.subarray(0, 2).toString('latin1') === '\r\n' ? 0 : pending.indexOf('\r\n\r\n');
        if (end < 0) {
          if (pending.length > MAX_PART_HEAD)
            throw new MultipartError(`a multipart part's headers exceed ${MAX_PART_HEAD} bytes`);
          return false;
        }
        if (end > MAX_PART_HEAD)
          throw new MultipartError(`a multipart part's headers exceed ${MAX_PART_HEAD} bytes`);
        const head = pending.toString('utf8', 0, end);
        this.#pending = pending.subarray(end === 0 ? 2 : end + 4);
        events.push(partOf(head));
        this.#state = 'body';
        return true;
      }
      case 'body': {
        const at = pending.indexOf(delimiter);
        if (at < 0) {
          // All but what could be the start of a delimiter goes on now.
          const keep = Math.min(pending.length, delimiter.length - 1);
          const safe = pending.length - keep;
          if (safe > 0) events.push({ kind: 'data', bytes: pending.subarray(0, safe) });
          this.#pending = pending.subarray(safe);
          return false;
        }
        if (at > 0) events.push({ kind: 'data', bytes: pending.subarray(0, at) });
        events.push({ kind: 'part-end' });
        this.#pending = pending.subarray(at + delimiter.length);
        this.#state = 'after-delimiter';
        return true;
      }
      case 'done':
        return false;
    }
  }
}

/** A part's head: its Content-Disposition must be form-data with a name. */
function partOf(head: string): PartEvent {
  const lines = head === '' ? [] : head.split('\r\n');
  const disposition = lines.find((l) => /^content-disposition\s*:/i.test(l));
  if (disposition === undefined) throw new MultipartError('a multipart part has no Content-Disposition');
  const value = disposition.slice(disposition.indexOf(':') + 1);
  const [kind, ...params] = splitParams(value);
  if (kind?.trim().toLowerCase() !== 'form-data')
    throw new MultipartError(
      `a multipart part's disposition is ${JSON.stringify(kind?.trim())}, not form-data`,
    );
  let name: string | null = null;
  let filename: string | null = null;
  for (const param of params) {
    const m = /^\s*([A-Za-z*]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s";]*))\s*$/.exec(param);
    if (m === null) continue;
    const text = m[2] === undefined ? (m[3] as string) : m[2].replace(/\\(.)/g, '$1');
    const key = (m[1] as string).toLowerCase();
    if (key === 'name') name = text;
    else if (key === 'filename') filename = text;
  }
  if (name === null) throw new MultipartError('a multipart part has no name');
  return { kind: 'part', name, filename };
}

/** `a; b="x;y"; c` split at the semicolons outside quotes. */
function splitParams(text: string): string[] {
  const out: string[] = [];
  let current = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (quoted && c === '\\' && i + 1 < text.length) {
      current += c + (text[++i] as string);
      continue;
    }
    if (c === '"') quoted = !quoted;
    if (c === ';' && !quoted) {
      out.push(current);
      current = '';
    } else current += c;
  }
  out.push(current);
  return out;
}

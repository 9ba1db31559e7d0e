// A create sent as multipart/form-data (a browser's form, `curl -F`): the parts before the image
// are the create's parameters (named as its query parameters, which they add to), the part named
// `image` is streamed to petreld as it arrives, and it must be the last part (its parameters must
// be known before its first byte goes out). Read with src/web/multipart.ts, never held whole.

import type { IncomingMessage } from 'node:http';
import type { Result } from '../resources/errors.js';
import type { Command } from '../wire/types.js';
import { type ApiResponse, apiError, EXIT } from './api.js';
import { withinStall } from './channel.js';
import { createCommand } from './create.js';
import { boundaryOf, MultipartError, MultipartReader, type PartEvent } from './multipart.js';

/** The most the parameter parts together may take. */
export const MAX_FIELD_BYTES = 64 * 1024;
/** What a multipart body may carry beyond the image: its parameters, heads and delimiters. */
export const MULTIPART_ALLOWANCE = MAX_FIELD_BYTES + 256 * 1024;

export interface MultipartCreate {
  readonly command: Command;
  /** The image part's bytes as they arrive; it throws when the rest of the body is malformed. */
  readonly image: AsyncIterable<Buffer>;
  /** Why the body was refused after the image began (then petreld was sent no end: nothing made). */
  failure(): MultipartError | null;
}

export const multipartError = (message: string): ApiResponse =>
  apiError(400, 'E_WEB_MULTIPART', message, EXIT.usage);

/**
 * Reads the parts before the image (at most MAX_FIELD_BYTES of them, each read within
 * `stallMs`) and makes the create command from them and `query`; the image is left to stream.
 */
export async function readMultipartCreate(
  request: IncomingMessage,
  query: URLSearchParams,
  stallMs: number,
): Promise<Result<MultipartCreate, ApiResponse>> {
  const boundary = boundaryOf(request.headers['content-type'] ?? '');
  if (boundary instanceof MultipartError) return { ok: false, error: multipartError(boundary.message) };
  const reader = new MultipartReader(boundary);
  const chunks = request[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  let queued: PartEvent[] = [];
  /** The next event, reading on as needed; null when the body has ended. */
  const next = async (timed: boolean): Promise<PartEvent> => {
    while (queued.length === 0) {
      const read = timed ? await withinStall(chunks.next(), stallMs) : await chunks.next();
      if (read === null) throw new StallError(stallMs);
      if (read.done === true) {
        reader.end();
        throw new MultipartError('the multipart body is truncated');
      }
      queued = reader.push(read.value);
    }
    return queued.shift() as PartEvent;
  };
  const params = new URLSearchParams(query);
  let fieldBytes = 0;
  try {
    let field: { name: string; bytes: Buffer[] } | null = null;
    for (;;) {
      const event = await next(true);
      if (event.kind === 'done')
        return { ok: false, error: multipartError('the multipart body has no part named "image"') };
      if (event.kind === 'part') {
        if (event.name === 'image') break;
        field = { name: event.name, bytes: [] };
      } else if (event.kind === 'data' && field !== null) {
        fieldBytes += event.bytes.length;
        if (fieldBytes > MAX_FIELD_BYTES)
          return {
            ok: false,
            error: multipartError(
              `the multipart part ${JSON.stringify(field.name)} is too large: the parameters may take ${MAX_FIELD_BYTES} bytes`,
            ),
          };
        field.bytes.push(Buffer.from(event.bytes));
      } else if (event.kind === 'part-end' && field !== null) {
        params.append(field.name, Buffer.concat(field.bytes).toString('utf8'));
        field = null;
      }
    }
  } catch (e) {
    if (e instanceof StallError)
      return { ok: false, error: apiError(408, 'E_TLS_FRAME_STALLED', e.message, EXIT.usage) };
    if (e instanceof MultipartError) return { ok: false, error: multipartError(e.message) };
    throw e;
  }
  const command = createCommand(params);
  if (!command.ok) return command;
  let failure: MultipartError | null = null;
  async function* image(): AsyncGenerator<Buffer> {
    try {
      for (;;) {
        const event = await next(false);
        if (event.kind === 'data') yield event.bytes;
        else if (event.kind === 'part-end') break;
      }
      // Nothing may follow but the closing delimiter: a whole body or none.
      const last = await next(false);
      if (last.kind !== 'done')
        throw new MultipartError('the image must be the last part of a multipart create');
    } catch (e) {
      if (e instanceof MultipartError) failure = e;
      throw e;
    }
  }
  return { ok: true, value: { command: command.value, image: image(), failure: () => failure } };
}

class StallError extends Error {
  constructor(ms: number) {
    super(`the body paused for ${ms} ms`);
  }
}

// The web API's unikernels (docs/web.md "The API"): list, get, create (raw or multipart), replace,
// destroy, restart, their images, their last hour of samples, and the restart history.

import { ok } from '../../resources/errors.js';
import { printName } from '../../resources/name.js';
import {
  type ApiResponse,
  destroyUnikernel,
  getUnikernel,
  listUnikernels,
  nameUnder,
  restartUnikernel,
} from '../api.js';
import { createCommand } from '../create.js';
import { listExits } from '../exits.js';
import { MULTIPART_ALLOWANCE, multipartError, readMultipartCreate } from '../multipart-create.js';
import { replaceCommand } from '../replace.js';
import { hasBody, tooLarge } from '../respond.js';
import { relayImageDownload } from '../streams.js';
import { type Call, type Handler, relay, withBody } from './call.js';

/** GET /api/v1/unikernels?limit=N&after=NAME */
export const list: Handler = (call) => listUnikernels(call.token.path, call.query, call.ask);

/** GET /api/v1/unikernels/{name} */
export const get: Handler = (call) => getUnikernel(call.token.path, call.text, call.ask);

/** DELETE /api/v1/unikernels/{name} */
export const destroy: Handler = (call) => destroyUnikernel(call.token.path, call.text, call.ask);

/** POST /api/v1/unikernels/{name}/restart */
export const restart: Handler = (call) => restartUnikernel(call.token.path, call.text, call.ask);

/** PUT /api/v1/unikernels/{name}?mem=…: the body is the image, streamed to petreld as it comes. */
export const create: Handler = (call) => {
  if (/^multipart\//i.test(call.request.headers['content-type'] ?? '')) return createMultipart(call);
  return withBody(call, createCommand(call.query), 'image', 201);
};

/**
 * The same create as multipart/form-data (multipart-create.ts): the parts before the image
 * are its parameters, the image part is streamed as it arrives; a body found malformed once
 * the image has begun is refused (petreld gets no end of it, so nothing is created).
 */
async function createMultipart(call: Call): Promise<ApiResponse> {
  const { request } = call;
  const name = nameUnder(call.token.path, call.text);
  if (!name.ok) return name.error;
  if (!hasBody(request))
    return multipartError('the multipart create has no body: its parts are the parameters and the image');
  const limit = call.web.maxFrameBytes;
  const length = Number(request.headers['content-length'] ?? 0);
  if (length > limit + MULTIPART_ALLOWANCE) return tooLarge(length, limit);
  const read = await readMultipartCreate(request, call.query, call.web.stallMs);
  if (!read.ok) return read.error;
  const reply = await withBody(call, ok(read.value.command), 'image', 201, read.value.image);
  const failure = read.value.failure();
  return failure === null ? reply : multipartError(failure.message);
}

/** POST /api/v1/unikernels/{name}/replace: the answer comes once the check is over (Petrel (m)). */
export const replace: Handler = (call) => withBody(call, replaceCommand(call.query), 'image', 200);

/** GET /api/v1/unikernels/{name}/image: its image as stored (petrel get), relayed (streams.ts). */
export const image: Handler = (call) => relay(call, { type: 'unikernel-get', level: 0 }, relayImageDownload);

/** GET /api/v1/unikernels/{name}/samples: its last hour as the web layer sampled it (samples.ts). */
export const samples: Handler = async (call) => {
  const name = nameUnder(call.token.path, call.text);
  return name.ok ? { status: 200, body: call.web.sampler.json(printName(name.value)) } : name.error;
};

/** GET /api/v1/exits: the restart history of the unikernels at or below the caller (exits.ts). */
export const exits: Handler = (call) => listExits(call.token.path, call.ask);

// The web API's block devices: list, add, remove, and their content set from a request body or
// dumped into a response, each streamed as it comes, never held whole.

import { ok } from '../../resources/errors.js';
import { addBlock, listBlocks, removeBlock } from '../api.js';
import { relayBlockDump } from '../streams.js';
import { type Handler, relay, withBody } from './call.js';

/** GET /api/v1/blocks */
export const list: Handler = (call) => listBlocks(call.token.path, call.ask);

/** PUT /api/v1/blocks/{name}?size=MIB */
export const add: Handler = (call) => addBlock(call.token.path, call.text, call.query, call.ask);

/** DELETE /api/v1/blocks/{name} */
export const remove: Handler = (call) => removeBlock(call.token.path, call.text, call.ask);

/** PUT /api/v1/blocks/{name}/data: the body becomes the device's content, streamed as it comes. */
export const set: Handler = (call) =>
  withBody(call, ok({ type: 'block-set', compressed: false }), 'data', 200);

/** GET /api/v1/blocks/{name}/data: the device's content, relayed as petreld reads it (streams.ts). */
export const dump: Handler = (call) => relay(call, { type: 'block-dump', level: 0 }, relayBlockDump);

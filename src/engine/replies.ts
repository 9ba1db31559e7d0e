// The reply texts Albatross clients see (albatross-semantics.md §5–§7, §18), in one place so the
// engine's handlers and the tests speak the same words; and the shape of every engine answer.

import type { Data, Reply } from '../wire/types.js';

export const TEXT = {
  created: 'created unikernel',
  destroyed: 'destroyed unikernel',
  removedFromRestarting: 'destroyed: removed from restarting',
  destroyNotFound: 'destroy: not found',
  alreadyRunning: 'Unikernel with same name is already running',
  pathUsed: 'path used instead of name',
  nameUsed: 'name used',
  consoleFailed: 'could not create unikernel: console failed',
  getNotFound: 'get: no unikernel found',
  unknownCommand: 'unknown command',
  unexpectedCommand: 'unexpected command',
  policyAdded: 'added policy',
  policyUnchanged: 'no modification of policy',
  policyRemoved: 'removed policy',
  blockAdded: 'added block device',
  blockRemoved: 'removed block',
  blockSet: 'set block device',
  blockDataTooLarge: 'data exceeds block size',
  streamTooLarge: 'stream exceeds size',
  blockStreamFailed: 'streaming block device',
  blockReadStream: 'error while reading stream',
  blockWrite: 'error writing to file descriptor',
  blockOpen: 'error opening block device',
} as const;

export const unsupportedType = (typ: string) => `unsupported unikernel type: ${typ}`;
export const invalidLevel = (level: number) => `invalid compression level ${level}`;
export const blockNotFound = (verb: 'set' | 'dump') => `${verb} block: not found`;
export const blockInUse = (verb: 'set' | 'dump') => `${verb} block: is in use`;

export type EngineResponse =
  | { readonly kind: 'reply'; readonly reply: Reply }
  | { readonly kind: 'failure'; readonly message: string }
  /** A reply followed by data frames (block dump [6]). */
  | { readonly kind: 'stream'; readonly reply: Reply; readonly data: AsyncIterable<Data> }
  /**
   * A unikernel image read from the store (get, Success [6]): the reply's image is the `length`
   * bytes of `chunks`, sent as they are read (see wire `imageReplyHead`). Iterating them to the
   * end, or stopping early, closes the file.
   */
  | {
      readonly kind: 'image';
      readonly compressed: boolean;
      readonly length: number;
      readonly chunks: AsyncIterable<Uint8Array>;
    };

export const reply = (r: Reply): EngineResponse => ({ kind: 'reply', reply: r });
export const text = (t: string): EngineResponse => reply({ type: 'string', text: t });
export const failure = (message: string): EngineResponse => ({ kind: 'failure', message });

// The reply texts Albatross clients see (albatross-semantics.md §5–§7, §18), in one place so the
// engine's handlers and the tests speak the same words.

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

// Public surface of src/wire: the Albatross wire codec (pure: no sockets, no files).
// Decoders take bytes and return Result<T, WireError>; encoders take typed values and do the same.

export {
  ALBATROSS_OID,
  type CertExtension,
  certificateCommand,
  commandFromCertificate,
  decodeCertExtension,
  encodeCertExtension,
  findCertExtension,
} from './cert.js';
export { INFO_TAG } from './command.js';
export { macFromBytes, parseMac } from './config.js';
export type { WireError, WireErrorCode, WireResult } from './errors.js';
export {
  chunkFrames,
  DEFAULT_MAX_FRAME,
  END_OF_STREAM,
  type FrameEvent,
  FrameReader,
  type FrameReaderOptions,
  frame,
  frameHeader,
  readFrames,
  splitFrames,
} from './framing.js';
export {
  decodeWire,
  encodeWire,
  type ImageReplyHead,
  INFO_REPLY_TAG,
  imageReplyHead,
  readImageReplyHead,
} from './message.js';
export {
  consoleLine,
  createConfig,
  infoReply,
  infoV3,
  infoV5,
  restartArguments,
  upgradeConfigV0,
  upgradeConfigV1,
  upgradeConfigV2,
  upgradeConfigV3,
  upgradeConfigV4,
  upgradeState,
} from './shapes.js';
export { decodeState, encodeState } from './state.js';
export type * from './types.js';
export { WIRE_VERSION } from './types.js';

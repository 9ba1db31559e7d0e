// The wire codec's error vocabulary: every malformed input becomes a PetrelError whose code starts
// with E_WIRE_ and whose message names what was wrong and the byte offset where it was found.

import { err, type PetrelError, type Result } from '../resources/errors.js';

export type WireErrorCode =
  /** The input ended inside a value (a length points past the end). */
  | 'E_WIRE_TRUNCATED'
  /** Bytes left over after a complete value (`trailing bytes`). */
  | 'E_WIRE_TRAILING'
  /** Indefinite, non-minimal or oversized DER length. */
  | 'E_WIRE_LENGTH'
  /** An identifier other than the grammar allows here, or an unknown CHOICE alternative. */
  | 'E_WIRE_TAG'
  /** A tag the grammar reserves or no longer supports (log, pre-2.0 unikernel tags, state [7]). */
  | 'E_WIRE_UNSUPPORTED'
  /** Empty or non-minimal INTEGER. */
  | 'E_WIRE_INTEGER'
  /** An INTEGER outside OCaml's 63-bit range, or outside the range its field allows. */
  | 'E_WIRE_INT_RANGE'
  | 'E_WIRE_BOOLEAN'
  | 'E_WIRE_NULL'
  /** An int64 OCTET STRING that is not exactly 8 bytes. */
  | 'E_WIRE_INT64'
  | 'E_WIRE_MAC'
  /** A unikernel-exits entry (Petrel (l)) that describes no exit. */
  | 'E_WIRE_EXIT'
  | 'E_WIRE_TIME'
  /** A UTF8String that is not valid UTF-8 (Petrel never repairs strings, so it refuses them). */
  | 'E_WIRE_UTF8'
  | 'E_WIRE_NAME'
  | 'E_WIRE_VERSION'
  | 'E_WIRE_POLICY'
  /** The state file names a unikernel or policy twice. */
  | 'E_WIRE_DUPLICATE'
  /** A frame whose length prefix exceeds the configured limit (checked before allocating). */
  | 'E_WIRE_FRAME_TOO_LARGE'
  /** A frame cut short by the end of a file. */
  | 'E_WIRE_FRAME_TRUNCATED'
  /** A certificate that cannot be walked to its extensions. */
  | 'E_WIRE_CERT'
  /** A value that cannot be encoded (out-of-range number, invalid time, lone surrogate, …). */
  | 'E_WIRE_ENCODE'
  /** `petrel wire encode` input that is not JSON or does not describe a message. */
  | 'E_WIRE_JSON'
  /** A bug in the codec: an unexpected exception, caught so that no input can crash a caller. */
  | 'E_WIRE_INTERNAL';

export type WireError = PetrelError<WireErrorCode>;
export type WireResult<T> = Result<T, WireError>;

/**
 * Thrown inside the codec and turned into a Result at its entry points. Decoding is a deep,
 * schema-driven recursion; a throwable keeps every step a plain expression and costs nothing
 * on the success path.
 */
export class WireFault extends Error {
  readonly code: WireErrorCode;
  readonly offset: number | null;
  readonly extra: Readonly<Record<string, unknown>> | undefined;
  constructor(code: WireErrorCode, what: string, offset: number | null, extra?: Record<string, unknown>) {
    super(what);
    this.code = code;
    this.offset = offset;
    this.extra = extra;
  }
}

export function fault(
  code: WireErrorCode,
  what: string,
  offset: number | null,
  extra?: Record<string, unknown>,
): never {
  throw new WireFault(code, what, offset, extra);
}

/** Builds the error value; `offset` is added to the message and to `details.offset`. */
export function wireError(
  code: WireErrorCode,
  what: string,
  offset: number | null,
  extra?: Record<string, unknown>,
): WireError {
  const message = offset === null ? what : `${what} at byte ${offset}`;
  const details = offset === null ? { ...extra } : { ...extra, offset };
  return err(code, message, details).error;
}

/** Runs `body`, turning a WireFault (or, defensively, any exception) into an error Result. */
export function guard<T>(body: () => T): WireResult<T> {
  try {
    return { ok: true, value: body() };
  } catch (e) {
    return { ok: false, error: toWireError(e) };
  }
}

function toWireError(e: unknown): WireError {
  if (e instanceof WireFault) return wireError(e.code, e.message, e.offset, e.extra);
  const message = e instanceof Error ? e.message : String(e);
  return wireError('E_WIRE_INTERNAL', `internal codec error: ${message}`, null);
}

/** The same error with its offset moved by `shift` (a frame's payload starts 4 bytes in). */
export function shiftError(error: WireError, shift: number): WireError {
  const offset = error.details?.offset;
  if (typeof offset !== 'number' || shift === 0) return error;
  const what = error.message.replace(/ at byte \d+$/, '');
  return wireError(error.code, what, offset + shift, { ...error.details });
}

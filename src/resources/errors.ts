// Errors as values: every rejection in Petrel is a PetrelError with a stable code for programs
// and a human message (for policy rejections, exactly the text Albatross clients expect).

/** Stable, machine-readable error code: `E_` followed by the subsystem and the reason. */
export type ErrorCode = `E_${string}`;

export interface PetrelError<C extends ErrorCode = ErrorCode> {
  readonly code: C;
  readonly message: string;
  /** Structured facts for programs (limit, usage, request, path, byte offset, ...). */
  readonly details?: Readonly<Record<string, unknown>>;
}

export type Result<T, E = PetrelError> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly error: E };

export function ok<T>(value: T): { readonly ok: true; readonly value: T } {
  return { ok: true, value };
}

export function err<C extends ErrorCode>(
  code: C,
  message: string,
  details?: Readonly<Record<string, unknown>>,
): { readonly ok: false; readonly error: PetrelError<C> } {
  return { ok: false, error: details === undefined ? { code, message } : { code, message, details } };
}

/**
 * The shell's way out of a Result at a process edge: throws a PetrelException carrying the
 * error, so a top-level handler can print `message` and exit with a code chosen by `code`.
 */
export class PetrelException extends Error {
  readonly error: PetrelError;
  constructor(error: PetrelError) {
    super(error.message);
    this.name = 'PetrelException';
    this.error = error;
  }
  get code(): ErrorCode {
    return this.error.code;
  }
}

export function unwrap<T>(result: Result<T>): T {
  if (result.ok) return result.value;
  throw new PetrelException(result.error);
}

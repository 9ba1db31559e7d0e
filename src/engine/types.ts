// The engine's shared vocabulary: types several of its modules speak (a unikernel's name, a
// network attachment, a host step's result), kept here so no module imports another for a type.

import type { PetrelError, Result } from '../resources/errors.js';
import type { Label, Name } from '../resources/name.js';
import type { MacAddress } from '../wire/types.js';

/** A unikernel name: a Name with a label. */
export type VmName = Name & { readonly label: Label };

/** A tap a running tender is attached with: the holder keeps it in the tender's meta too. */
export interface NetAttachment {
  readonly netif: string;
  readonly bridge: string;
  readonly tap: string;
  /** The MAC actually given to the tender (configured or derived). */
  readonly mac: MacAddress;
}

/** What a step of the engine's host (host-types.ts, tenders.ts) answers. */
export type HostResult<T> = Promise<Result<T, PetrelError>>;

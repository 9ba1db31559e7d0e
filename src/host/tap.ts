// Tap interfaces for unikernel networks: `<prefix><N>` with the lowest free N, created with
// `ip tuntap`, set up and attached to a bridge; removed again by undo or by start-up cleanup.

import { err, ok, type PetrelError, PetrelException, type Result } from '../resources/errors.js';
import {
  checkInterfaceName,
  IFNAME_MAX,
  type Link,
  listLinks,
  type NetError,
  type NetOptions,
  runIp,
  runIpBatch,
} from './ip.js';
import type { Undoable } from './undo.js';

/** Petrel's default tap prefix (petrel-differences (h)); Albatross uses `vmmtap`. */
export const DEFAULT_TAP_PREFIX = 'ptap';

export interface TapOptions extends NetOptions {
  /** Tap name prefix. Default `ptap`. Must be non-empty: cleanup deletes every `<prefix><digits>`. */
  readonly prefix?: string;
}

export type TapError = NetError | PetrelError<'E_HOST_TAP_PREFIX' | 'E_HOST_TAP_EXHAUSTED'>;

/** A prefix is usable when `<prefix>0` is a valid interface name and the prefix is not empty. */
export function checkTapPrefix(prefix: string): Result<string, PetrelError<'E_HOST_TAP_PREFIX'>> {
  if (prefix === '' || !checkInterfaceName(`${prefix}0`).ok || /\d$/u.test(prefix)) {
    return err(
      'E_HOST_TAP_PREFIX',
      `invalid tap prefix ${JSON.stringify(prefix)}: 1 to ${IFNAME_MAX - 1} bytes, not ending in a digit`,
      { prefix },
    );
  }
  return ok(prefix);
}

/** True when `name` is `<prefix><decimal digits>`, i.e. a tap Petrel owns. */
export function isOwnedTapName(prefix: string, name: string): boolean {
  return name.startsWith(prefix) && /^\d+$/u.test(name.slice(prefix.length));
}

/**
 * `<prefix><N>` for the smallest N ≥ 0 not among `taken` (every interface name on the host,
 * taps or not), or E_HOST_TAP_EXHAUSTED when the name would exceed 15 bytes.
 */
export function lowestFreeTap(prefix: string, taken: Iterable<string>): Result<string, TapError> {
  const checked = checkTapPrefix(prefix);
  if (!checked.ok) return checked;
  const used = new Set(taken);
  for (let n = 0; ; n++) {
    const name = `${prefix}${n}`;
    if (Buffer.byteLength(name) > IFNAME_MAX) {
      return err('E_HOST_TAP_EXHAUSTED', `no free tap name with prefix ${prefix}`, { prefix });
    }
    if (!used.has(name)) return ok(name);
  }
}

/**
 * Deletes tap `tap` (`ip tuntap del dev TAP mode tap`). Idempotent: a missing tap is fine (the
 * command succeeds); an interface of another kind is refused by the command, untouched.
 */
export async function removeTap(tap: string, options: NetOptions = {}): Promise<Result<void, NetError>> {
  const name = checkInterfaceName(tap);
  if (!name.ok) return name;
  const out = await runIp(['tuntap', 'del', 'dev', tap, 'mode', 'tap'], options);
  return out.ok ? ok(undefined) : out;
}

/**
 * Creates the tap with the lowest free number, sets it up and attaches it to `bridge`. On a
 * failing step the tap is deleted again and the error is the failing command's. Undo deletes it.
 */
export async function createTap(
  bridge: string,
  options: TapOptions = {},
): Promise<Result<Undoable<string>, TapError>> {
  const prefix = options.prefix ?? DEFAULT_TAP_PREFIX;
  const bridgeName = checkInterfaceName(bridge);
  if (!bridgeName.ok) return bridgeName;
  const links = await listLinks([], options);
  if (!links.ok) return links;
  const tap = lowestFreeTap(
    prefix,
    links.value.map((link) => link.name),
  );
  if (!tap.ok) return tap;
  const name = tap.value;
  // Interface names are checked words (no spaces or newlines), so each line stays one command.
  const made = await runIpBatch(
    [
      ['tuntap', 'add', 'dev', name, 'mode', 'tap'],
      ['link', 'set', 'dev', name, 'up'],
      ['link', 'set', 'dev', name, 'master', bridge],
    ],
    options,
  );
  if (made.ok) return ok({ value: name, undo: async () => throwIfFailed(await removeTap(name, options)) });
  // `ip tuntap add` refuses a name that exists, so a race with another creator fails on the
  // first line (`Command failed -:1`): nothing of ours to remove, and someone else's tap
  // must not be. A later line failed after our tap was made: remove it again.
  const stderr = String(made.error.details?.stderr ?? '');
  if (/^Command failed -:1$/mu.test(stderr)) return made;
  const cleaned = await removeTap(name, options);
  if (cleaned.ok) return made;
  return err(
    'E_HOST_COMMAND',
    `${made.error.message}; and removing ${name} failed: ${cleaned.error.message}`,
    {
      tap: name,
    },
  );
}

function throwIfFailed(result: Result<void, PetrelError>): void {
  if (!result.ok) throw new PetrelException(result.error);
}

/** Taps only: another kind of interface with a matching name was not made by Petrel. */
function isTap(link: Link): boolean {
  return link.kind === 'tun' && (link.tunType === null || link.tunType === 'tap');
}

/** Taps named `<prefix><digits>` (start-up cleanup removes them), sorted by name. */
export async function listOwnedTaps(options: TapOptions = {}): Promise<Result<readonly string[], TapError>> {
  const prefix = checkTapPrefix(options.prefix ?? DEFAULT_TAP_PREFIX);
  if (!prefix.ok) return prefix;
  const links = await listLinks([], options);
  if (!links.ok) return links;
  return ok(
    links.value
      .filter((link) => isOwnedTapName(prefix.value, link.name) && isTap(link))
      .map((link) => link.name)
      .sort(),
  );
}

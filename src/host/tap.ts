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
 * `<prefix><N>` for the smallest N ≥ `from` for which `taken(N)` is false (`from` only when
 * every number below it is taken), or E_HOST_TAP_EXHAUSTED when the name would exceed 15 bytes.
 */
export function lowestFreeTap(
  prefix: string,
  taken: (n: number) => boolean,
  from = 0,
): Result<{ readonly name: string; readonly n: number }, TapError> {
  const checked = checkTapPrefix(prefix);
  if (!checked.ok) return checked;
  let n = from;
  while (taken(n)) n++;
  const name = `${prefix}${n}`;
  if (Buffer.byteLength(name) > IFNAME_MAX) {
    return err('E_HOST_TAP_EXHAUSTED', `no free tap name with prefix ${prefix}`, { prefix });
  }
  return ok({ name, n });
}

/** N for exactly `<prefix><N>` (`ptap01` is not `ptap1`), else null. */
export function tapNumber(prefix: string, name: string): number | null {
  if (!isOwnedTapName(prefix, name)) return null;
  const digits = name.slice(prefix.length);
  const n = Number(digits);
  return Number.isSafeInteger(n) && String(n) === digits ? n : null;
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
 * For one tap; a daemon keeps a TapNames, which remembers its own taps.
 */
export function createTap(
  bridge: string,
  options: TapOptions = {},
  owner?: number,
): Promise<Result<Undoable<string>, TapError>> {
  return new TapNames(options).create(bridge, owner);
}

/**
 * The taps of one petreld: `<prefix><N>` with the lowest N that is neither one of its own taps
 * nor known to be another interface's, tried without listing the host's interfaces first. A
 * listing is as long as the host has interfaces — with 1,000 unikernels each create read 1.3 MB
 * of `ip -j` output, 30–40 ms — so it is made only when the name turns out to be taken
 * (another program's interface, a leftover, a race with another creator); then the lowest name
 * the listing leaves free is tried once more. Numbers are tracked, not names, so the lowest
 * free one is found without walking every tap: all numbers below `#lowest` are taken.
 */
export class TapNames {
  readonly #options: TapOptions;
  readonly #prefix: string;
  /** Numbers of the taps this petreld holds. */
  readonly #mine = new Set<number>();
  /** Numbers of other interfaces with a tap name, as the last listing found them. */
  #others = new Set<number>();
  #lowest = 0;

  constructor(options: TapOptions = {}) {
    this.#options = options;
    this.#prefix = options.prefix ?? DEFAULT_TAP_PREFIX;
  }

  /** Taps this petreld holds already (those of unikernels adopted at start-up). */
  hold(taps: Iterable<string>): void {
    for (const tap of taps) {
      const n = this.#number(tap);
      if (n !== null) this.#mine.add(n);
    }
  }

  /** A tap on `bridge`; with `owner`, owned by that uid and gid (a jailed tender attaches it unprivileged). */
  async create(bridge: string, owner?: number): Promise<Result<Undoable<string>, TapError>> {
    const bridgeName = checkInterfaceName(bridge);
    if (!bridgeName.ok) return bridgeName;
    let tap = this.#candidate();
    if (!tap.ok) return tap;
    let made = await addTap(tap.value.name, bridge, this.#options, owner);
    if (!made.ok && made.error.taken) {
      const links = await listLinks([], this.#options);
      if (!links.ok) return links;
      const others = links.value.map((link) => this.#number(link.name)).filter((n) => n !== null);
      this.#others = new Set(others.filter((n) => !this.#mine.has(n)));
      this.#lowest = 0;
      tap = this.#candidate();
      if (!tap.ok) return tap;
      made = await addTap(tap.value.name, bridge, this.#options, owner);
    }
    if (!made.ok) return { ok: false, error: made.error.error };
    const { name, n } = tap.value;
    this.#mine.add(n);
    return ok({ value: name, undo: async () => throwIfFailed(await this.remove(name)) });
  }

  /** Deletes one of this petreld's taps (see removeTap); its number is free again once it is gone. */
  async remove(tap: string): Promise<Result<void, NetError>> {
    const removed = await removeTap(tap, this.#options);
    const n = this.#number(tap);
    if (removed.ok && n !== null && this.#mine.delete(n)) this.#lowest = Math.min(this.#lowest, n);
    return removed;
  }

  /** The lowest name neither mine nor known to be another's, or why there is none. */
  #candidate(): Result<{ readonly name: string; readonly n: number }, TapError> {
    const found = lowestFreeTap(this.#prefix, (n) => this.#mine.has(n) || this.#others.has(n), this.#lowest);
    if (found.ok) this.#lowest = found.value.n;
    return found;
  }

  #number(name: string): number | null {
    return tapNumber(this.#prefix, name);
  }
}

/**
 * `ip tuntap add`, up, onto the bridge, in one batch. `taken` when the first line failed: `ip
 * tuntap add` refuses a name that exists, so nothing of ours was made there, and someone else's
 * interface must not be removed. A later line failed after our tap was made: it is removed again.
 */
async function addTap(
  name: string,
  bridge: string,
  options: NetOptions,
  owner?: number,
): Promise<Result<void, { error: TapError; taken: boolean }>> {
  const owned = owner === undefined ? [] : ['user', String(owner), 'group', String(owner)];
  // Interface names are checked words (no spaces or newlines), so each line stays one command.
  const made = await runIpBatch(
    [
      ['tuntap', 'add', 'dev', name, 'mode', 'tap', ...owned],
      ['link', 'set', 'dev', name, 'up'],
      ['link', 'set', 'dev', name, 'master', bridge],
    ],
    options,
  );
  if (made.ok) return ok(undefined);
  const stderr = String(made.error.details?.stderr ?? '');
  if (/^Command failed -:1$/mu.test(stderr)) return { ok: false, error: { error: made.error, taken: true } };
  const cleaned = await removeTap(name, options);
  if (cleaned.ok) return { ok: false, error: { error: made.error, taken: false } };
  const error: TapError = {
    code: 'E_HOST_COMMAND',
    message: `${made.error.message}; and removing ${name} failed: ${cleaned.error.message}`,
    details: { tap: name },
  };
  return { ok: false, error: { error, taken: false } };
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

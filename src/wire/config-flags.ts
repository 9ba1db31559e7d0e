// A unikernel's configuration from the flags of `petrel create`/`restart` (and the same names
// as query parameters of the web API's create), with albatross-client's syntax, defaults and
// texts (semantics §9, §16.1). Pure: every mistake is a Result naming the flag and the value.

import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import { parseLabel } from '../resources/name.js';
import { parseMac } from './config.js';
import type { BlockSpec, FailBehaviour, NetSpec, UnikernelArguments } from './types.js';

export type FlagError = PetrelError<'E_CONFIG_FLAG'>;

/** The flags' values as given: strings, lists of strings, booleans. */
export interface ConfigFlags {
  readonly mem?: string | undefined;
  readonly cpu?: readonly string[] | undefined;
  readonly cpus?: string | undefined;
  readonly net?: readonly string[] | undefined;
  readonly block?: readonly string[] | undefined;
  readonly arg?: readonly string[] | undefined;
  readonly 'restart-on-fail'?: boolean | undefined;
  readonly 'exit-code'?: readonly string[] | undefined;
  readonly startup?: string | undefined;
  readonly 'no-add-name'?: boolean | undefined;
}

/** Thrown inside this module only, returned as a Result at its edges. */
class Refusal extends Error {}

/** A whole number in [min, max] from a flag or argument; the message names `what`. */
export function readWholeNumber(
  text: string,
  what: string,
  min: number,
  max = 2 ** 31 - 1,
): Result<number, FlagError> {
  if (!/^\d{1,10}$/u.test(text) || Number(text) < min || Number(text) > max) {
    const range = max === 2 ** 31 - 1 ? `at least ${min}` : `${min} to ${max}`;
    return err('E_CONFIG_FLAG', `${what} must be a whole number, ${range} (got ${JSON.stringify(text)})`);
  }
  return ok(Number(text));
}

function whole(text: string, what: string, min: number, max?: number): number {
  const n = readWholeNumber(text, what, min, max);
  if (!n.ok) throw new Refusal(n.error.message);
  return n.value;
}

function caught<T>(read: () => T): Result<T, FlagError> {
  try {
    return ok(read());
  } catch (e) {
    if (e instanceof Refusal) return err('E_CONFIG_FLAG', e.message);
    throw e;
  }
}

/** `[netif:]bridge[@mac]`: `service:br0` is netif service on br0, `br0` is br0 on br0. */
export const readNet = (text: string): Result<NetSpec, FlagError> => caught(() => parseNet(text));

/** `name[:device][@sector]`: the unikernel-side name, the host block device, the sector size. */
export const readBlock = (text: string): Result<BlockSpec, FlagError> => caught(() => parseBlock(text));

/** The configuration the flags describe, with albatross-client's defaults for what is absent. */
export const readConfigFlags = (flags: ConfigFlags): Result<UnikernelArguments, FlagError> =>
  caught(() => configFromFlags(flags));

/** A host block device is a Name's label; lower-cased as names are. */
function label(text: string, what: string): string {
  const parsed = parseLabel(text);
  if (!parsed.ok) throw new Refusal(`${what}: ${parsed.error.message}`);
  return parsed.value;
}

/** Interface and manifest names are compared exactly, so they are only checked for being printable. */
function deviceName(text: string, what: string): string {
  if (!/^[\x21-\x7e]{1,67}$/u.test(text))
    throw new Refusal(`${what}: invalid device name ${JSON.stringify(text)}`);
  return text;
}

/** `[netif:]bridge[@mac]`: `service:br0` is netif service on br0, `br0` is br0 on br0. */
function parseNet(text: string): NetSpec {
  const at = text.indexOf('@');
  const head = at < 0 ? text : text.slice(0, at);
  const parts = head.split(':');
  if (parts.length > 2 || parts.some((p) => p === '')) {
    throw new Refusal(`--net ${text}: expected [NETIF:]BRIDGE[@MAC]`);
  }
  let mac: NetSpec['mac'] = null;
  if (at >= 0) {
    const parsed = parseMac(text.slice(at + 1));
    if (!parsed.ok) throw new Refusal(`--net ${text}: ${parsed.error.message}`);
    mac = parsed.value;
  }
  const [netif, bridge] = parts as [string, string | undefined];
  return {
    netif: deviceName(netif, `--net ${text}`),
    bridge: bridge === undefined ? null : deviceName(bridge, `--net ${text}`),
    mac,
  };
}

const SECTOR_TEXT = 'sector size must be a power of two greater than or equal 512';

/** `name[:device][@sector]`: the unikernel-side name, the host block device, the sector size. */
function parseBlock(text: string): BlockSpec {
  const at = text.indexOf('@');
  const head = at < 0 ? text : text.slice(0, at);
  const parts = head.split(':');
  if (parts.length > 2 || parts.some((p) => p === '')) {
    throw new Refusal(`--block ${text}: expected NAME[:DEVICE][@SECTOR]`);
  }
  let sectorSize: number | null = null;
  if (at >= 0) {
    const sector = text.slice(at + 1);
    const n = /^\d{1,10}$/u.test(sector) ? Number(sector) : Number.NaN;
    // A power of two has one bit set; 2^31 is the largest the wire's int32 can carry.
    if (!(n >= 512 && n <= 2 ** 31 && (n & (n - 1)) === 0))
      throw new Refusal(`--block ${text}: ${SECTOR_TEXT}`);
    sectorSize = n;
  }
  const [device, hostDevice] = parts as [string, string | undefined];
  return {
    device: deviceName(device, `--block ${text}`),
    hostDevice: hostDevice === undefined ? null : label(hostDevice, `--block ${text}`),
    sectorSize,
  };
}

function unique(names: readonly string[]): boolean {
  return new Set(names).size === names.length;
}

/** The configuration the flags describe, with albatross-client's defaults for what is absent. */
function configFromFlags(flags: ConfigFlags): UnikernelArguments {
  const memory = whole(flags.mem ?? '32', '--mem', 1);
  const cpuids = [...new Set((flags.cpu ?? ['0']).map((id) => whole(id, '--cpu', 0)))].sort((a, b) => a - b);
  const cpus = whole(flags.cpus ?? '1', '--cpus', 1);
  const bridges = (flags.net ?? []).map(parseNet);
  if (!unique(bridges.map((b) => b.netif))) throw new Refusal('Bridge names must be a set');
  const blocks = (flags.block ?? []).map(parseBlock);
  if (!unique(blocks.map((b) => b.device))) throw new Refusal('Block devices must be a set');
  const exitCodes = (flags['exit-code'] ?? []).map((code) => whole(code, '--exit-code', 0, 255));
  if (exitCodes.length > 0 && flags['restart-on-fail'] !== true) {
    throw new Refusal('--exit-code needs --restart-on-fail');
  }
  const failBehaviour: FailBehaviour =
    flags['restart-on-fail'] === true
      ? { kind: 'restart', exitCodes: [...new Set(exitCodes)] }
      : { kind: 'quit' };
  return {
    failBehaviour,
    startup: flags.startup === undefined ? null : whole(flags.startup, '--startup', 0),
    addName: flags['no-add-name'] !== true,
    cpuids,
    memory,
    blocks,
    bridges,
    arguments: flags.arg === undefined ? null : [...flags.arg],
    cpus,
    linuxBootPartition: null,
  };
}

// A unikernel's configuration from `petrel create`/`restart` flags, checked before connecting
// with albatross-client's syntax and texts (semantics §9, §10.3, §16.1).

import { parseLabel } from '../../resources/name.js';
import type { ManifestDevice } from '../../tender/elf.js';
import { checkManifestDevices } from '../../tender/manifest.js';
import { parseMac } from '../../wire/config.js';
import type { BlockSpec, FailBehaviour, NetSpec, UnikernelArguments } from '../../wire/types.js';
import { usageError, wholeNumber } from './shell.js';

export const CONFIG_OPTIONS = {
  mem: { type: 'string' },
  cpu: { type: 'string', multiple: true },
  cpus: { type: 'string' },
  net: { type: 'string', multiple: true },
  block: { type: 'string', multiple: true },
  arg: { type: 'string', multiple: true },
  'restart-on-fail': { type: 'boolean' },
  'exit-code': { type: 'string', multiple: true },
  startup: { type: 'string' },
  'no-add-name': { type: 'boolean' },
} as const;

export const CONFIG_HELP = `configuration:
  --mem MIB                   memory (default 32)
  --cpu ID                    pin to this CPU id; repeat for several (default 0)
  --cpus N                    virtual CPUs (default 1)
  --net [NETIF:]BRIDGE[@MAC]  a network: NETIF inside the unikernel (default BRIDGE) on the
                              host BRIDGE, optionally with a fixed MAC; repeatable
  --block NAME[:DEVICE][@SECTOR]  a block device: NAME inside the unikernel, the host block
                              device DEVICE (default NAME), sector size a power of two >= 512;
                              repeatable
  --arg ARG                   a boot argument, in order; repeatable (--arg=--ipv4=10.0.0.2/24)
  --restart-on-fail           restart when it exits with a failure ...
  --exit-code N               ... but only on these exit codes; repeatable (default: any)
  --startup N                 start priority after a petreld restart (lower first; default 50)
  --no-add-name               do not pass --name=LABEL to the unikernel
`;

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

/** True when any configuration flag was given (a restart then replaces the configuration). */
export function hasConfigFlags(flags: ConfigFlags): boolean {
  return Object.keys(CONFIG_OPTIONS).some((key) => flags[key as keyof ConfigFlags] !== undefined);
}

/** A host block device is a Name's label; lower-cased as names are. */
function label(text: string, what: string): string {
  const parsed = parseLabel(text);
  if (!parsed.ok) throw usageError(`${what}: ${parsed.error.message}`);
  return parsed.value;
}

/** Interface and manifest names are compared exactly, so they are only checked for being printable. */
function deviceName(text: string, what: string): string {
  if (!/^[\x21-\x7e]{1,67}$/u.test(text))
    throw usageError(`${what}: invalid device name ${JSON.stringify(text)}`);
  return text;
}

/** `[netif:]bridge[@mac]`: `service:br0` is netif service on br0, `br0` is br0 on br0. */
export function parseNet(text: string): NetSpec {
  const at = text.indexOf('@');
  const head = at < 0 ? text : text.slice(0, at);
  const parts = head.split(':');
  if (parts.length > 2 || parts.some((p) => p === '')) {
    throw usageError(`--net ${text}: expected [NETIF:]BRIDGE[@MAC]`);
  }
  let mac: NetSpec['mac'] = null;
  if (at >= 0) {
    const parsed = parseMac(text.slice(at + 1));
    if (!parsed.ok) throw usageError(`--net ${text}: ${parsed.error.message}`);
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
export function parseBlock(text: string): BlockSpec {
  const at = text.indexOf('@');
  const head = at < 0 ? text : text.slice(0, at);
  const parts = head.split(':');
  if (parts.length > 2 || parts.some((p) => p === '')) {
    throw usageError(`--block ${text}: expected NAME[:DEVICE][@SECTOR]`);
  }
  let sectorSize: number | null = null;
  if (at >= 0) {
    const sector = text.slice(at + 1);
    const n = /^\d{1,10}$/u.test(sector) ? Number(sector) : Number.NaN;
    // A power of two has one bit set; 2^31 is the largest the wire's int32 can carry.
    if (!(n >= 512 && n <= 2 ** 31 && (n & (n - 1)) === 0))
      throw usageError(`--block ${text}: ${SECTOR_TEXT}`);
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
export function configFromFlags(flags: ConfigFlags): UnikernelArguments {
  const memory = wholeNumber(flags.mem ?? '32', '--mem', 1);
  const cpuids = [...new Set((flags.cpu ?? ['0']).map((id) => wholeNumber(id, '--cpu', 0)))].sort(
    (a, b) => a - b,
  );
  const cpus = wholeNumber(flags.cpus ?? '1', '--cpus', 1);
  const bridges = (flags.net ?? []).map(parseNet);
  if (!unique(bridges.map((b) => b.netif))) throw usageError('Bridge names must be a set');
  const blocks = (flags.block ?? []).map(parseBlock);
  if (!unique(blocks.map((b) => b.device))) throw usageError('Block devices must be a set');
  const exitCodes = (flags['exit-code'] ?? []).map((code) => wholeNumber(code, '--exit-code', 0, 255));
  if (exitCodes.length > 0 && flags['restart-on-fail'] !== true) {
    throw usageError('--exit-code needs --restart-on-fail');
  }
  const failBehaviour: FailBehaviour =
    flags['restart-on-fail'] === true
      ? { kind: 'restart', exitCodes: [...new Set(exitCodes)] }
      : { kind: 'quit' };
  return {
    failBehaviour,
    startup: flags.startup === undefined ? null : wholeNumber(flags.startup, '--startup', 0),
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

/** The image's manifest must list exactly the configured devices (semantics §10.3). */
export function checkDevices(devices: readonly ManifestDevice[], config: UnikernelArguments): void {
  const checked = checkManifestDevices(devices, {
    blocks: config.blocks.map((b) => b.device),
    nets: config.bridges.map((n) => n.netif),
  });
  if (!checked.ok) throw usageError(checked.error.message);
}

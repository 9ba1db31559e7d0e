// A unikernel's configuration from `petrel create`/`restart` flags, checked before connecting
// with albatross-client's syntax and texts (semantics §9, §10.3, §16.1).

import type { ManifestDevice } from '../../tender/elf.js';
import { checkManifestDevices } from '../../tender/manifest.js';
import { type ConfigFlags, readConfigFlags, readNet } from '../../wire/config-flags.js';
import type { NetSpec, UnikernelArguments } from '../../wire/types.js';
import { usageError } from './shell.js';

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

export type { ConfigFlags } from '../../wire/config-flags.js';

/** True when any configuration flag was given (a restart then replaces the configuration). */
export function hasConfigFlags(flags: ConfigFlags): boolean {
  return Object.keys(CONFIG_OPTIONS).some((key) => flags[key as keyof ConfigFlags] !== undefined);
}

/** `[netif:]bridge[@mac]`; a mistake is a usage error. */
export function parseNet(text: string): NetSpec {
  const net = readNet(text);
  if (!net.ok) throw usageError(net.error.message);
  return net.value;
}

/** The configuration the flags describe (src/wire/config-flags.ts); a mistake is a usage error. */
export function configFromFlags(flags: ConfigFlags): UnikernelArguments {
  const config = readConfigFlags(flags);
  if (!config.ok) throw usageError(config.error.message);
  return config.value;
}

/** The image's manifest must list exactly the configured devices (semantics §10.3). */
export function checkDevices(devices: readonly ManifestDevice[], config: UnikernelArguments): void {
  const checked = checkManifestDevices(devices, {
    blocks: config.blocks.map((b) => b.device),
    nets: config.bridges.map((n) => n.netif),
  });
  if (!checked.ok) throw usageError(checked.error.message);
}

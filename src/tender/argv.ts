// The tender's argument vector exactly as Albatross builds it (semantics §8.2), from a minimal
// launch description, after the daemon-side checks of solo5.md §2.7 (item 3).

import { createHash } from 'node:crypto';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import { type Name, printName } from '../resources/name.js';
import type { TenderKind } from './elf.js';

export interface LaunchNet {
  /** Unikernel-side interface name (a manifest NET_BASIC device). */
  readonly netif: string;
  /** Host bridge; informational here (the tap is already attached to it). */
  readonly bridge?: string | null;
  /** Configured MAC, `xx:xx:xx:xx:xx:xx`; absent = derived from netif and name (wire §3.6). */
  readonly mac?: string | null;
  /** The host tap made for this network. */
  readonly tap: string;
}

export interface LaunchBlock {
  /** Unikernel-side block device name (a manifest BLOCK_BASIC device). */
  readonly name: string;
  /** `<state-dir>/block/<block name string>`. */
  readonly path: string;
  /** Sector size in bytes; absent = the tender's default (512), and no option is written. */
  readonly sectorSize?: number | null;
}

/** What a tender launch needs; the wire configuration is adapted to this by the engine. */
export interface UnikernelLaunch {
  readonly name: Name;
  readonly kind: TenderKind;
  /** Guest memory in MiB. */
  readonly memory: number;
  readonly cpuids: readonly number[];
  /** In configuration order. */
  readonly nets: readonly LaunchNet[];
  /** In configuration order. */
  readonly blocks: readonly LaunchBlock[];
  /** Prepend `--name=<label>` to the guest arguments. */
  readonly addName: boolean;
  readonly args: readonly string[];
  /** `<run-dir>/<name>.img`, the inflated image. */
  readonly image: string;
}

export interface ArgvOptions {
  /** The tender executable (from lookup). */
  readonly tender: string;
  /** The CPU pinning command. Default `taskset`. */
  readonly taskset?: string;
  /** Give `--name=<full name string>` instead of the label (albatrossd's `--no-drop-path`). */
  readonly fullName?: boolean;
}

export type LaunchError = PetrelError<'E_LAUNCH_INVALID'>;

/** solo5's device-name rule (solo5.md §2.5). */
const DEVICE_NAME = /^[A-Za-z0-9]{1,67}$/u;
const MAC = /^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$/u;
/** solo5 joins guest arguments with spaces into at most 8191 characters (solo5.md §1.7). */
export const MAX_GUEST_CMDLINE = 8191;
/** IFNAMSIZ − 1. */
const MAX_TAP = 15;

/** `00:80:41` + the first three bytes of MD5(netif ‖ name string), wire §3.6. */
export function deriveMac(netif: string, name: Name): string {
  const digest = createHash('md5')
    .update(`${netif}${printName(name)}`, 'utf8')
    .digest();
  return ['00', '80', '41', ...[...digest.subarray(0, 3)].map((b) => b.toString(16).padStart(2, '0'))].join(
    ':',
  );
}

function invalid(text: string, details?: Record<string, unknown>): Result<never, LaunchError> {
  return err('E_LAUNCH_INVALID', text, details);
}

function duplicate(values: readonly string[]): string | undefined {
  return values.find((v, i) => values.indexOf(v) !== i);
}

function isPowerOfTwo(n: number): boolean {
  return Number.isInteger(n) && n > 0 && (n & (n - 1)) === 0;
}

/** The guest arguments as the tender receives them (after KERNEL). */
function guestArgs(launch: UnikernelLaunch, label: string, options: ArgvOptions): string[] {
  const name = options.fullName === true ? printName(launch.name) : label;
  return launch.addName ? [`--name=${name}`, ...launch.args] : [...launch.args];
}

/** Every check a tender would otherwise fail late (or silently) on: solo5.md §2.7 item 3. */
function check(launch: UnikernelLaunch, options: ArgvOptions): Result<string, LaunchError> {
  const label = launch.name.label;
  if (label === null) return invalid('path used instead of name');
  if (launch.cpuids.length === 0) return invalid('no CPU to run on');
  if (launch.cpuids.some((c) => !Number.isSafeInteger(c) || c < 0)) return invalid('invalid cpuid');
  const [low, high] = launch.kind === 'hvt' ? [2, 4096] : [1, Number.MAX_SAFE_INTEGER];
  if (!Number.isSafeInteger(launch.memory) || launch.memory < low || launch.memory > high) {
    return invalid(
      `memory ${launch.memory} MB outside what solo5-${launch.kind} accepts (${low} to ${high})`,
    );
  }
  for (const net of launch.nets) {
    if (!DEVICE_NAME.test(net.netif)) return invalid(`invalid network name ${JSON.stringify(net.netif)}`);
    if (net.tap === '' || Buffer.byteLength(net.tap) > MAX_TAP || /[\s/:=\0]/u.test(net.tap)) {
      return invalid(`invalid tap name ${JSON.stringify(net.tap)}`);
    }
    if (net.mac != null && !MAC.test(net.mac))
      return invalid(`invalid MAC address ${JSON.stringify(net.mac)}`);
  }
  for (const block of launch.blocks) {
    if (!DEVICE_NAME.test(block.name))
      return invalid(`invalid block device name ${JSON.stringify(block.name)}`);
    // solo5 reads a block path only up to the first white space (solo5.md §1.4).
    if (block.path === '' || /[\s\0]/u.test(block.path))
      return invalid(`invalid block path ${JSON.stringify(block.path)}`);
    const size = block.sectorSize;
    if (size != null && (!isPowerOfTwo(size) || size < 512 || size > 32768)) {
      return invalid('sector size must be a power of two greater than or equal 512', { sectorSize: size });
    }
  }
  const twiceNet = duplicate(launch.nets.map((n) => n.netif));
  if (twiceNet !== undefined) return invalid('Bridge names must be a set', { netif: twiceNet });
  const twiceBlock = duplicate(launch.blocks.map((b) => b.name));
  if (twiceBlock !== undefined) return invalid('Block devices must be a set', { block: twiceBlock });
  if (launch.image === '' || launch.image.includes('\0')) return invalid('invalid image path');
  const args = guestArgs(launch, label, options);
  if (args.some((a) => a.includes('\0'))) return invalid('guest argument contains NUL');
  const length = Buffer.byteLength(args.join(' '));
  if (length > MAX_GUEST_CMDLINE) {
    return invalid(`Guest command line too long (max=${MAX_GUEST_CMDLINE} characters)`, { length });
  }
  return ok(label);
}

/**
 * `taskset -c <cpus> <tender> --mem=<MB> --net:… --net-mac:… --block:… --block-sector-size:…
 * -- <image> [--name=<label>] <args…>` — argv[0] is the CPU pinning command.
 */
export function tenderArgv(
  launch: UnikernelLaunch,
  options: ArgvOptions,
): Result<readonly string[], LaunchError> {
  const checked = check(launch, options);
  if (!checked.ok) return checked;
  const cpus = [...new Set(launch.cpuids)].sort((a, b) => a - b).join(',');
  return ok([
    options.taskset ?? 'taskset',
    '-c',
    cpus,
    options.tender,
    `--mem=${launch.memory}`,
    ...launch.nets.map((n) => `--net:${n.netif}=${n.tap}`),
    ...launch.nets.map(
      (n) => `--net-mac:${n.netif}=${(n.mac ?? deriveMac(n.netif, launch.name)).toLowerCase()}`,
    ),
    ...launch.blocks.map((b) => `--block:${b.name}=${b.path}`),
    ...launch.blocks.flatMap((b) =>
      b.sectorSize == null ? [] : [`--block-sector-size:${b.name}=${b.sectorSize}`],
    ),
    '--',
    launch.image,
    ...guestArgs(launch, checked.value, options),
  ]);
}

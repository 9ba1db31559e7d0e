// The `ip` command (iproute2) as Petrel uses it: optionally inside a network namespace, JSON
// output parsed defensively, interface names validated before they reach a command line.

import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import { type CommandOutput, runCommand } from './command.js';

export interface NetOptions {
  /** Run every command inside this network namespace (`ip -n NS ...`). Default: the host's. */
  readonly netns?: string;
  /** Path or name of the `ip` binary. Default `ip` (found in PATH). */
  readonly ipCommand?: string;
}

export type NetError = PetrelError<'E_HOST_COMMAND' | 'E_HOST_IFNAME' | 'E_HOST_NETNS'>;

/** Linux IFNAMSIZ − 1: the longest interface name, in bytes. */
export const IFNAME_MAX = 15;

/** Linux' dev_valid_name, plus no leading `-` so a name is never read as an option. */
export function checkInterfaceName(name: string): Result<string, PetrelError<'E_HOST_IFNAME'>> {
  const bytes = Buffer.byteLength(name, 'utf8');
  if (
    bytes === 0 ||
    bytes > IFNAME_MAX ||
    name === '.' ||
    name === '..' ||
    name.startsWith('-') ||
    /[/:\s\0]/u.test(name)
  ) {
    return err('E_HOST_IFNAME', `invalid interface name ${JSON.stringify(name)}`, { name });
  }
  return ok(name);
}

function netnsArgs(options: NetOptions): Result<string[], NetError> {
  const ns = options.netns;
  if (ns === undefined) return ok([]);
  if (ns === '' || ns === '.' || ns === '..' || ns.startsWith('-') || /[/\s\0]/u.test(ns)) {
    return err('E_HOST_NETNS', `invalid network namespace name ${JSON.stringify(ns)}`, { netns: ns });
  }
  return ok(['-n', ns]);
}

/** Runs `ip [-n NS] args…`. */
export async function runIp(
  args: readonly string[],
  options: NetOptions = {},
): Promise<Result<CommandOutput, NetError>> {
  const prefix = netnsArgs(options);
  if (!prefix.ok) return prefix;
  return runCommand(options.ipCommand ?? 'ip', [...prefix.value, ...args]);
}

/**
 * Runs several `ip` commands in one process (`ip -batch -`, one per line), stopping at the
 * first that fails. Starting `ip` costs milliseconds; its commands cost little more.
 */
export async function runIpBatch(
  commands: readonly (readonly string[])[],
  options: NetOptions = {},
): Promise<Result<CommandOutput, NetError>> {
  const prefix = netnsArgs(options);
  if (!prefix.ok) return prefix;
  const ip = options.ipCommand ?? 'ip';
  const lines = commands.map((words) => words.join(' '));
  // Errors name every command of the batch: ip does not always say which line failed.
  const label = `${[ip, ...prefix.value].join(' ')} -batch: ${lines.join('; ')}`;
  return runCommand(ip, [...prefix.value, '-batch', '-'], { input: `${lines.join('\n')}\n`, label });
}

export interface Link {
  readonly name: string;
  /** `linkinfo.info_kind` (`bridge`, `tun`, `veth`, …), null when `ip` reports none. */
  readonly kind: string | null;
  /** For `tun` links: `tap` or `tun`. */
  readonly tunType: string | null;
  /** The bridge (or other master) the link is attached to. */
  readonly master: string | null;
  readonly up: boolean;
}

function field(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
}

function text(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

/** Every link `ip -d -j link show [filter…]` lists. */
export async function listLinks(
  filter: readonly string[] = [],
  options: NetOptions = {},
): Promise<Result<readonly Link[], NetError>> {
  const out = await runIp(['-d', '-j', 'link', 'show', ...filter], options);
  if (!out.ok) return out;
  let parsed: unknown;
  try {
    parsed = JSON.parse(out.value.stdout.trim() === '' ? '[]' : out.value.stdout);
  } catch {
    return err(
      'E_HOST_COMMAND',
      `ip link show: unparsable output ${JSON.stringify(out.value.stdout.slice(0, 200))}`,
    );
  }
  if (!Array.isArray(parsed)) return err('E_HOST_COMMAND', 'ip link show: output is not a list');
  const links: Link[] = [];
  for (const entry of parsed) {
    const name = text(field(entry, 'ifname'));
    if (name === null) continue;
    const info = field(entry, 'linkinfo');
    const flags = field(entry, 'flags');
    links.push({
      name,
      kind: text(field(info, 'info_kind')),
      tunType: text(field(field(info, 'info_data'), 'type')),
      master: text(field(entry, 'master')),
      up: Array.isArray(flags) && flags.includes('UP'),
    });
  }
  return ok(links);
}

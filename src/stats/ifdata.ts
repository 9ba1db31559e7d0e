// Interface counters from the output of `ip -s -j link show`, mapped onto the
// wire's Ifdata as albatross-stats fills it from netlink on Linux (semantics §12.2). Pure.

import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import type { Ifdata } from '../wire/types.js';

export type LinkError = PetrelError<'E_STATS_LINK'>;

const IFF_UP = 0x1;
const IFF_RUNNING = 0x40;

/** Linux' IFF_* bits (include/uapi/linux/if.h), by the names `ip` prints. */
const IFF: Readonly<Record<string, number>> = {
  UP: IFF_UP,
  BROADCAST: 0x2,
  DEBUG: 0x4,
  LOOPBACK: 0x8,
  POINTOPOINT: 0x10,
  NOTRAILERS: 0x20,
  RUNNING: IFF_RUNNING,
  NOARP: 0x80,
  PROMISC: 0x100,
  ALLMULTI: 0x200,
  MASTER: 0x400,
  SLAVE: 0x800,
  MULTICAST: 0x1000,
  PORTSEL: 0x2000,
  AUTOMEDIA: 0x4000,
  DYNAMIC: 0x8000,
  LOWER_UP: 0x10000,
  DORMANT: 0x20000,
  ECHO: 0x40000,
};

/**
 * The netlink `ifi_flags` back from `ip`'s names. `ip` never prints RUNNING: it prints
 * NO-CARRIER when the link is UP but not RUNNING, and the kernel sets RUNNING only on UP links,
 * so RUNNING = UP without NO-CARRIER. Bits it has no name for come as one hex string.
 */
export function linkFlags(names: readonly unknown[]): number {
  let flags = 0;
  for (const name of names) {
    if (typeof name !== 'string') continue;
    const bit = IFF[name];
    if (bit !== undefined) flags |= bit;
    else if (/^(0x)?[0-9a-f]+$/iu.test(name)) flags |= Number.parseInt(name.replace(/^0x/iu, ''), 16);
  }
  if ((flags & IFF_UP) !== 0 && !names.includes('NO-CARRIER')) flags |= IFF_RUNNING;
  return flags >>> 0;
}

const DIGITS = /\d+/uy;

/**
 * JSON text with every integer of 16 or more digits outside strings turned into a string, so
 * 64-bit counters (bytes pass 2^53 after months at 10 Gbit/s) survive JSON.parse exactly.
 */
export function quoteBigIntegers(json: string): string {
  let out = '';
  let inString = false;
  let i = 0;
  while (i < json.length) {
    const c = json[i] as string;
    if (inString) {
      out += c;
      if (c === '\\') out += json[++i] ?? '';
      else if (c === '"') inString = false;
      i++;
      continue;
    }
    if (c === '"') inString = true;
    DIGITS.lastIndex = i;
    const digits = DIGITS.exec(json)?.[0];
    if (digits !== undefined && (i === 0 || !/[\w.+-]/u.test(json[i - 1] as string))) {
      const integer = !/[.eE]/u.test(json[i + digits.length] ?? '');
      out += integer && digits.length >= 16 ? `"${digits}"` : digits;
      i += digits.length;
      continue;
    }
    out += c;
    i++;
  }
  return out;
}

const get = (value: unknown, key: string): unknown =>
  typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;

function counter(value: unknown): bigint | null {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return BigInt(value);
  if (typeof value === 'string' && /^\d+$/u.test(value)) return BigInt(value);
  return null;
}

/** The links of `ip -s -j link show` output, by interface name. */
export function parseLinks(output: string): Result<ReadonlyMap<string, unknown>, LinkError> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(quoteBigIntegers(output.trim() === '' ? '[]' : output));
  } catch {
    return err('E_STATS_LINK', `ip link show: unparsable output ${JSON.stringify(output.slice(0, 200))}`);
  }
  if (!Array.isArray(parsed)) return err('E_STATS_LINK', 'ip link show: output is not a list');
  const links = new Map<string, unknown>();
  for (const link of parsed) {
    const name = get(link, 'ifname');
    if (typeof name === 'string') links.set(name, link);
  }
  return ok(links);
}

/** The Ifdata of one link as `parseLinks` gives it, under the unikernel-side name `netif`. */
export function linkIfdata(link: unknown, netif: string): Result<Ifdata, LinkError> {
  // `ip` prints "stats64" when the kernel gives 64-bit counters (always, since 2.6.35).
  const stats = get(link, 'stats64') ?? get(link, 'stats');
  const sides = { rx: get(stats, 'rx'), tx: get(stats, 'tx') };
  const fields = [
    ['inputPackets', 'rx', 'packets'],
    ['inputErrors', 'rx', 'errors'],
    ['inputBytes', 'rx', 'bytes'],
    ['inputDropped', 'rx', 'dropped'],
    ['inputMcast', 'rx', 'multicast'],
    ['outputPackets', 'tx', 'packets'],
    ['outputErrors', 'tx', 'errors'],
    ['outputBytes', 'tx', 'bytes'],
    ['outputDropped', 'tx', 'dropped'],
    ['collisions', 'tx', 'collisions'],
  ] as const;
  const c: Partial<Record<(typeof fields)[number][0], bigint>> = {};
  for (const [key, side, field] of fields) {
    const value = counter(get(sides[side], field));
    if (value === null) {
      return err('E_STATS_LINK', `ip link show: no counter ${side}.${field}`, { link: get(link, 'ifname') });
    }
    c[key] = value;
  }
  const mtu = get(link, 'mtu');
  const flags = get(link, 'flags');
  return ok({
    bridge: netif,
    flags: linkFlags(Array.isArray(flags) ? flags : []),
    // Linux has no send-queue length, maximum or drop count, baud rate or multicast sent in the
    // link counters Albatross reads: 0, as Albatross sends them.
    sendLength: 0,
    maxSendLength: 0,
    sendDrops: 0,
    mtu: typeof mtu === 'number' && Number.isInteger(mtu) ? mtu : 0,
    baudrate: 0n,
    inputPackets: c.inputPackets ?? 0n,
    inputErrors: c.inputErrors ?? 0n,
    outputPackets: c.outputPackets ?? 0n,
    outputErrors: c.outputErrors ?? 0n,
    collisions: c.collisions ?? 0n,
    inputBytes: c.inputBytes ?? 0n,
    outputBytes: c.outputBytes ?? 0n,
    inputMcast: c.inputMcast ?? 0n,
    outputMcast: 0n,
    inputDropped: c.inputDropped ?? 0n,
    outputDropped: c.outputDropped ?? 0n,
  });
}

// `ip -s -j link show` output → Ifdata as Albatross fills it from netlink (semantics §12.2).
// Fixtures were captured from a tap in a private namespace with iproute2 6.1: down, up without
// carrier (mtu 1400), up and held by a reader (carrier), and after frames were written into it.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { linkFlags, linkIfdata, parseLinks, quoteBigIntegers } from '../../src/stats/ifdata.js';
import { tapCounters } from '../../src/stats/sample.js';

const fixture = (name: string) => readFileSync(path.join(import.meta.dirname, 'fixtures', name), 'utf8');

function ifdata(file: string, netif = 'service') {
  const links = parseLinks(fixture(file));
  if (!links.ok) throw new Error(links.error.message);
  const result = linkIfdata(links.value.get('stap0'), netif);
  if (!result.ok) throw new Error(result.error.message);
  return result.value;
}

describe('link counters', () => {
  it('maps rx to input and tx to output, names the unikernel-side interface, zeroes the rest', () => {
    expect(ifdata('ip-tap-after.out')).toEqual({
      bridge: 'service',
      flags: 0x1003, // UP BROADCAST MULTICAST, no carrier so not RUNNING
      sendLength: 0,
      maxSendLength: 0,
      sendDrops: 0,
      mtu: 1400,
      baudrate: 0n,
      inputPackets: 4n,
      inputErrors: 0n,
      outputPackets: 2n,
      outputErrors: 0n,
      collisions: 0n,
      inputBytes: 240n,
      outputBytes: 176n,
      inputMcast: 0n,
      outputMcast: 0n,
      inputDropped: 4n,
      outputDropped: 1n,
    });
  });

  it('rebuilds the netlink flags, RUNNING included, from the names ip prints', () => {
    expect(ifdata('ip-tap-down.out').flags).toBe(0x1002);
    expect(ifdata('ip-tap-nocarrier.out').flags).toBe(0x1003);
    // UP | BROADCAST | RUNNING | MULTICAST | LOWER_UP
    expect(ifdata('ip-tap-attached.out').flags).toBe(0x11043);
    expect(ifdata('ip-tap-attached.out').mtu).toBe(1500);
    expect(linkFlags(['LOOPBACK', 'UP', 'LOWER_UP'])).toBe(0x10049);
    expect(linkFlags(['UP', '80000', 'M-DOWN'])).toBe(0x80041);
  });

  it('keeps 64-bit counters exact beyond 2^53', () => {
    const big = fixture('ip-tap-after.out').replace('"bytes":240', '"bytes":18446744073709551615');
    const links = parseLinks(big);
    const link = links.ok ? linkIfdata(links.value.get('stap0'), 'x') : links;
    expect(link.ok && link.value.inputBytes).toBe(18446744073709551615n);
    // only numbers outside strings are touched
    expect(quoteBigIntegers('{"a":"x 12345678901234567","b":12345678901234567,"c":[1,-2]}')).toBe(
      '{"a":"x 12345678901234567","b":"12345678901234567","c":[1,-2]}',
    );
  });

  it('refuses output it cannot read', () => {
    expect(parseLinks('not json')).toMatchObject({ ok: false, error: { code: 'E_STATS_LINK' } });
    expect(parseLinks('{}')).toMatchObject({ ok: false });
    expect(linkIfdata({ ifname: 'x', stats64: { rx: {} } }, 'n')).toMatchObject({
      ok: false,
      error: { message: 'ip link show: no counter rx.packets' },
    });
  });

  it('lists taps in reverse configuration order and leaves out those it cannot find', () => {
    const links = parseLinks(
      `[${fixture('ip-tap-attached.out').slice(1, -2)},${fixture('ip-tap-after.out').slice(1, -2).replace('stap0', 'stap1')}]`,
    );
    const taps = tapCounters(
      [
        { netif: 'first', tap: 'stap0' },
        { netif: 'gone', tap: 'stap9' },
        { netif: 'last', tap: 'stap1' },
      ],
      links,
    );
    expect(taps.ifdata.map((i) => i.bridge)).toEqual(['last', 'first']);
    expect(taps.unresolved).toEqual([{ tap: 'stap9', reason: 'no such link' }]);
    const failed = tapCounters([{ netif: 'a', tap: 'stap0' }], {
      ok: false,
      error: { code: 'E_HOST_COMMAND', message: 'ip failed' },
    });
    expect(failed).toEqual({ ifdata: [], unresolved: [{ tap: 'stap0', reason: 'ip failed' }] });
  });
});

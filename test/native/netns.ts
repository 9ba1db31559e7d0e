// A private network namespace per test file: a bridge with taps and no addresses, made with
// unique names and removed with everything in it, whatever the tests did.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll } from 'vitest';
import { type Running, start } from './native.js';

function ip(args: readonly string[]): void {
  const r = spawnSync('ip', args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ip ${args.join(' ')}: ${r.stderr || r.error?.message}`);
}

export interface Netns {
  readonly name: string;
  /** The command and arguments that run cmd inside the namespace (ip netns exec execs it: same PID). */
  readonly wrap: (cmd: string, args: readonly string[]) => [string, string[]];
  readonly destroy: () => void;
}

/** Taps named in `bridged` join bridge br0 and are up; taps in `down` exist but are down. */
export function createNetns(bridged: readonly string[], down: readonly string[] = []): Netns {
  const name = `petrel-t-${process.pid}-${randomBytes(3).toString('hex')}`;
  ip(['netns', 'add', name]);
  const destroy = () => {
    spawnSync('ip', ['netns', 'del', name]);
  };
  try {
    // No addresses anywhere, and no IPv6 autoconfiguration chatter: the taps carry test frames only.
    spawnSync('ip', [
      'netns',
      'exec',
      name,
      'sh',
      '-c',
      'echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6',
    ]);
    // No multicast snooping: the bridge would otherwise send IGMP/MRD frames of its own to the taps.
    ip(['-n', name, 'link', 'add', 'br0', 'type', 'bridge', 'mcast_snooping', '0']);
    ip(['-n', name, 'link', 'set', 'br0', 'up']);
    for (const tap of [...bridged, ...down]) ip(['-n', name, 'tuntap', 'add', 'dev', tap, 'mode', 'tap']);
    for (const tap of bridged) {
      ip(['-n', name, 'link', 'set', tap, 'master', 'br0']);
      ip(['-n', name, 'link', 'set', tap, 'up']);
    }
  } catch (e) {
    destroy();
    throw e;
  }
  return {
    name,
    wrap: (cmd, args) => ['ip', ['netns', 'exec', name, cmd, ...args]],
    destroy,
  };
}

export const canMakeNetns: boolean = process.getuid?.() === 0;

/**
 * For the describe block it is called in: a namespace with taps guest0 and peer0 on a bridge,
 * made before its tests; afterwards everything started in it is killed and it is removed.
 */
export function namespaceForTests(): {
  readonly wrap: (cmd: string, args: readonly string[]) => [string, string[]];
  readonly startIn: (cmd: string, args: readonly string[]) => Running;
} {
  let ns: Netns | undefined;
  const running: Running[] = [];
  beforeAll(() => {
    ns = createNetns(['guest0', 'peer0']);
  });
  afterAll(() => {
    for (const r of running) r.stop();
    ns?.destroy();
  });
  const wrap = (cmd: string, args: readonly string[]): [string, string[]] => {
    if (ns === undefined) throw new Error('no namespace: used outside its describe block');
    return ns.wrap(cmd, args);
  };
  return {
    wrap,
    startIn: (cmd, args) => {
      const [c, full] = wrap(cmd, args);
      const r = start(c, full);
      running.push(r);
      return r;
    },
  };
}

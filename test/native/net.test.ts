// Network devices (solo5.md §1.4, §3.11, §3.14) inside a namespace this file creates: a bridge
// with the guest's tap, a peer tap for the test's own end, and a tap that is down. Attachment
// errors come before KVM; frames need a running guest.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kvmUsable } from './kvm.js';
import {
  canaryNet,
  expectLateFailure,
  expectReachedKvm,
  type Outcome,
  type Running,
  requireBuilt,
  runSync,
  start,
  tapPeer,
  tender,
} from './native.js';
import { canMakeNetns, createNetns, type Netns } from './netns.js';

const GUEST_MAC = '02:00:00:00:00:02';
const PEER_MAC = '02:00:00:00:00:01';

let ns: Netns;
const running: Running[] = [];

beforeAll(() => {
  if (!canMakeNetns) return;
  requireBuilt();
  ns = createNetns(['guest0', 'peer0'], ['down0']);
});
afterAll(() => {
  for (const r of running) r.stop();
  ns?.destroy();
});

function tenderIn(args: readonly string[], timeoutMs?: number): Outcome {
  const [cmd, full] = ns.wrap(tender, args);
  return runSync(cmd, full, timeoutMs);
}

function startIn(cmd: string, args: readonly string[]): Running {
  const [c, full] = ns.wrap(cmd, args);
  const r = start(c, full);
  running.push(r);
  return r;
}

function attachFails(r: Outcome, iface: string, why: string): void {
  const lines = r.stderr.split('\n');
  expect(lines.slice(0, 2)).toEqual([
    `petrel-hvt: Could not attach interface: ${iface}: ${why}`,
    `petrel-hvt: Invalid option: \`--net:service=${iface}'`,
  ]);
  expect(lines[2]).toMatch(/^usage: petrel-hvt /);
  expect(r.status).toBe(1);
}

describe.skipIf(!canMakeNetns)('--net and --net-mac', () => {
  it('an interface that does not exist', () => {
    attachFails(tenderIn(['--net:service=nope0', canaryNet]), 'nope0', 'No such file or directory');
  });

  it('an interface that is down', () => {
    attachFails(tenderIn(['--net:service=down0', canaryNet]), 'down0', 'Network is down');
  });

  it('a tap another process holds', async () => {
    const holder = startIn(tapPeer, ['guest0', 'hold']);
    await holder.waitFor('ready');
    try {
      attachFails(tenderIn(['--net:service=guest0', canaryNet]), 'guest0', 'Device or resource busy');
    } finally {
      holder.stop();
      await holder.exited;
    }
  });

  it('a name of 16 characters or more', () => {
    attachFails(
      tenderIn(['--net:service=abcdefghijklmnop', canaryNet]),
      'abcdefghijklmnop',
      'File name too long',
    );
  });

  it('@FD, which solo5 v0.12.1 always refuses, is refused with its words', () => {
    attachFails(tenderIn(['--net:service=@3', canaryNet]), '@3', 'Success');
  });

  it('malformed or undeclared --net-mac', () => {
    const bad = tenderIn(['--net:service=guest0', '--net-mac:service=zz:00', canaryNet]);
    expect(bad.stderr.split('\n')[0]).toBe("petrel-hvt: Invalid option: `--net-mac:service=zz:00'");
    const undeclared = tenderIn([`--net-mac:other=${GUEST_MAC}`, canaryNet]);
    expect(undeclared.stderr.split('\n')[0]).toBe("petrel-hvt: Resource not declared in manifest: 'other'");
    expect(undeclared.status).toBe(1);
  });

  it('an up tap on a bridge attaches and the run goes on to KVM', () => {
    const r = tenderIn([
      '--net:service=guest0',
      `--net-mac:service=${GUEST_MAC}`,
      '--mem=2',
      canaryNet,
      'exit',
      '3',
    ]);
    expectReachedKvm(r, 3);
  });

  it('a declared network must be attached (checked after KVM is open)', () => {
    const r = expectLateFailure(
      ['--mem=2', canaryNet],
      'All declared devices must be attached. See --help for syntax.',
    );
    expect(r.stderr).toContain("petrel-hvt: Device 'service' of type NET_BASIC declared but not attached.\n");
  });
});

const hex = (s: string) => Buffer.from(s, 'latin1').toString('hex');
const macHex = (m: string) => m.replaceAll(':', '');

describe.skipIf(!canMakeNetns || !kvmUsable)('frames through the bridge', () => {
  it('NET_WRITE: the guest sends one raw frame, the test reads it on the peer tap', async () => {
    const peer = startIn(tapPeer, ['peer0', 'recv', '88b5', '15000']);
    await peer.waitFor('ready');
    const r = tenderIn([
      '--net:service=guest0',
      `--net-mac:service=${GUEST_MAC}`,
      '--mem=2',
      canaryNet,
      'net-send',
    ]);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe(`petrel-canary net-send ret=0 mac=${GUEST_MAC} mtu=1500\n`);
    expect(r.status).toBe(0);
    expect((await peer.exited).status).toBe(0);
    const frame = peer.stdout().split('\n')[1] ?? '';
    const payload = hex('petrel-canary net-send').padEnd((60 - 14) * 2, '0');
    expect(frame).toBe(`ffffffffffff${macHex(GUEST_MAC)}88b5${payload}`);
  });

  it('NET_READ after POLL: the guest returns a frame the test sends, with its own MAC as source', async () => {
    const guest = startIn(tender, [
      '--net:service=guest0',
      `--net-mac:service=${GUEST_MAC}`,
      '--mem=2',
      canaryNet,
      'net-echo',
    ]);
    await guest.waitFor(`petrel-canary net-echo ready mac=${GUEST_MAC}`);
    const payload = hex('a frame from the host, returned by the guest');
    const out = `${macHex(GUEST_MAC)}${macHex(PEER_MAC)}88b5${payload}`;
    const peer = startIn(tapPeer, ['peer0', 'xchg', out, '88b5', GUEST_MAC, '15000']);
    expect((await peer.exited).status).toBe(0);
    expect(peer.stdout().split('\n')[1]).toBe(`${macHex(PEER_MAC)}${macHex(GUEST_MAC)}88b5${payload}`);
    await guest.waitFor('petrel-canary echoed 1 ret=0');
    process.kill(guest.pid, 'SIGTERM');
    expect((await guest.exited).status).toBe(1);
  });
});

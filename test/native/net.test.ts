// Network devices (solo5.md §1.4, §3.11, §3.14) inside a namespace this file creates: a bridge
// with the guest's tap, a peer tap for the test's own end, and a tap that is down. Attachment
// errors come before KVM; frames need a running guest.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectFrameEchoed, expectFrameSent } from './frames.js';
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

describe.skipIf(!canMakeNetns || !kvmUsable)('frames through the bridge', () => {
  it('NET_WRITE: the guest sends one raw frame, the test reads it on the peer tap', async () => {
    await expectFrameSent(
      startIn,
      () =>
        tenderIn([
          '--net:service=guest0',
          `--net-mac:service=${GUEST_MAC}`,
          '--mem=2',
          canaryNet,
          'net-send',
        ]),
      GUEST_MAC,
    );
  });

  it('NET_READ after POLL: the guest returns a frame the test sends, with its own MAC as source', async () => {
    const guest = await expectFrameEchoed(startIn, tender, canaryNet, { guest: GUEST_MAC, peer: PEER_MAC });
    process.kill(guest.pid, 'SIGTERM');
    expect((await guest.exited).status).toBe(1);
  });
});

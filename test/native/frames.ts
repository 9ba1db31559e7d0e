// The canary's two frame exchanges (native/canary/net.c) as the net tests of both tenders make
// them through a bridge in their own namespace: net-send (one frame out, read on the peer tap)
// and net-echo (one frame in from the peer tap, returned with the guest's MAC as source).
import { expect } from 'vitest';
import { type Outcome, type Running, tapPeer } from './native.js';

export type StartIn = (cmd: string, args: readonly string[]) => Running;

const hex = (s: string) => Buffer.from(s, 'latin1').toString('hex');
const macHex = (m: string) => m.replaceAll(':', '');

/** Runs the guest's net-send (runGuest) while the peer tap listens; checks the frame it sent. */
export async function expectFrameSent(
  startIn: StartIn,
  runGuest: () => Outcome | Promise<Outcome>,
  guestMac: string,
): Promise<void> {
  const peer = startIn(tapPeer, ['peer0', 'recv', '88b5', '15000']);
  await peer.waitFor('ready');
  const r = await runGuest();
  expect(r.stderr).toBe('');
  expect(r.stdout).toBe(`petrel-canary net-send ret=0 mac=${guestMac} mtu=1500\n`);
  expect(r.status).toBe(0);
  expect((await peer.exited).status).toBe(0);
  const payload = hex('petrel-canary net-send').padEnd((60 - 14) * 2, '0');
  expect(peer.stdout().split('\n')[1]).toBe(`ffffffffffff${macHex(guestMac)}88b5${payload}`);
}

/**
 * Starts the guest's net-echo on tap guest0 with guestMac, sends it one frame from peerMac on the
 * peer tap and checks the frame that comes back. Returns the guest, still running, for the caller
 * to end.
 */
export async function expectFrameEchoed(
  startIn: StartIn,
  tender: string,
  image: string,
  macs: { guest: string; peer: string },
): Promise<Running> {
  const guest = startIn(tender, [
    '--net:service=guest0',
    `--net-mac:service=${macs.guest}`,
    '--mem=2',
    image,
    'net-echo',
  ]);
  await guest.waitFor(`petrel-canary net-echo ready mac=${macs.guest}`);
  const payload = hex(`a frame from the host, returned by ${image}`);
  const out = `${macHex(macs.guest)}${macHex(macs.peer)}88b5${payload}`;
  const peer = startIn(tapPeer, ['peer0', 'xchg', out, '88b5', macs.guest, '15000']);
  expect((await peer.exited).status).toBe(0);
  expect(peer.stdout().split('\n')[1]).toBe(`${macHex(macs.peer)}${macHex(macs.guest)}88b5${payload}`);
  await guest.waitFor('petrel-canary echoed 1 ret=0');
  return guest;
}

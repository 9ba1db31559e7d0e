// The client certificates captured from Albatross 2.1.0 (read in place from ../shared/vectors):
// verified against the capture's own CA at a clock inside each leaf's five minutes, they yield
// the name, policies and command the Albatross endpoint derived; the frames Petrel would write
// to the daemon are byte for byte the endpoint's, and replaying the daemon's recorded replies
// through the proxy gives byte for byte the replies the TLS client received.

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { printName } from '../../src/resources/name.js';
import { loadTrustAnchor, verifyClientChain } from '../../src/tls/chain.js';
import type { Channel, Incoming } from '../../src/tls/channel.js';
import { authorize, type Identity } from '../../src/tls/identity.js';
import { proxy, requestFrames, serviceFor } from '../../src/tls/proxy.js';
import { x509 } from '../../src/tls/x509.js';
import { decodeWire, frame } from '../../src/wire/index.js';
import type { Wire } from '../../src/wire/types.js';
import { VECTORS } from './helpers.js';

const read = (...parts: string[]): Uint8Array => new Uint8Array(readFileSync(join(VECTORS, ...parts)));

const anchor = (() => {
  const loaded = loadTrustAnchor(read('pki', 'cacert.der'));
  if (!loaded.ok) throw new Error(loaded.error.message);
  return loaded.value;
})();

interface Step {
  readonly dir: string;
  /** client-cert.der then client-chainN.der. */
  readonly presented: Uint8Array[];
  /** The endpoint's own files in its order: unix-write, unix-read, tls-write. */
  readonly endpoint: { readonly kind: string; readonly bytes: Uint8Array }[];
}

function step(dir: string): Step {
  const files = readdirSync(join(VECTORS, dir)).sort();
  const presented = files.filter((f) => /-client-(cert|chain\d+)\.der$/.test(f)).map((f) => read(dir, f));
  const endpoint = files
    .filter((f) => f.startsWith('albatross-tls-endpoint-'))
    .map((f) => ({
      kind: (/-(unix-write|unix-read|tls-write)\.bin$/.exec(f) ?? [])[1] ?? '',
      bytes: read(dir, f),
    }));
  return { dir, presented, endpoint };
}

const withClientCerts = readdirSync(VECTORS)
  .filter((d) => /^\d\d-/.test(d))
  .map(step)
  .filter((s) => s.presented.length > 0);

/** A clock one minute into the leaf's validity (the leaves lived five minutes in November 2026). */
const clockFor = (s: Step): Date =>
  new Date(new x509.X509Certificate(s.presented[0] as Uint8Array).notBefore.getTime() + 60_000);

async function identityOf(s: Step) {
  const path = await verifyClientChain(s.presented, anchor, clockFor(s));
  if (!path.ok) throw new Error(`${s.dir}: ${path.error.message}`);
  return authorize(path.value);
}

const decode = (framed: Uint8Array): Wire => {
  const wire = decodeWire(framed.subarray(4));
  if (!wire.ok) throw new Error(wire.error.message);
  return wire.value;
};

const REFUSED: Record<string, { code: string; message: RegExp }> = {
  '02-policy-info-root-nopath': { code: 'E_TLS_NAME', message: /^invalid label ""/ },
  '05-policy-add-via-leaf': { code: 'E_TLS_COMMAND', message: /^unexpected command$/ },
  '11-policy-info-subca': { code: 'E_TLS_NAME', message: /^invalid label ""/ },
  '29-policy-remove-via-leaf': { code: 'E_TLS_COMMAND', message: /^unexpected command$/ },
};

describe('captured Albatross 2.1.0 client certificates', () => {
  it('covers the steps the capture has', () => {
    expect(withClientCerts.map((s) => s.dir)).toContain('08-unikernel-info-sub');
    expect(withClientCerts.length).toBeGreaterThanOrEqual(20);
  });

  for (const s of withClientCerts) {
    const refusal = REFUSED[s.dir];
    if (refusal !== undefined) {
      it(`${s.dir}: refused as the Albatross endpoint refused it, with no frame`, async () => {
        const identity = await identityOf(s);
        expect(identity.ok).toBe(false);
        if (identity.ok) return;
        expect(identity.error.code).toBe(refusal.code);
        expect(identity.error.message).toMatch(refusal.message);
        expect(s.endpoint).toEqual([]);
      });
      continue;
    }
    it(`${s.dir}: same name, policies and command, same frames to the daemon`, async () => {
      const identity = await identityOf(s);
      if (!identity.ok) throw new Error(identity.error.message);
      const writes = s.endpoint.filter((f) => f.kind === 'unix-write').map((f) => f.bytes);
      const sent = writes.map(decode);
      const command = sent.at(-1) as Wire;
      expect(printName(identity.value.name)).toBe(printName(command.header.name));
      expect(command.payload).toEqual({ kind: 'command', command: identity.value.command });
      // Chain policies go to the engine socket only; console and stats commands get none.
      const installed = serviceFor(identity.value.command) === 'vmmd' ? identity.value.policies : [];
      expect(installed.map((p) => ({ name: `${p.path.join(':')}:`, policy: p.policy }))).toEqual(
        sent.slice(0, -1).map((w) => ({
          name: printName(w.header.name),
          policy:
            w.payload.kind === 'command' &&
            w.payload.command.type === 'policy-add' &&
            w.payload.command.policy,
        })),
      );
      let counter = command.header.sequence - BigInt(sent.length - 1);
      const frames = requestFrames(identity.value, identity.value.command, () => counter++);
      expect(frames).toEqual(writes);
    });
  }

  it('SUB leaves: path sub, one policy, as the spec example says', async () => {
    const s = withClientCerts.find((x) => x.dir === '08-unikernel-info-sub') as Step;
    const identity = await identityOf(s);
    expect(identity.ok && printName(identity.value.name)).toBe('sub:');
    expect(identity.ok && identity.value.policies).toEqual([
      { path: ['sub'], policy: { vms: 2n, memory: 256, cpuids: [0], block: 100, bridges: ['service'] } },
    ]);
  });

  it('the leaf openssl s_server saw on the wire, with the sub CA', async () => {
    const presented = [
      read('99-wire-crosscheck-openssl-s_server', 'info-leaf-cert-from-wire.der'),
      read('pki', 'sub.der'),
    ];
    const now = new Date(new x509.X509Certificate(presented[0] as Uint8Array).notBefore.getTime() + 60_000);
    const path = await verifyClientChain(presented, anchor, now);
    if (!path.ok) throw new Error(path.error.message);
    const identity = authorize(path.value);
    expect(identity.ok && printName(identity.value.name)).toBe('sub:');
    expect(identity.ok && identity.value.command).toEqual({ type: 'unikernel-info', release: '2.1' });
  });

  it('outside the leaf validity window the same chains are refused', async () => {
    const s = withClientCerts.find((x) => x.dir === '08-unikernel-info-sub') as Step;
    const result = await verifyClientChain(s.presented, anchor, new Date(clockFor(s).getTime() + 3_600_000));
    expect(!result.ok && result.error.code).toBe('E_TLS_EXPIRED');
  });
});

/** A channel over recorded frames; writes are kept, and fail from the `failAt`-th one on. */
class Recorded implements Channel {
  readonly writes: Uint8Array[] = [];
  #incoming: Incoming[];
  readonly #failAt: number;
  readonly closed = new Promise<void>(() => {});
  constructor(incoming: readonly Uint8Array[], failAt = Number.POSITIVE_INFINITY) {
    this.#incoming = incoming.map((bytes) => ({ kind: 'frame', payload: bytes.subarray(4) }));
    this.#failAt = failAt;
  }
  next(): Promise<Incoming> {
    return Promise.resolve(this.#incoming.shift() ?? { kind: 'closed' });
  }
  raw(): void {
    // The frames still to come, as the bytes that carried them.
    this.#incoming = this.#incoming.map((e) =>
      e.kind === 'frame' ? { kind: 'frame', payload: frame(e.payload) } : e,
    );
  }
  write(bytes: Uint8Array): Promise<boolean> {
    this.writes.push(bytes.slice());
    return Promise.resolve(this.writes.length < this.#failAt);
  }
  end(): void {}
  destroy(): void {}
}

describe('replaying the daemon side of the capture through the proxy', () => {
  /** Steps whose reply ended the exchange; 13 and 28 were still streaming when the capture ended. */
  const finished = ['01', '03', '04', '08', '09', '10', '15', '16', '22', '23', '25', '26', '27', '31'];
  for (const s of withClientCerts.filter((x) => finished.includes(x.dir.slice(0, 2)))) {
    it(`${s.dir}: the same daemon frames and the same TLS reply`, async () => {
      const { daemon, client } = await replay(s);
      expect(daemon.writes).toEqual(s.endpoint.filter((f) => f.kind === 'unix-write').map((f) => f.bytes));
      expect(client.writes).toEqual(s.endpoint.filter((f) => f.kind === 'tls-write').map((f) => f.bytes));
    });
  }

  it('13 (console): each daemon frame forwarded unchanged, first reply keeping the internal sequence', async () => {
    const s = withClientCerts.find((x) => x.dir.startsWith('13-')) as Step;
    const { client } = await replay(s);
    const expected = s.endpoint.filter((f) => f.kind === 'tls-write').map((f) => f.bytes);
    expect(client.writes.slice(0, expected.length)).toEqual(expected);
    expect(decode(client.writes[0] as Uint8Array).header.sequence).toBe(9n);
  });

  it('17 (console, client stopped): the failed write is followed by Failure "exception"', async () => {
    const s = withClientCerts.find((x) => x.dir.startsWith('17-')) as Step;
    const expected = s.endpoint.filter((f) => f.kind === 'tls-write').map((f) => f.bytes);
    const { client } = await replay(s, expected.length - 1);
    expect(client.writes).toEqual(expected);
  });

  it('28 (stats): "subscribed" forwarded with the daemon header', async () => {
    const s = withClientCerts.find((x) => x.dir.startsWith('28-')) as Step;
    const { client } = await replay(s);
    expect(client.writes[0]).toEqual(s.endpoint.find((f) => f.kind === 'tls-write')?.bytes);
  });
});

async function replay(s: Step, failAt?: number): Promise<{ daemon: Recorded; client: Recorded }> {
  const identity = await identityOf(s);
  if (!identity.ok) throw new Error(identity.error.message);
  const writes = s.endpoint.filter((f) => f.kind === 'unix-write');
  let counter = decode(writes[0]?.bytes as Uint8Array).header.sequence;
  const daemon = new Recorded(s.endpoint.filter((f) => f.kind === 'unix-read').map((f) => f.bytes));
  const client = new Recorded([], failAt);
  await proxy({
    identity: identity.value as Identity,
    client,
    connect: () => Promise.resolve(daemon),
    sequence: () => counter++,
    maxFrameBytes: 1 << 20,
  });
  return { daemon, client };
}

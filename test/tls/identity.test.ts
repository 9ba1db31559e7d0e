// Identity derivation (semantics §14.2) over paths of certificates: names from CNs (absent vs
// empty vs `.`), policies deepest first, the allowed leaf commands, the error texts, and the
// static check that each chain policy fits inside the one above it.

import { beforeAll, describe, expect, it } from 'vitest';
import { printName } from '../../src/resources/name.js';
import { authorize, checkChainPolicies, deriveIdentity, leafCommandAllowed } from '../../src/tls/identity.js';
import type { Issuer } from '../../src/tls/pki.js';
import type { x509 } from '../../src/tls/x509.js';
import type { Command } from '../../src/wire/types.js';
import { delegate, forge, INFO, leaf, policy, rootCa, view } from './helpers.js';

let root: Issuer;
beforeAll(async () => {
  root = await rootCa();
});

const views = (chain: readonly x509.X509Certificate[]) => chain.map(view);

async function derive(cn: string | null, command: Command = INFO, issuer: Issuer = root) {
  return deriveIdentity(views((await leaf(issuer, cn, command)).chain));
}

const NAMED: readonly [Command, string][] = [
  [{ type: 'policy-add', policy: policy() }, 'policy add may not have an empty name'],
  [{ type: 'policy-remove' }, 'policy remove may not have an empty name'],
  [{ type: 'block-add', size: 1 }, 'block add may not have an empty name'],
  [
    { type: 'block-add-old', size: 1, compressed: false, data: null },
    'old block add may not have an empty name',
  ],
  [{ type: 'block-remove' }, 'block remove may not have an empty name'],
  [{ type: 'block-set', compressed: false }, 'block set may not have an empty name'],
  [
    { type: 'block-set-old', compressed: false, data: new Uint8Array() },
    'old block set may not have an empty name',
  ],
  [{ type: 'block-dump', level: 0 }, 'block dump may not have an empty name'],
  [{ type: 'block-dump-old', level: 0 }, 'block dump may not have an empty name'],
];

describe('the leaf name', () => {
  it('CN `.` and `:` name the path itself; an absent CN too, for commands that allow it', async () => {
    const alice = await delegate(root, 'alice');
    for (const cn of ['.', ':', null]) {
      const identity = await derive(cn, INFO, alice);
      expect(identity.ok && printName(identity.value.name)).toBe('alice:');
    }
    const atRoot = await derive('.');
    expect(atRoot.ok && printName(atRoot.value.name)).toBe(':');
  });

  it.each(NAMED)('an absent CN is refused for %o', async (command, text) => {
    const identity = await derive(null, command);
    expect(identity).toMatchObject({ ok: false, error: { code: 'E_TLS_EMPTY_NAME', message: text } });
  });

  it('any other CN is a label under the path, lower-cased', async () => {
    const arc = await delegate(root, 'arc', policy({ vms: 1, memory: 512 }));
    expect(printName(ok(await derive('foo')).name)).toBe(':foo');
    expect(printName(ok(await derive('foo.bar')).name)).toBe(':foo.bar');
    expect(printName(ok(await derive('Web', INFO, arc)).name)).toBe('arc:web');
  });

  it.each(['', 'a:b', '-x', 'x'.repeat(64), 'é'])('CN %j is not a label', async (cn) => {
    const identity = await derive(cn);
    expect(identity).toMatchObject({ ok: false, error: { code: 'E_TLS_NAME' } });
    expect(!identity.ok && identity.error.message).toMatch(/^invalid label/);
  });
});

describe('the leaf command', () => {
  const forbidden: Command[] = [
    { type: 'policy-add', policy: policy() },
    { type: 'policy-remove' },
    { type: 'console-add', limit: null },
    { type: 'stats-add', vmmdev: 'x', pid: 1, network: [] },
    { type: 'stats-remove' },
    { type: 'stats-initial' },
  ];
  it.each(forbidden)('%o is an unexpected command', async (command) => {
    const identity = await derive('web', command);
    expect(identity).toMatchObject({
      ok: false,
      error: { code: 'E_TLS_COMMAND', message: 'unexpected command' },
    });
  });

  it('console, stats subscribe, unikernel, policy info and block commands are allowed', () => {
    const allowed: Command[] = [
      { type: 'console-subscribe', release: '2.1', select: { kind: 'count', count: 3 } },
      { type: 'console-list-inactive' },
      { type: 'stats-subscribe' },
      INFO,
      { type: 'unikernel-destroy' },
      { type: 'unikernel-get', level: 9 },
      { type: 'unikernel-restart', form: 'legacy' },
      { type: 'policy-info' },
      ...NAMED.slice(2).map(([c]) => c),
      { type: 'block-info' },
    ];
    for (const command of allowed) expect(leafCommandAllowed(command)).toBe(true);
  });

  it('a leaf without the extension', async () => {
    const bare = await forge({ issuer: root, cn: 'web', ca: false });
    expect(deriveIdentity(views(bare.chain))).toMatchObject({
      ok: false,
      error: {
        code: 'E_TLS_NO_EXTENSION',
        message: 'leaf certificate does not contain an albatross extension',
      },
    });
  });

  it('an extension that does not decode gives the decoder message', async () => {
    const garbage = await forge({
      issuer: root,
      cn: 'web',
      extensionValue: new Uint8Array([0x30, 0x03, 2, 1]),
    });
    expect(deriveIdentity(views(garbage.chain))).toMatchObject({
      ok: false,
      error: { code: 'E_TLS_EXTENSION' },
    });
    // Version 4 instead of 5: `30 09 02 01 04 a3 04 b3 02 05 00`.
    const v4 = new Uint8Array([0x30, 0x09, 0x02, 0x01, 0x04, 0xa3, 0x04, 0xb3, 0x02, 0x05, 0x00]);
    const old = await forge({ issuer: root, cn: 'web', extensionValue: v4 });
    const identity = deriveIdentity(views(old.chain));
    expect(!identity.ok && identity.error.message).toMatch(/^unknown version number 0x4/);
  });

  it('a critical extension is refused here too', async () => {
    const critical = await forge({ issuer: root, cn: 'web', command: INFO, critical: true });
    expect(deriveIdentity(views(critical.chain))).toMatchObject({
      ok: false,
      error: { code: 'E_TLS_CRITICAL_EXTENSION' },
    });
  });
});

describe('the chain', () => {
  it('labels and policies come from intermediates with the extension, deepest first', async () => {
    const plain = await forge({ issuer: root, cn: 'plain' });
    const alice = await delegate(plain, 'alice', policy({ vms: 4 }));
    const bob = await delegate(alice, 'bob', policy({ vms: 2 }));
    const identity = ok(deriveIdentity(views((await leaf(bob, 'web')).chain)));
    expect(printName(identity.name)).toBe('alice:bob:web');
    expect(identity.policies.map((p) => [p.path.join(':'), p.policy.vms])).toEqual([
      ['alice:bob', 2n],
      ['alice', 4n],
    ]);
  });

  it('an intermediate carrying anything but policy add', async () => {
    const odd = await forge({ issuer: root, cn: 'alice', command: INFO });
    expect(deriveIdentity(views((await leaf(odd, 'web')).chain))).toMatchObject({
      ok: false,
      error: { code: 'E_TLS_UNEXPECTED_WIRE', message: 'unexpected wire unikernel-info' },
    });
  });

  it('an intermediate policy without a CN, or with a CN that is not a label', async () => {
    const add: Command = { type: 'policy-add', policy: policy() };
    const nameless = await forge({ issuer: root, cn: null, command: add });
    expect(deriveIdentity(views((await leaf(nameless, 'web')).chain))).toMatchObject({
      ok: false,
      error: { code: 'E_TLS_EMPTY_NAME', message: 'policy add may not have an empty name' },
    });
    const bad = await forge({ issuer: root, cn: 'a:b', command: add });
    expect(deriveIdentity(views((await leaf(bad, 'web')).chain))).toMatchObject({
      ok: false,
      error: { code: 'E_TLS_NAME' },
    });
  });

  it('empty and overlong chains', () => {
    expect(deriveIdentity([])).toMatchObject({ ok: false, error: { message: 'empty chain' } });
    const ten = Array.from({ length: 10 }, () => ({ der: new Uint8Array(), commonName: null }));
    expect(deriveIdentity(ten)).toMatchObject({
      ok: false,
      error: { message: 'certificate chain too long' },
    });
  });

  it('a policy that exceeds the one above it is refused before anything is sent', async () => {
    const alice = await delegate(root, 'alice', policy({ vms: 2 }));
    const bob = await delegate(alice, 'bob', policy({ vms: 4 }));
    const chain = views((await leaf(bob, 'web')).chain);
    expect(deriveIdentity(chain).ok).toBe(true);
    expect(authorize(chain)).toMatchObject({
      ok: false,
      error: {
        code: 'E_TLS_POLICY',
        message: 'policy of alice:bob: policy above allows 2 unikernels, which is fewer than 4',
      },
    });
    const identity = ok(deriveIdentity(chain));
    expect(checkChainPolicies(identity.policies).ok).toBe(false);
    expect(checkChainPolicies(identity.policies.slice(1)).ok).toBe(true);
  });
});

function ok<T>(result: { ok: true; value: T } | { ok: false; error: { message: string } }): T {
  if (!result.ok) throw new Error(result.error.message);
  return result.value;
}

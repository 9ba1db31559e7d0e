// Path building and verification: each way a presented chain can fail, and the path it yields
// when it does not (signatures link issuers, not names; extra certificates are ignored).

import { beforeAll, describe, expect, it } from 'vitest';
import { decodeDer, encodePem } from '../../src/tls/certs.js';
import { loadTrustAnchor, type TrustAnchor, verifyClientChain } from '../../src/tls/chain.js';
import type { Issuer } from '../../src/tls/pki.js';
import { x509 } from '../../src/tls/x509.js';
import {
  current,
  delegate,
  der,
  ders,
  expired,
  forge,
  future,
  INFO,
  leaf,
  policy,
  rootCa,
} from './helpers.js';

let root: Issuer;
let anchor: TrustAnchor;

beforeAll(async () => {
  root = await rootCa();
  const loaded = loadTrustAnchor(root.chain[0]?.toString('pem') ?? '');
  if (!loaded.ok) throw new Error(loaded.error.message);
  anchor = loaded.value;
});

async function verify(chain: readonly x509.X509Certificate[] | Uint8Array[], now = new Date()) {
  const bytes = chain.map((c) => (c instanceof Uint8Array ? c : der(c)));
  return verifyClientChain(bytes, anchor, now);
}

async function refused(chain: readonly x509.X509Certificate[] | Uint8Array[]) {
  const result = await verify(chain);
  if (result.ok) throw new Error('expected the chain to be refused');
  return result.error;
}

describe('accepted paths', () => {
  it('a leaf signed by the root: the path is the leaf alone', async () => {
    const client = await leaf(root, 'web');
    const path = await verify(client.chain);
    expect(path.ok && path.value.map((c) => c.subject)).toEqual(['CN=web']);
  });

  it('leaf, intermediate: the path keeps the intermediate; the anchor only when the client sent it', async () => {
    const alice = await delegate(root, 'alice');
    const client = await leaf(alice, '.');
    const without = await verify(client.chain);
    expect(without.ok && without.value.map((c) => c.commonName)).toEqual(['.', 'alice']);
    const withAnchor = await verify([...client.chain, root.chain[0] as x509.X509Certificate]);
    expect(withAnchor.ok && withAnchor.value.map((c) => c.commonName)).toEqual(['.', 'alice', 'ca']);
  });

  it('ignores presented certificates off the path', async () => {
    const alice = await delegate(root, 'alice');
    const stranger = await delegate(await rootCa('other'), 'bob');
    const client = await leaf(alice, 'web');
    const path = await verify([...client.chain, stranger.chain[0] as x509.X509Certificate]);
    expect(path.ok && path.value.map((c) => c.commonName)).toEqual(['web', 'alice']);
  });

  it('distinguishes an absent CN from an empty one', async () => {
    const none = await verify((await leaf(root, null)).chain);
    const empty = await verify((await leaf(root, '')).chain);
    expect(none.ok && none.value[0]?.commonName).toBe(null);
    expect(empty.ok && empty.value[0]?.commonName).toBe('');
  });

  it.each(['p256', 'p384', 'rsa2048'] as const)('verifies %s signatures', async (keyType) => {
    const other = await rootCa('ca', keyType);
    const loaded = loadTrustAnchor(der(other.chain[0] as x509.X509Certificate));
    if (!loaded.ok) throw new Error(loaded.error.message);
    const client = await leaf(other, 'web');
    const path = await verifyClientChain(ders(client.chain), loaded.value, new Date());
    expect(path.ok).toBe(true);
  });
});

describe('refused paths', () => {
  it('expired and not-yet-valid leaves', async () => {
    expect((await refused((await leaf(root, 'web', undefined, expired())).chain)).code).toBe('E_TLS_EXPIRED');
    expect((await refused((await leaf(root, 'web', undefined, future())).chain)).code).toBe(
      'E_TLS_NOT_YET_VALID',
    );
  });

  it('expired and not-yet-valid intermediates', async () => {
    const old = await delegate(root, 'alice', policy(), expired());
    expect((await refused((await leaf(old, 'web')).chain)).code).toBe('E_TLS_EXPIRED');
    const early = await delegate(root, 'alice', policy(), future());
    expect((await refused((await leaf(early, 'web')).chain)).code).toBe('E_TLS_NOT_YET_VALID');
  });

  it('validity is judged at the clock given, not the system clock', async () => {
    const client = await leaf(root, 'web');
    const later = new Date(Date.now() + 3 * 86_400_000);
    const result = await verify(client.chain, later);
    expect(!result.ok && result.error.code).toBe('E_TLS_EXPIRED');
  });

  it('a chain to another CA', async () => {
    const other = await rootCa('other');
    const error = await refused((await leaf(other, 'web')).chain);
    expect(error.code).toBe('E_TLS_UNTRUSTED');
    // Same subject as our CA, other key: linked by name, refused by signature.
    const twin = await rootCa('ca');
    expect((await refused((await leaf(twin, 'web')).chain)).code).toBe('E_TLS_SIGNATURE');
  });

  it('an intermediate without CA:TRUE', async () => {
    const notCa = await forge({ issuer: root, cn: 'alice', ca: false, command: policyAdd() });
    expect((await refused((await leaf(notCa, 'web')).chain)).code).toBe('E_TLS_NOT_CA');
    const noConstraints = await forge({ issuer: root, cn: 'alice', ca: null, command: policyAdd() });
    expect((await refused((await leaf(noConstraints, 'web')).chain)).code).toBe('E_TLS_NOT_CA');
  });

  it('an intermediate without keyCertSign', async () => {
    const usage = x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.cRLSign;
    const noSign = await forge({ issuer: root, cn: 'alice', keyUsage: usage, command: policyAdd() });
    const error = await refused((await leaf(noSign, 'web')).chain);
    expect(error.code).toBe('E_TLS_KEY_USAGE');
    expect(error.message).toContain('keyCertSign');
  });

  it('a look-alike intermediate: same subject, other key, larger policy', async () => {
    const alice = await delegate(root, 'alice', policy({ vms: 1 }));
    const lookAlike = await delegate(root, 'alice', policy({ vms: 100 }));
    const client = await leaf(alice, 'web');
    // Presented as the only intermediate: its key does not verify the leaf.
    const alone = await refused([
      client.chain[0] as x509.X509Certificate,
      lookAlike.chain[0] as x509.X509Certificate,
    ]);
    expect(alone.code).toBe('E_TLS_SIGNATURE');
    // Presented before the real one: the real one is on the path, the look-alike is not.
    const both = await verify([
      client.chain[0] as x509.X509Certificate,
      lookAlike.chain[0] as x509.X509Certificate,
      alice.chain[0] as x509.X509Certificate,
    ]);
    expect(both.ok && both.value.map((c) => c.der)).toEqual([
      der(client.chain[0] as never),
      der(alice.chain[0] as never),
    ]);
  });

  it('an unknown critical extension, the Albatross one included', async () => {
    const critical = await forge({ issuer: root, cn: 'alice', command: policyAdd(), critical: true });
    const error = await refused((await leaf(critical, 'web')).chain);
    expect(error.code).toBe('E_TLS_CRITICAL_EXTENSION');
    expect(error.message).toContain('1.3.6.1.4.1.49836.42');
    const other = new x509.Extension('1.2.3.4', true, new Uint8Array([5, 0]));
    const odd = await forge({ issuer: root, cn: 'alice', command: policyAdd(), extra: [other] });
    expect((await refused((await leaf(odd, 'web')).chain)).code).toBe('E_TLS_CRITICAL_EXTENSION');
  });

  it('path length constraints', async () => {
    const capped = await forge({ issuer: root, cn: 'alice', command: policyAdd(), pathLength: 0 });
    const bob = await delegate(capped, 'bob');
    expect((await refused((await leaf(bob, 'web')).chain)).code).toBe('E_TLS_PATH_LENGTH');
    expect((await verify((await leaf(capped, 'web')).chain)).ok).toBe(true);
  });

  it('a chain of 10 is refused before anything is parsed; 9 real ones verify', async () => {
    let issuer = root;
    for (let i = 0; i < 8; i++) issuer = await delegate(issuer, `l${i}`);
    const nine = await leaf(issuer, 'web');
    expect(nine.chain).toHaveLength(9);
    expect((await verify(nine.chain)).ok).toBe(true);
    const garbage = Array.from({ length: 10 }, () => new Uint8Array([1, 2, 3]));
    const error = await refused(garbage);
    expect(error).toMatchObject({ code: 'E_TLS_CHAIN_TOO_LONG', message: 'certificate chain too long' });
    // The same nine plus the anchor the client sent along: 10 presented.
    expect((await refused([...nine.chain, root.chain[0] as x509.X509Certificate])).code).toBe(
      'E_TLS_CHAIN_TOO_LONG',
    );
  });

  it('many same-named certificates sharing one key do not make the search explode', async () => {
    const { generateKey } = await import('../../src/tls/keys.js');
    const key = await generateKey('ed25519');
    const loops = await Promise.all(Array.from({ length: 8 }, () => forge({ key, cn: 'x' })));
    const client = await leaf(loops[0] as Issuer, 'web');
    const started = Date.now();
    const error = await refused([
      client.chain[0] as x509.X509Certificate,
      ...loops.map((l) => l.chain[0] as x509.X509Certificate),
    ]);
    expect(error.code).toBe('E_TLS_UNTRUSTED');
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('no certificate, or one that does not parse', async () => {
    expect((await refused([])).code).toBe('E_TLS_NO_CERTIFICATE');
    expect((await refused([new Uint8Array([0x30, 0x03, 1, 2, 3])])).code).toBe('E_TLS_CERT_INVALID');
  });
});

describe('the cache of verified intermediates', () => {
  // Each case first gets the genuine chain verified (so its intermediate and the link to the
  // anchor are cached), then presents what must still be refused.
  it('never lets a look-alike through: same subject, other key; same key, other signer; one byte changed', async () => {
    const alice = await delegate(root, 'alice');
    const genuine = await leaf(alice, 'web');
    expect((await verify(genuine.chain)).ok).toBe(true);

    const otherKey = await delegate(root, 'alice'); // same subject and issuer, its own key
    const byOtherKey = await leaf(otherKey, 'web');
    expect((await refused([byOtherKey.chain[0], alice.chain[0]] as x509.X509Certificate[])).code).toBe(
      'E_TLS_SIGNATURE',
    );
    expect((await refused([genuine.chain[0], otherKey.chain[0]] as x509.X509Certificate[])).code).toBe(
      'E_TLS_SIGNATURE',
    );

    // alice's own subject and key, signed by a CA that only shares our CA's name: the leaf's
    // signature verifies under it, the intermediate's does not under the anchor.
    const twin = await rootCa('ca');
    const sameKey = await forge({ issuer: twin, cn: 'alice', key: alice.key, command: policyAdd() });
    const underTwin = await leaf(sameKey, 'web');
    expect((await refused(underTwin.chain)).code).toBe('E_TLS_SIGNATURE');
    expect((await refused([genuine.chain[0], sameKey.chain[0]] as x509.X509Certificate[])).code).toBe(
      'E_TLS_SIGNATURE',
    );

    // The cached intermediate with the last byte of its signature changed.
    const tampered = der(alice.chain[0] as x509.X509Certificate).slice();
    tampered[tampered.length - 1] = (tampered.at(-1) as number) ^ 0x01;
    expect((await refused([der(genuine.chain[0] as x509.X509Certificate), tampered])).code).toBe(
      'E_TLS_SIGNATURE',
    );

    // And the genuine chain, verified between the look-alikes, is still accepted.
    expect((await verify((await leaf(alice, 'db')).chain)).ok).toBe(true);
  });

  it('an intermediate that expired after it was cached is refused, as is one not yet valid', async () => {
    const now = Date.now();
    const at = (minutes: number) => new Date(now + minutes * 60_000);
    const shortLived = await delegate(root, 'alice', policy(), { notBefore: at(30), notAfter: at(120) });
    const client = await leaf(shortLived, 'web', INFO, { notBefore: at(-60), notAfter: at(24 * 60) });
    expect((await verify(client.chain, at(60))).ok).toBe(true);
    const later = await verify(client.chain, at(180));
    expect(!later.ok && later.error).toMatchObject({
      code: 'E_TLS_EXPIRED',
      message: expect.stringContaining('CN=alice expired'),
    });
    const earlier = await verify(client.chain, at(10));
    expect(!earlier.ok && earlier.error).toMatchObject({
      code: 'E_TLS_NOT_YET_VALID',
      message: expect.stringContaining('CN=alice is not valid before'),
    });
    expect((await verify(client.chain, at(60))).ok).toBe(true);
  });
});

describe('the trust anchor', () => {
  it('must be exactly one CA certificate', async () => {
    const two = `${root.chain[0]?.toString('pem')}\n${(await rootCa('x')).chain[0]?.toString('pem')}`;
    expect(loadTrustAnchor(two)).toMatchObject({ ok: false, error: { code: 'E_TLS_ANCHOR' } });
    const endEntity = await leaf(root, 'web');
    expect(loadTrustAnchor(der(endEntity.chain[0] as x509.X509Certificate))).toMatchObject({ ok: false });
    expect(loadTrustAnchor('not pem')).toMatchObject({ ok: false, error: { code: 'E_TLS_ANCHOR' } });
  });

  it('is read from PEM by our own reader: blocks in order, CRLF and text around them, bad base64 named', async () => {
    const other = (await rootCa('x')).chain[0] as x509.X509Certificate;
    const first = root.chain[0] as x509.X509Certificate;
    const text = `subject=ca\r\n${first.toString('pem').replaceAll('\n', '\r\n')}\r\nnoise\n${other.toString('pem')}\n`;
    expect(decodeDer(text)).toEqual([der(first), der(other)]);
    expect(encodePem(der(first))).toBe(first.toString('pem'));
    expect(decodeDer(encodePem(der(other)))).toEqual([der(other)]);
    const broken = first.toString('pem').replace(/\n[A-Za-z0-9]/, '\n!');
    expect(() => decodeDer(broken)).toThrow('the PEM block CERTIFICATE is not base64');
    expect(loadTrustAnchor(broken)).toMatchObject({
      ok: false,
      error: { code: 'E_TLS_ANCHOR', message: expect.stringContaining('not base64') },
    });
    expect(loadTrustAnchor(encodePem(der(first)))).toMatchObject({ ok: true, value: { der: der(first) } });
  });

  it('an expired anchor refuses everything', async () => {
    const old = await forge({ cn: 'old', validity: expired() });
    const loaded = loadTrustAnchor(der(old.chain[0] as x509.X509Certificate));
    if (!loaded.ok) throw new Error(loaded.error.message);
    const client = await leaf(old, 'web', undefined, current());
    const result = await verifyClientChain(ders(client.chain), loaded.value, new Date());
    expect(!result.ok && result.error.code).toBe('E_TLS_EXPIRED');
  });
});

function policyAdd() {
  return { type: 'policy-add', policy: policy() } as const;
}

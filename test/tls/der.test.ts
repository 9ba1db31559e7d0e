// Certificates encoded by src/tls/encode.ts and read by src/tls/der.ts, checked against two
// independent implementations: @peculiar/x509's parser and node:crypto's (OpenSSL's) X509
// verification; and the verifier's synchronous signature path refusing tampered signatures.

import { X509Certificate as NodeX509 } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadTrustAnchor, type TrustAnchor, verifyClientChain } from '../../src/tls/chain.js';
import { keyIdentifier, readBasicConstraints, readCertificate, readKeyUsage } from '../../src/tls/der.js';
import { KEY_TYPES } from '../../src/tls/keys.js';
import { type Issuer, issueCommandLeaf } from '../../src/tls/pki.js';
import { x509 } from '../../src/tls/x509.js';
import { delegate, der, forge, INFO, leaf, name, policy, rootCa } from './helpers.js';

const types = KEY_TYPES.filter((t) => t !== 'rsa4096');

async function anchorOf(root: Issuer): Promise<TrustAnchor> {
  const anchor = loadTrustAnchor(root.chain[0]?.toString('pem') ?? '');
  if (!anchor.ok) throw new Error(anchor.error.message);
  return anchor.value;
}

/** The same certificate with one byte of its signature changed. */
function tampered(cert: x509.X509Certificate): Uint8Array {
  const bytes = der(cert).slice();
  bytes[bytes.length - 5] = (bytes[bytes.length - 5] as number) ^ 0x01;
  return bytes;
}

describe.each(types)('%s certificates', (type) => {
  let root: Issuer;
  let alice: Issuer;
  beforeAll(async () => {
    root = await rootCa('ca', type);
    alice = await delegate(root, 'alice', policy());
  });

  it('are verified by OpenSSL and read alike by @peculiar/x509 and by der.ts', async () => {
    const issued = await issueCommandLeaf(alice, INFO, name(':web'), { keyType: type });
    if (!issued.ok) throw new Error(issued.error.message);
    const cert = issued.value.certificate;
    const node = new NodeX509(Buffer.from(issued.value.der));
    const issuerNode = new NodeX509(Buffer.from(der(alice.chain[0] as x509.X509Certificate)));
    expect(node.checkIssued(issuerNode)).toBe(true);
    expect(node.verify(issuerNode.publicKey)).toBe(true);
    expect(
      new NodeX509(Buffer.from(der(root.chain[0] as x509.X509Certificate))).verify(issuerNode.publicKey),
    ).toBe(false);

    const fields = readCertificate(issued.value.der);
    const ku = cert.getExtension(x509.KeyUsagesExtension);
    const usage = fields.extensions.find((e) => e.oid === '2.5.29.15');
    expect(usage && readKeyUsage(usage.value)).toBe(ku?.usages);
    const bc = fields.extensions.find((e) => e.oid === '2.5.29.19');
    expect(bc && readBasicConstraints(bc.value)).toEqual({ ca: false, pathLength: null });
    const ski = await x509.SubjectKeyIdentifierExtension.create(await cert.publicKey.export());
    expect(Buffer.from(keyIdentifier(fields.publicKey)).toString('hex')).toBe(ski.keyId);
    const aki = cert.getExtension(x509.AuthorityKeyIdentifierExtension);
    expect(aki?.keyId).toBe(
      (alice.chain[0] as x509.X509Certificate).getExtension(x509.SubjectKeyIdentifierExtension)?.keyId,
    );
    expect(fields.extensions.map((e) => [e.oid, e.critical])).toEqual(
      cert.extensions.map((e) => [e.type, e.critical]),
    );
  });

  it('a tampered leaf or intermediate signature is refused, also after the genuine chain was verified', async () => {
    const anchor = await anchorOf(root);
    const client = await leaf(alice, 'web');
    const [leafCert, aliceCert] = client.chain as [x509.X509Certificate, x509.X509Certificate];
    expect((await verifyClientChain([der(leafCert), der(aliceCert)], anchor, new Date())).ok).toBe(true);
    const badLeaf = await verifyClientChain([tampered(leafCert), der(aliceCert)], anchor, new Date());
    expect(badLeaf).toMatchObject({ ok: false, error: { code: 'E_TLS_SIGNATURE' } });
    const badAlice = await verifyClientChain([der(leafCert), tampered(aliceCert)], anchor, new Date());
    expect(badAlice).toMatchObject({ ok: false, error: { code: 'E_TLS_SIGNATURE' } });
  });
});

describe('der.ts', () => {
  it('refuses an extension that is not DER, as a malformed certificate', async () => {
    const root = await rootCa();
    const anchor = await anchorOf(root);
    // basicConstraints with a long-form length for 3 bytes: BER, not DER.
    const ber = new x509.Extension('2.5.29.19', true, Uint8Array.of(0x30, 0x81, 0x03, 0x01, 0x01, 0xff));
    const intermediate = await forge({ issuer: root, cn: 'alice', ca: null, extra: [ber] });
    const client = await leaf(intermediate, 'web');
    const result = await verifyClientChain(client.chain.map(der), anchor, new Date());
    expect(result).toMatchObject({ ok: false, error: { code: 'E_TLS_CERT_INVALID' } });
  });

  it('reads key usage bits and path lengths', () => {
    expect(readKeyUsage(Uint8Array.of(0x03, 0x02, 0x01, 0xc6))).toBe(1 | 2 | 32 | 64);
    expect(readKeyUsage(Uint8Array.of(0x03, 0x03, 0x07, 0x80, 0x80))).toBe(1 | 256);
    expect(readBasicConstraints(Uint8Array.of(0x30, 0x06, 0x01, 0x01, 0xff, 0x02, 0x01, 0x03))).toEqual({
      ca: true,
      pathLength: 3,
    });
    expect(readBasicConstraints(Uint8Array.of(0x30, 0x03, 0x01, 0x01, 0x00))).toEqual({
      ca: false,
      pathLength: null,
    });
  });
});

// The signature algorithms a client's path may use, checked by node:crypto: RSA-PSS with SHA-2
// (which the endpoint used to hand to WebCrypto) verifies, SHA-1 and MD5 are refused by name,
// and parameters the algorithm does not take are refused.

import { webcrypto } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { loadTrustAnchor, verifyClientChain } from '../../src/tls/chain.js';
import { readCertificate } from '../../src/tls/der.js';
import { signatureScheme } from '../../src/tls/signature.js';
import { x509 } from '../../src/tls/x509.js';
import { enc, toBytes } from '../../src/wire/writer.js';
import { oid } from './certificate-der.js';
import { der } from './helpers.js';

type Algorithm = Parameters<typeof x509.X509CertificateGenerator.create>[0]['signingAlgorithm'];

/** A root of `keyAlgorithm` and a leaf it signs with `signing`, as @peculiar/x509 makes them. */
async function chain(keyAlgorithm: webcrypto.RsaHashedKeyGenParams, signing: Algorithm) {
  const keys = (await webcrypto.subtle.generateKey(keyAlgorithm, true, [
    'sign',
    'verify',
  ])) as webcrypto.CryptoKeyPair;
  const validity = { notBefore: new Date(Date.now() - 60_000), notAfter: new Date(Date.now() + 86_400_000) };
  const root = await x509.X509CertificateGenerator.createSelfSigned({
    name: 'CN=rsa',
    keys,
    signingAlgorithm: signing,
    ...validity,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.digitalSignature, true),
    ],
  });
  const leafKeys = (await webcrypto.subtle.generateKey({ name: 'Ed25519' }, true, [
    'sign',
    'verify',
  ])) as webcrypto.CryptoKeyPair;
  const leaf = await x509.X509CertificateGenerator.create({
    subject: 'CN=web',
    issuer: root.subject,
    publicKey: leafKeys.publicKey,
    signingKey: keys.privateKey,
    signingAlgorithm: signing,
    ...validity,
    extensions: [new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true)],
  });
  const anchor = loadTrustAnchor(der(root));
  if (!anchor.ok) throw new Error(anchor.error.message);
  return { anchor: anchor.value, leaf: der(leaf) };
}

const RSA = { modulusLength: 2048, publicExponent: Uint8Array.of(1, 0, 1) };

describe('RSA', () => {
  it('RSA-PSS with SHA-256 and a 32-byte salt verifies; a changed signature does not', async () => {
    const pss = await chain(
      { name: 'RSA-PSS', hash: 'SHA-256', ...RSA },
      { name: 'RSA-PSS', saltLength: 32 },
    );
    const scheme = signatureScheme(readCertificate(pss.leaf));
    expect(scheme).toMatchObject({ ok: true, value: { name: 'RSA-PSS with sha256', pssSaltLength: 32 } });
    expect(verifyClientChain([pss.leaf], pss.anchor, new Date()).ok).toBe(true);
    const tampered = pss.leaf.slice();
    tampered[tampered.length - 3] = (tampered[tampered.length - 3] as number) ^ 1;
    expect(verifyClientChain([tampered], pss.anchor, new Date())).toMatchObject({
      ok: false,
      error: { code: 'E_TLS_SIGNATURE' },
    });
  });

  it('RSA with SHA-1 is refused by name, whatever the signature', async () => {
    const sha1 = await chain(
      { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-1', ...RSA },
      { name: 'RSASSA-PKCS1-v1_5' },
    );
    expect(verifyClientChain([sha1.leaf], sha1.anchor, new Date())).toMatchObject({
      ok: false,
      error: {
        code: 'E_TLS_SIGNATURE',
        message: 'certificate CN=web is signed with a disallowed algorithm (RSA with SHA-1)',
      },
    });
  });
});

describe('algorithm parameters', () => {
  const scheme = (algorithm: string, parameters: Uint8Array) => {
    const fields = { signatureAlgorithm: algorithm, signatureParameters: parameters };
    return signatureScheme(fields as Parameters<typeof signatureScheme>[0]);
  };
  const NULL = Uint8Array.of(5, 0);
  const sha = (n: 1 | 256) => enc.sequence([oid(n === 1 ? '1.3.14.3.2.26' : '2.16.840.1.101.3.4.2.1')]);
  const mgf1 = (n: 1 | 256) => enc.sequence([oid('1.2.840.113549.1.1.8'), sha(n)]);
  const pss = (...fields: Parameters<typeof enc.sequence>[0]) => toBytes(enc.sequence(fields));

  it('EdDSA and ECDSA take none; RSA PKCS #1 v1.5 takes NULL or none', () => {
    expect(scheme('1.3.101.112', new Uint8Array()).ok).toBe(true);
    expect(scheme('1.3.101.112', NULL)).toEqual({ ok: false, error: 'Ed25519 with parameters' });
    expect(scheme('1.2.840.10045.4.3.2', NULL)).toEqual({
      ok: false,
      error: 'ECDSA with SHA-256 with parameters',
    });
    expect(scheme('1.2.840.113549.1.1.11', NULL).ok).toBe(true);
    expect(scheme('1.2.840.113549.1.1.11', new Uint8Array()).ok).toBe(true);
    expect(scheme('1.2.3.4', new Uint8Array())).toEqual({ ok: false, error: '1.2.3.4' });
  });

  it('RSA-PSS needs SHA-2, MGF1 with the same hash and trailer 1; the SHA-1 defaults are refused', () => {
    const ok = pss(enc.explicit(0, sha(256)), enc.explicit(1, mgf1(256)), enc.explicit(2, enc.integer(32)));
    expect(scheme('1.2.840.113549.1.1.10', ok)).toMatchObject({
      ok: true,
      value: { digest: 'sha256', pssSaltLength: 32 },
    });
    expect(scheme('1.2.840.113549.1.1.10', pss()).ok).toBe(false);
    const mixed = pss(enc.explicit(0, sha(256)), enc.explicit(1, mgf1(1)));
    expect(scheme('1.2.840.113549.1.1.10', mixed)).toEqual({
      ok: false,
      error: 'RSA-PSS with sha256, MGF1 with sha1, salt 20, trailer 1',
    });
    const trailer = pss(
      enc.explicit(0, sha(256)),
      enc.explicit(1, mgf1(256)),
      enc.explicit(3, enc.integer(2)),
    );
    expect(scheme('1.2.840.113549.1.1.10', trailer).ok).toBe(false);
    const malformed = scheme('1.2.840.113549.1.1.10', Uint8Array.of(0x30, 0x03, 0xa0, 0x01));
    expect(malformed.ok === false && malformed.error).toMatch(
      /^RSA-PSS with malformed parameters \(length 3 exceeds the 2 bytes available at byte 1\)$/,
    );
  });
});

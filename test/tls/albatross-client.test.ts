// The test PKI's stock-client leaves (albatross-client.ts) against a leaf the real
// albatross-client 2.1 made (../shared/vectors/albatross-2.1, step 08): the same layout, byte for
// byte where the key and serial do not enter, and accepted by the endpoint's own verifier.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { unwrap } from '../../src/resources/errors.js';
import { loadTrustAnchor, verifyClientChain } from '../../src/tls/chain.js';
import { readCertificate } from '../../src/tls/der.js';
import { authorize } from '../../src/tls/identity.js';
import { importPrivateKey } from '../../src/tls/keys.js';
import { solo5Config } from '../../src/wire/shapes.js';
import { albatrossCreate, albatrossLeaf } from './albatross-client.js';
import { VECTORS } from './helpers.js';

const captured = readCertificate(
  new Uint8Array(
    readFileSync(join(VECTORS, '08-unikernel-info-sub', 'albatross-client-23623-001-client-cert.der')),
  ),
);
const subDer = new Uint8Array(readFileSync(join(VECTORS, 'pki', 'sub.der')));
const sub = async () => ({
  der: subDer,
  key: unwrap(await importPrivateKey(readFileSync(join(VECTORS, 'pki', 'sub.key')))),
});
/** Inside the capture's validity (its PKI dates from November 2026). */
const then = new Date(captured.notBefore.getTime() + 10_000);

describe('leaves shaped like albatross-client', () => {
  it('have the captured 2.1 leaf layout: names, validity, serial size, extensions in order', async () => {
    const leaf = await albatrossLeaf(await sub(), '.', { type: 'unikernel-info', release: '2.1' }, then);
    const made = readCertificate(leaf.der);
    expect(Buffer.from(made.issuer)).toEqual(Buffer.from(captured.issuer));
    expect(Buffer.from(made.subject)).toEqual(Buffer.from(captured.subject));
    expect(made.notBefore).toEqual(captured.notBefore);
    expect(made.notAfter.getTime() - made.notBefore.getTime()).toBe(
      captured.notAfter.getTime() - captured.notBefore.getTime(),
    );
    expect(made.signatureAlgorithm).toBe(captured.signatureAlgorithm);
    expect(made.extensions.map((e) => [e.oid, e.critical])).toEqual(
      captured.extensions.map((e) => [e.oid, e.critical]),
    );
    // Every value but the subject key id (a fresh key each time) is the captured one.
    const values = (c: typeof made) =>
      c.extensions.filter((e) => e.oid !== '2.5.29.14').map((e) => Buffer.from(e.value).toString('hex'));
    expect(values(made)).toEqual(values(captured));
    // An 8-byte serial, as the capture's: INTEGER 02 08 right after the version [0] 02 01 02.
    const serialAt = made.tbs.indexOf(0xa0) + 5;
    expect([made.tbs[serialAt], made.tbs[serialAt + 1]]).toEqual([0x02, 0x08]);
    expect(captured.tbs.subarray(captured.tbs.indexOf(0xa0) + 5).subarray(0, 2)).toEqual(Uint8Array.of(2, 8));
  });

  it('carry a 2.1 create (UnikernelConfigV3, deflated) that the verifier accepts under the captured CA', async () => {
    const image = new Uint8Array(200_000).map((_, i) => i % 7);
    const config = solo5Config(image, { arguments: ['forever'] });
    const command = albatrossCreate('2.1', config);
    const leaf = await albatrossLeaf(await sub(), 'ctl', command, then);
    const anchor = unwrap(loadTrustAnchor(readFileSync(join(VECTORS, 'pki', 'cacert.pem'), 'utf8')));
    const path = unwrap(verifyClientChain([leaf.der, subDer], anchor, then));
    const identity = unwrap(authorize(path));
    expect(identity.command).toMatchObject({ type: 'unikernel-create', release: '2.0', force: false });
    const sent = identity.command.type === 'unikernel-create' ? identity.command.config : null;
    expect(sent?.compressed).toBe(true);
    expect(Buffer.from(sent?.image.subarray(0, 2) ?? [])).toEqual(Buffer.from([0x78, 0xda]));
  });
});

// Leaf certificates as the stock albatross-client makes them (2.1 and 2.7; the 2.1 capture in
// ../shared/vectors/albatross-2.1 shows the layout, albatross-wire.md §4.13 and §7.2), and one
// TLS session with such a leaf, as the client runs it: the leaf and the `--ca` certificate, the
// reply read until the server closes. The command, an image included, is in the leaf.
//
// What makes them differ from Petrel's own leaves (src/tls/pki.ts): an 8-byte serial, names as
// UTF8String (ocaml-x509 re-encodes the issuer's name, so a Petrel CA's PrintableString subject
// comes back as UTF8String in the leaf's issuer), the extensions in the client's order (the
// Albatross one first, then subject key id, key usage, basic constraints, authority key id,
// extended key usage), key usage in two bytes, a fresh Ed25519 key per command, valid from 10 s
// ago for 5 min 10 s.
// 2.1 clients send create as [9]/[10] with UnikernelConfigV3 and always deflate the image (level
// 9); 2.7 clients send the 2.7 config, deflated or not (`--compression-level=0`).

import { webcrypto } from 'node:crypto';
import { deflateSync } from 'node:zlib';
import { encodePem } from '../../src/tls/certs.js';
import { keyIdentifier } from '../../src/tls/der.js';
import {
  authorityKeyIdentifier,
  basicConstraints,
  encodeCertificate,
  extendedKeyUsage,
  publicKeyInfo,
  subjectKeyIdentifier,
} from '../../src/tls/encode.js';
import { exportPrivateKey, generateKey, type KeyPair } from '../../src/tls/keys.js';
import { x509 } from '../../src/tls/x509.js';
import { ALBATROSS_OID, encodeCertExtension } from '../../src/wire/index.js';
import type { Command, UnikernelConfig, Wire } from '../../src/wire/types.js';
import { enc, toBytes } from '../../src/wire/writer.js';
import { tlsSession } from './session.js';

export type AlbatrossRelease = '2.1' | '2.7';

/** The delegated CA the client signs with (`--ca`, `--ca-key`): its DER and its key. */
export interface AlbatrossCa {
  readonly der: Uint8Array;
  readonly key: KeyPair;
}

export interface AlbatrossLeaf {
  readonly der: Uint8Array;
  readonly key: KeyPair;
}

/** A Name of one CN as UTF8String, as ocaml-x509 writes every name. */
const utf8Name = (cn: string): Uint8Array =>
  toBytes(enc.sequence([enc.set([enc.sequence([enc.primitive(0x06, CN_OID), enc.utf8(cn)])])]));
const CN_OID = Uint8Array.of(0x55, 0x04, 0x03);

/** The CN of a certificate's subject, read with @peculiar/x509 (test side only). */
function subjectCn(der: Uint8Array): string {
  const cn = new x509.X509Certificate(der).subjectName.getField('CN')[0];
  if (cn === undefined) throw new Error('the CA certificate has no CN');
  return cn;
}

/** The SubjectPublicKeyInfo of a certificate. */
function spkiOf(der: Uint8Array): Uint8Array {
  return new Uint8Array(new x509.X509Certificate(der).publicKey.rawData);
}

/**
 * digitalSignature and keyEncipherment as ocaml-x509 writes them: all nine named bits' room (two
 * bytes, 7 unused), not the DER-minimal `03 02 05 a0` Petrel writes. Taken from the capture.
 */
const LEAF_KEY_USAGE = Uint8Array.of(0x03, 0x03, 0x07, 0xa0, 0x00);

/** One leaf the way the stock client signs it, for `command` under `ca`, CN `cn`. */
export async function albatrossLeaf(
  ca: AlbatrossCa,
  cn: string,
  command: Command,
  now = new Date(),
): Promise<AlbatrossLeaf> {
  const key = await generateKey('ed25519');
  const publicKey = publicKeyInfo(key.publicKey);
  const extension = encodeCertExtension(command);
  if (!extension.ok) throw new Error(extension.error.message);
  const serial = webcrypto.getRandomValues(new Uint8Array(8));
  serial[0] = ((serial[0] as number) & 0x7f) | 0x01;
  const der = encodeCertificate(
    {
      serial,
      issuer: utf8Name(subjectCn(ca.der)),
      subject: utf8Name(cn),
      notBefore: new Date(now.getTime() - 10_000),
      notAfter: new Date(now.getTime() + 300_000),
      publicKey,
      extensions: [
        { oid: ALBATROSS_OID, critical: false, value: extension.value },
        { oid: '2.5.29.14', critical: false, value: subjectKeyIdentifier(keyIdentifier(publicKey)) },
        { oid: '2.5.29.15', critical: true, value: LEAF_KEY_USAGE },
        { oid: '2.5.29.19', critical: true, value: basicConstraints(false) },
        {
          oid: '2.5.29.35',
          critical: false,
          value: authorityKeyIdentifier(keyIdentifier(spkiOf(ca.der))),
        },
        { oid: '2.5.29.37', critical: true, value: extendedKeyUsage(['1.3.6.1.5.5.7.3.2']) },
      ],
    },
    ca.key,
  );
  return { der, key };
}

/**
 * The create (or force-create) a client of `release` puts in its leaf for `config`: 2.1 deflates
 * the image at level 9 and sends UnikernelConfigV3; 2.7 sends the 2.7 config, deflated when
 * `deflate` is set.
 */
export function albatrossCreate(
  release: AlbatrossRelease,
  config: UnikernelConfig,
  options: { readonly force?: boolean; readonly deflate?: boolean } = {},
): Command {
  const force = options.force ?? false;
  const deflate = release === '2.1' || (options.deflate ?? false);
  const image = deflate ? new Uint8Array(deflateSync(config.image, { level: 9 })) : config.image;
  if (release === '2.7') {
    return {
      type: 'unikernel-create',
      force,
      release: '2.7',
      config: { ...config, image, compressed: deflate },
    };
  }
  const { cpuids, startup: _s, addName: _a, cpus: _c, linuxBootPartition: _l, ...rest } = config;
  const v3 = { ...rest, image, compressed: true, cpuid: cpuids[0] ?? 0 };
  return { type: 'unikernel-create', force, release: '2.0', config: v3 };
}

export interface AlbatrossSession {
  readonly frames: Wire[];
  readonly error: Error | null;
}

/**
 * One session as the client runs it: TLS 1.3, the leaf and the CA certificate it signed with,
 * the server authenticated against `serverCa`; every reply frame until the server closes.
 */
export async function albatrossSession(
  port: number,
  serverCa: string,
  ca: AlbatrossCa,
  leaf: AlbatrossLeaf,
): Promise<AlbatrossSession> {
  const cert = `${encodePem(leaf.der)}\n${encodePem(ca.der)}\n`;
  const credentials = { cert, key: await exportPrivateKey(leaf.key) };
  const { frames, error } = await tlsSession(port, serverCa, { credentials, badFrames: 'error' });
  return { frames, error };
}

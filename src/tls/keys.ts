// Key pairs for the PKI tooling: the key types Albatross' client offers, PKCS#8 PEM in and out,
// and the signature algorithm each key type signs certificates with.

import { createPrivateKey, createPublicKey, KeyObject, webcrypto } from 'node:crypto';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import { describeError } from './errors.js';

/** WebCrypto types (the project compiles without the DOM library). */
export type CryptoKey = webcrypto.CryptoKey;
type Algorithm = webcrypto.Algorithm;
type EcdsaParams = webcrypto.EcdsaParams;

export const KEY_TYPES = ['ed25519', 'p256', 'p384', 'p521', 'rsa2048', 'rsa4096'] as const;
export type KeyType = (typeof KEY_TYPES)[number];

export interface KeyPair {
  readonly type: KeyType;
  readonly privateKey: CryptoKey;
  readonly publicKey: CryptoKey;
}

type KeyAlgorithmParams = Algorithm | webcrypto.EcKeyImportParams | webcrypto.RsaHashedImportParams;

const RSA = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' } as const;
const CURVE = { p256: 'P-256', p384: 'P-384', p521: 'P-521' } as const;
const ECDSA_HASH = { p256: 'SHA-256', p384: 'SHA-384', p521: 'SHA-512' } as const;

type Curve = keyof typeof CURVE;

/** What Ed25519 and RSA keys name for both uses; an ECDSA key names `ecdsa(its curve)`. */
function byFamily<T>(type: KeyType, ecdsa: (curve: Curve) => T): T | Algorithm | typeof RSA {
  switch (type) {
    case 'ed25519':
      return { name: 'Ed25519' };
    case 'p256':
    case 'p384':
    case 'p521':
      return ecdsa(type);
    case 'rsa2048':
    case 'rsa4096':
      return RSA;
  }
}

function importParams(type: KeyType): KeyAlgorithmParams {
  return byFamily(type, (curve) => ({ name: 'ECDSA', namedCurve: CURVE[curve] }));
}

/** The algorithm certificates signed by a key of this type use (SHA-2 or EdDSA, as Albatross). */
export function signingAlgorithm(type: KeyType): Algorithm | EcdsaParams {
  return byFamily(type, (curve) => ({ name: 'ECDSA', hash: ECDSA_HASH[curve] }));
}

export function parseKeyType(text: string): Result<KeyType, PetrelError<'E_PKI_KEY'>> {
  const found = KEY_TYPES.find((type) => type === text);
  return found === undefined
    ? err('E_PKI_KEY', `unknown key type '${text}' (one of ${KEY_TYPES.join(', ')})`)
    : ok(found);
}

export async function generateKey(type: KeyType): Promise<KeyPair> {
  const subtle = webcrypto.subtle;
  let params: Algorithm | webcrypto.EcKeyGenParams | webcrypto.RsaHashedKeyGenParams = importParams(type);
  if (type === 'rsa2048' || type === 'rsa4096') {
    params = {
      ...RSA,
      modulusLength: type === 'rsa2048' ? 2048 : 4096,
      publicExponent: new Uint8Array([1, 0, 1]),
    };
  }
  const pair = (await subtle.generateKey(params, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  return { type, privateKey: pair.privateKey, publicKey: pair.publicKey };
}

/** PKCS#8 PEM of the private key: the only form a key ever leaves this module in. */
export async function exportPrivateKey(pair: KeyPair): Promise<string> {
  // Synchronous through KeyObject: a WebCrypto export costs a thread-pool round trip, and the
  // remote client exports a fresh key for every command.
  return KeyObject.from(pair.privateKey).export({ type: 'pkcs8', format: 'pem' }) as string;
}

/** Reads a private key (PKCS#8, or the traditional PEM forms OpenSSL writes) and derives its public half. */
export async function importPrivateKey(
  pem: string | Uint8Array,
): Promise<Result<KeyPair, PetrelError<'E_PKI_KEY'>>> {
  let type: KeyType;
  let pkcs8: Buffer;
  let spki: Buffer;
  try {
    const key = createPrivateKey(typeof pem === 'string' ? pem : Buffer.from(pem));
    const known = keyTypeOf(key.asymmetricKeyType, key.asymmetricKeyDetails);
    if (!known.ok) return known;
    type = known.value;
    pkcs8 = key.export({ format: 'der', type: 'pkcs8' });
    spki = createPublicKey(key).export({ format: 'der', type: 'spki' });
  } catch (e) {
    return err('E_PKI_KEY', `not a private key: ${describeError(e)}`);
  }
  const params = importParams(type);
  const privateKey = await webcrypto.subtle.importKey('pkcs8', pkcs8, params, true, ['sign']);
  const publicKey = await webcrypto.subtle.importKey('spki', spki, params, true, ['verify']);
  return ok({ type, privateKey, publicKey });
}

function keyTypeOf(
  kind: string | undefined,
  details: { modulusLength?: number; namedCurve?: string } | undefined,
): Result<KeyType, PetrelError<'E_PKI_KEY'>> {
  if (kind === 'ed25519') return ok('ed25519');
  if (kind === 'ec') {
    const curve = details?.namedCurve;
    if (curve === 'prime256v1') return ok('p256');
    if (curve === 'secp384r1') return ok('p384');
    if (curve === 'secp521r1') return ok('p521');
    return err('E_PKI_KEY', `unsupported elliptic curve ${curve ?? 'unknown'}`);
  }
  if (kind === 'rsa') return ok((details?.modulusLength ?? 0) > 2048 ? 'rsa4096' : 'rsa2048');
  return err('E_PKI_KEY', `unsupported key type ${kind ?? 'unknown'}`);
}

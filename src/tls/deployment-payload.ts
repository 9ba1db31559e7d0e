// The payload of a fleet deployment proof's leaf (deployment-proof.ts): the request a delegation
// signs, but its command (the Albatross extension carries that), as DER; and a row compared with it.

import type { PetrelError, Result } from '../resources/errors.js';
import { enc, Reader, toBytes } from '../wire/der.js';
import { guard } from '../wire/errors.js';

/**
 * The Petrel extension of a proof's leaf: the request but its command (which the Albatross
 * extension carries, as a command certificate does), non-critical. An OID under 2.25, from UUID
 * 70e7e4b5-c9f8-4e44-b3d4-d3cf55bacd8b.
 *
 *   Payload ::= SEQUENCE { version INTEGER (1), name UTF8String, request [0] Request OPTIONAL }
 *   Request ::= SEQUENCE { replicas INTEGER, sha256 OCTET STRING (32), size INTEGER,
 *                          blockDevices INTEGER, Requirements, node [0] UTF8String OPTIONAL }
 *   Requirements ::= SEQUENCE { runtime UTF8String, abi INTEGER, bridges SEQUENCE OF UTF8String,
 *                               memoryMiB INTEGER, cpus INTEGER }
 *
 * A removal proof has no `request`, and `unikernel-destroy` as its command.
 */
export const PROOF_EXTENSION_OID = '2.25.150077594894425840799395962417082715531';
const PAYLOAD_VERSION = 1;

/** What placement needs of a deployment (src/fleet/placement.ts Requirements has this shape). */
export interface ProofRequirements {
  /** The tender its image's ABI note asks for (`hvt`, `spt`): checked against the image by the node. */
  readonly runtime: string;
  readonly abi: number;
  readonly bridges: readonly string[];
  readonly memoryMiB: number;
  readonly cpus: number;
}

/** What a delegation signs for a deployment (src/fleet/deployment.ts DeploymentRequest has this shape). */
export interface ProofRequest {
  /** The full name (`alice:web`): under the signing delegation's path. */
  readonly name: string;
  readonly replicas: number;
  /** The image by its SHA-256 (lower-case hex) and size: the proof never carries it. */
  readonly image: { readonly sha256: string; readonly size: number };
  /** The Albatross extension's value of a unikernel-create with an empty image. */
  readonly command: Uint8Array;
  readonly requirements: ProofRequirements;
  readonly blockDevices: number;
  readonly node: string | null;
}

/** What the payload holds of a request: all but its name and its command. */
export type SignedFields = Omit<ProofRequest, 'name' | 'command'>;

/** A leaf's payload: the name, and the request but its command (null: a removal). */
export interface Payload {
  readonly name: string;
  readonly request: SignedFields | null;
}

export interface Difference {
  readonly field: string;
  readonly row: string;
  readonly signed: string;
}

/** Every field where `row` differs from `signed`, in the request's order, printed. */
export function differences(row: ProofRequest, signed: ProofRequest): Difference[] {
  const fields: [string, (r: ProofRequest) => unknown][] = [
    ['name', (r) => r.name],
    ['replicas', (r) => r.replicas],
    ['image.sha256', (r) => r.image.sha256],
    ['image.size', (r) => r.image.size],
    ['command', (r) => Buffer.from(r.command).toString('hex')],
    ['requirements.runtime', (r) => r.requirements.runtime],
    ['requirements.abi', (r) => r.requirements.abi],
    ['requirements.bridges', (r) => JSON.stringify(r.requirements.bridges)],
    ['requirements.memoryMiB', (r) => r.requirements.memoryMiB],
    ['requirements.cpus', (r) => r.requirements.cpus],
    ['blockDevices', (r) => r.blockDevices],
    ['node', (r) => r.node],
  ];
  const out: Difference[] = [];
  for (const [field, get] of fields) {
    const a = get(row);
    const b = get(signed);
    if (a !== b) out.push({ field, row: printed(a), signed: printed(b) });
  }
  return out;
}

function printed(value: unknown): string {
  if (value === null) return 'none';
  const text = String(value);
  return text.length > 40 ? `${text.slice(0, 37)}…` : text;
}

/** The payload's DER (the Petrel extension's value). */
export function encodePayload(payload: Payload): Uint8Array {
  const r = payload.request;
  const request =
    r === null
      ? []
      : [
          enc.explicit(
            0,
            enc.sequence([
              enc.integer(r.replicas),
              enc.octets(Buffer.from(r.image.sha256, 'hex')),
              enc.integer(r.image.size),
              enc.integer(r.blockDevices),
              enc.sequence([
                enc.utf8(r.requirements.runtime),
                enc.integer(r.requirements.abi),
                enc.sequence(r.requirements.bridges.map(enc.utf8)),
                enc.integer(r.requirements.memoryMiB),
                enc.integer(r.requirements.cpus),
              ]),
              ...(r.node === null ? [] : [enc.explicit(0, enc.utf8(r.node))]),
            ]),
          ),
        ];
  return toBytes(enc.sequence([enc.integer(PAYLOAD_VERSION), enc.utf8(payload.name), ...request]));
}

/** A payload read back; anything else is an error naming what does not decode. */
export function decodePayload(value: Uint8Array): Result<Payload, PetrelError> {
  return guard(() => {
    const r = new Reader(value);
    const payload = r.sequence((s) => {
      const version = s.int('version');
      if (version !== PAYLOAD_VERSION) throw new Error(`version ${version}, not ${PAYLOAD_VERSION}`);
      const name = s.utf8('name');
      const request = s.atEnd() ? null : s.explicit(0, readRequest);
      return { name, request };
    }, 'proof payload');
    r.done();
    return payload;
  });
}

function readRequest(r: Reader): SignedFields {
  return r.sequence((s) => {
    const replicas = s.int('replicas');
    const sha256 = s.octets('sha256');
    if (sha256.length !== 32) throw new Error(`an image digest of ${sha256.length} bytes`);
    const size = s.int('size');
    const blockDevices = s.int('blockDevices');
    const requirements = s.sequence((q) => ({
      runtime: q.utf8('runtime'),
      abi: q.int('abi'),
      bridges: q.listOf((b) => b.utf8('bridge')),
      memoryMiB: q.int('memoryMiB'),
      cpus: q.int('cpus'),
    }));
    const node = s.atEnd() ? null : s.explicit(0, (n) => n.utf8('node'));
    return {
      replicas,
      image: { sha256: Buffer.from(sha256).toString('hex'), size },
      blockDevices,
      requirements,
      node,
    };
  });
}

// A fleet deployment proof with any one byte changed never verifies, whatever the byte and the
// change: a node cannot be made to run a corrupted or tampered row (src/tls/deployment-proof.ts).

import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { unwrap } from '../src/resources/errors.js';
import { loadTrustAnchor } from '../src/tls/chain.js';
import {
  issueDeploymentProof,
  type ProofCheck,
  type ProofRequest,
  verifyDeploymentProof,
} from '../src/tls/deployment-proof.js';
import type { x509 } from '../src/tls/x509.js';
import { encodeCertExtension } from '../src/wire/index.js';
import { solo5Config } from '../src/wire/shapes.js';
import { delegate, der, policy, rootCa } from '../test/tls/helpers.js';

const RUNS = Number(process.env.PROPERTY_RUNS ?? 1000);

const config = solo5Config(new Uint8Array(), { memory: 64 });
const request: ProofRequest = {
  name: 'alice:web',
  replicas: 1,
  image: { sha256: '5e'.repeat(32), size: 1 << 20 },
  command: unwrap(encodeCertExtension({ type: 'unikernel-create', force: false, release: '2.7', config })),
  requirements: { runtime: 'hvt', abi: 2, bridges: [], memoryMiB: 64, cpus: 1 },
  blockDevices: 0,
  node: null,
};

let proof: Uint8Array;
let check: ProofCheck;

beforeAll(async () => {
  const ca = await rootCa('petrel-ca');
  const alice = await delegate(ca, 'alice', policy({ memory: 128 }));
  check = {
    ca: unwrap(loadTrustAnchor(der(ca.chain[0] as x509.X509Certificate))),
    now: new Date(),
    denied: () => false,
  };
  proof = unwrap(await issueDeploymentProof(request, alice));
});

describe('a deployment proof', () => {
  it('verifies as issued', () => {
    expect(verifyDeploymentProof(proof, request, check).ok).toBe(true);
  });

  it('never verifies with one byte changed', () => {
    fc.assert(
      fc.property(fc.nat(), fc.integer({ min: 1, max: 255 }), (at, flip) => {
        const corrupt = proof.slice();
        const i = at % corrupt.length;
        corrupt[i] = (corrupt[i] as number) ^ flip;
        const verified = verifyDeploymentProof(corrupt, request, check);
        expect(verified.ok, `byte ${i} ^ ${flip} verified`).toBe(false);
        if (!verified.ok) expect(verified.error.code).toMatch(/^E_DEPLOY_/);
      }),
      { numRuns: RUNS },
    );
  });
});

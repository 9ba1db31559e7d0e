// Fleet deployment proofs with real certificates of the project's CA tooling: a proof verifies
// only for the row it signed, under the node's own CA, while its delegation is valid, not denied
// and allows what it asks; tokens, TLS client leaves, look-alikes and corrupt bytes never pass.

import { beforeAll, describe, expect, it } from 'vitest';
import { unwrap } from '../../src/resources/errors.js';
import { printName, printPath } from '../../src/resources/name.js';
import { loadTrustAnchor, type TrustAnchor } from '../../src/tls/chain.js';
import { encodePayload, PROOF_EXTENSION_OID, type ProofRequest } from '../../src/tls/deployment-payload.js';
import {
  issueDeploymentProof,
  issueRemovalProof,
  MAX_PROOF_BYTES,
  type ProofCheck,
  verifyDeploymentProof,
  verifyRemovalProof,
} from '../../src/tls/deployment-proof.js';
import { type Issuer, issueDelegatedLeaf, issueToken } from '../../src/tls/pki.js';
import { certificateId } from '../../src/tls/token.js';
import type { x509 } from '../../src/tls/x509.js';
import { ALBATROSS_OID, encodeCertExtension } from '../../src/wire/index.js';
import { solo5Config } from '../../src/wire/shapes.js';
import type { UnikernelConfig } from '../../src/wire/types.js';
import { delegate, der, leaf, policy, rootCa } from './helpers.js';

const SHA = 'ab'.repeat(32);

/** The Albatross extension value of a create with an empty image. */
function createCommand(change: Partial<UnikernelConfig> = {}): Uint8Array {
  const config = solo5Config(new Uint8Array(), {
    memory: 64,
    bridges: [{ netif: 'service', bridge: null, mac: null }],
    ...change,
  });
  return unwrap(encodeCertExtension({ type: 'unikernel-create', force: false, release: '2.7', config }));
}

function request(change: Partial<ProofRequest> = {}): ProofRequest {
  return {
    name: 'alice:web',
    replicas: 2,
    image: { sha256: SHA, size: 4096 },
    command: createCommand(),
    requirements: { runtime: 'hvt', abi: 2, bridges: ['service'], memoryMiB: 64, cpus: 1 },
    blockDevices: 0,
    node: null,
    ...change,
  };
}

let ca: Issuer;
let alice: Issuer;
let anchor: TrustAnchor;
let check: ProofCheck;
let proof: Uint8Array;

const chainBytes = (ders: readonly Uint8Array[]): Uint8Array => new Uint8Array(Buffer.concat(ders));

/** A proof signed as issueDeploymentProof would, but without its checks: what a careless signer could make. */
async function signedAnyway(by: Issuer, req: ProofRequest): Promise<Uint8Array> {
  const { name, command, ...fields } = req;
  const issued = unwrap(
    await issueDelegatedLeaf(by, {
      profile: 'deployment',
      what: 'deployment proof',
      commonName: name,
      expires: (by.chain[0] as x509.X509Certificate).notAfter,
      now: new Date(),
      extensions: [
        { oid: ALBATROSS_OID, critical: false, value: command },
        { oid: PROOF_EXTENSION_OID, critical: false, value: encodePayload({ name, request: fields }) },
      ],
    }),
  );
  return chainBytes([issued.der, ...issued.above.map(der)]);
}

beforeAll(async () => {
  ca = await rootCa('petrel-ca');
  alice = await delegate(ca, 'alice', policy({ vms: 4, memory: 128, cpuids: [0, 1], block: null }));
  anchor = unwrap(loadTrustAnchor(der(ca.chain[0] as x509.X509Certificate)));
  check = { ca: anchor, now: new Date(), denied: () => false };
  proof = unwrap(await issueDeploymentProof(request(), alice));
});

describe('a deployment proof', () => {
  it('verifies for the row it signed: the name, the delegation, its policies, its expiry', () => {
    const verified = unwrap(verifyDeploymentProof(proof, request(), check));
    expect(printName(verified.name)).toBe('alice:web');
    expect(printPath(verified.delegation)).toBe('alice');
    expect(verified.policies.map((p) => printPath(p.path))).toEqual(['alice']);
    expect(verified.config.memory).toBe(64);
    expect(verified.config.image.length).toBe(0);
    expect(verified.expires).toEqual((alice.chain[0] as x509.X509Certificate).notAfter);
    expect(verified.id).toMatch(/^[0-9a-f]{32}$/);
  });

  it('verifies for a name below its delegation, and the row of a pinned deployment', async () => {
    const pinned = request({ name: 'alice:team:web', node: 'node-7' });
    const made = unwrap(await issueDeploymentProof(pinned, alice));
    expect(printName(unwrap(verifyDeploymentProof(made, pinned, check)).name)).toBe('alice:team:web');
  });

  const alterations: [string, Partial<ProofRequest>][] = [
    ['name', { name: 'alice:other' }],
    ['replicas', { replicas: 3 }],
    ['image.sha256', { image: { sha256: 'cd'.repeat(32), size: 4096 } }],
    ['image.size', { image: { sha256: SHA, size: 4097 } }],
    ['command', { command: createCommand({ memory: 32 }) }],
    ['requirements.runtime', { requirements: { ...request().requirements, runtime: 'spt' } }],
    ['requirements.abi', { requirements: { ...request().requirements, abi: 1 } }],
    ['requirements.bridges', { requirements: { ...request().requirements, bridges: [] } }],
    ['requirements.memoryMiB', { requirements: { ...request().requirements, memoryMiB: 32 } }],
    ['requirements.cpus', { requirements: { ...request().requirements, cpus: 2 } }],
    ['blockDevices', { blockDevices: 1 }],
    ['node', { node: 'node-1' }],
  ];
  it.each(alterations)('is refused for a row whose %s was altered, naming it', (field, change) => {
    const refused = verifyDeploymentProof(proof, request(change), check);
    expect(refused.ok).toBe(false);
    if (refused.ok) return;
    expect(refused.error.code).toBe('E_DEPLOY_ALTERED');
    expect(refused.error.message).toContain(`: ${field} is `);
    expect(refused.error.details?.fields).toEqual([field]);
  });

  it('is refused when signed by a delegation of another CA', async () => {
    const stranger = await delegate(
      await rootCa('elsewhere'),
      'alice',
      policy({ memory: 128, cpuids: [0, 1] }),
    );
    const refused = verifyDeploymentProof(
      unwrap(await issueDeploymentProof(request(), stranger)),
      request(),
      check,
    );
    expect(refused.ok || refused.error.code).toBe('E_DEPLOY_FOREIGN_CA');
    expect(refused.ok || refused.error.message).toContain("not signed under this node's CA");
  });

  it('is refused when a web API token or a TLS client leaf is passed as one', async () => {
    const token = unwrap(await issueToken(alice, 'ci', new Date(Date.now() + 3_600_000)));
    const asToken = verifyDeploymentProof(
      chainBytes([token.der, der(alice.chain[0] as x509.X509Certificate)]),
      request(),
      check,
    );
    expect(asToken.ok || asToken.error.code).toBe('E_DEPLOY_FORGED');
    expect(asToken.ok || asToken.error.message).toContain('is not a fleet deployment proof');
    const config = solo5Config(new Uint8Array(), { memory: 64 });
    const client = await leaf(alice, 'web', {
      type: 'unikernel-create',
      force: false,
      release: '2.7',
      config,
    });
    const asClient = verifyDeploymentProof(chainBytes(client.chain.map(der)), request(), check);
    expect(asClient.ok || asClient.error.code).toBe('E_DEPLOY_FORGED');
  });

  it('is refused once its delegation has expired, and names the expiry', () => {
    const expiry = (alice.chain[0] as x509.X509Certificate).notAfter;
    const later = { ...check, now: new Date(expiry.getTime() + 1000) };
    const refused = verifyDeploymentProof(proof, request(), later);
    expect(refused.ok || refused.error.code).toBe('E_DEPLOY_EXPIRED');
    expect(refused.ok || refused.error.message).toContain(expiry.toISOString());
  });

  it('is refused when its delegation, or the proof itself, is on the deny-list', () => {
    const delegationId = certificateId(der(alice.chain[0] as x509.X509Certificate));
    const revoked = verifyDeploymentProof(proof, request(), {
      ...check,
      denied: (id) => id === delegationId,
    });
    expect(revoked.ok || revoked.error.code).toBe('E_DEPLOY_REVOKED');
    expect(revoked.ok || revoked.error.message).toContain('its delegation');
    const own = unwrap(verifyDeploymentProof(proof, request(), check)).id;
    const alone = verifyDeploymentProof(proof, request(), { ...check, denied: (id) => id === own });
    expect(alone.ok || alone.error.code).toBe('E_DEPLOY_REVOKED');
  });

  it('is refused when it asks more than its delegation allows, naming the limit', async () => {
    const over: [Partial<ProofRequest>, string][] = [
      [
        {
          command: createCommand({ memory: 256 }),
          requirements: { ...request().requirements, memoryMiB: 256 },
        },
        'E_POLICY_MEMORY',
      ],
      [{ command: createCommand({ cpuids: [3] }) }, 'E_POLICY_CPUIDS'],
      [
        {
          command: createCommand({ bridges: [{ netif: 'net0', bridge: 'admin', mac: null }] }),
          requirements: { ...request().requirements, bridges: ['admin'] },
        },
        'E_POLICY_BRIDGES',
      ],
      [
        {
          command: createCommand({ blocks: [{ device: 'data', hostDevice: null, sectorSize: null }] }),
          blockDevices: 1,
        },
        'E_POLICY_BLOCK',
      ],
    ];
    for (const [change, limit] of over) {
      const req = request(change);
      const issued = await issueDeploymentProof(req, alice);
      expect(issued.ok || issued.error.code).toBe('E_DEPLOY_POLICY');
      const refused = verifyDeploymentProof(await signedAnyway(alice, req), req, check);
      expect(refused.ok).toBe(false);
      if (refused.ok) continue;
      expect(refused.error.code).toBe('E_DEPLOY_POLICY');
      expect(refused.error.details?.limit).toBe(limit);
    }
  });

  it('is refused for a name outside its delegation', async () => {
    const req = request({ name: 'bob:web' });
    expect((await issueDeploymentProof(req, alice)).ok).toBe(false);
    const refused = verifyDeploymentProof(await signedAnyway(alice, req), req, check);
    expect(refused.ok || refused.error.code).toBe('E_DEPLOY_POLICY');
    expect(refused.ok || refused.error.message).toContain("outside its delegation's path alice");
  });

  it('is refused when its command does not match its signed requirements', async () => {
    const req = request({ requirements: { ...request().requirements, memoryMiB: 32 } });
    expect((await issueDeploymentProof(req, alice)).ok).toBe(false);
    const refused = verifyDeploymentProof(await signedAnyway(alice, req), req, check);
    expect(refused.ok || refused.error.code).toBe('E_DEPLOY_MALFORMED');
    expect(refused.ok || refused.error.message).toContain('requirements.memoryMiB');
  });

  it('is refused when forged: a changed signature, or a look-alike delegation of the same names', async () => {
    const flipped = proof.slice();
    const leafLength = ((flipped[2] as number) << 8) + (flipped[3] as number) + 4;
    flipped[leafLength - 1] = (flipped[leafLength - 1] as number) ^ 0x01;
    const changed = verifyDeploymentProof(flipped, request(), check);
    expect(changed.ok || changed.error.code).toBe('E_DEPLOY_FORGED');
    // Another CA of the same name: the chain names the node's CA, but its key signed nothing of it.
    const impostor = await rootCa('petrel-ca');
    const fake = await delegate(impostor, 'alice', policy({ memory: 128, cpuids: [0, 1], block: null }));
    const refused = verifyDeploymentProof(
      unwrap(await issueDeploymentProof(request(), fake)),
      request(),
      check,
    );
    expect(refused.ok || refused.error.code).toBe('E_DEPLOY_FORGED');
    expect(refused.ok || refused.error.details?.chain).toBe('E_TLS_SIGNATURE');
  });

  it('is refused as malformed bytes, with what is wrong', () => {
    for (const bytes of [
      new Uint8Array(),
      Uint8Array.of(1, 2, 3),
      proof.subarray(0, 100),
      proof.subarray(0, 300),
    ]) {
      const refused = verifyDeploymentProof(bytes, request(), check);
      expect(refused.ok || refused.error.code).toBe('E_DEPLOY_MALFORMED');
    }
    // A valid proof padded past the bound is refused before any of it is parsed.
    const huge = new Uint8Array(MAX_PROOF_BYTES + 1);
    huge.set(proof);
    const refused = verifyDeploymentProof(huge, request(), check);
    expect(refused.ok || refused.error.message).toBe(
      `the proof for ${request().name} is ${MAX_PROOF_BYTES + 1} bytes, more than ${MAX_PROOF_BYTES}`,
    );
    expect(proof.length).toBeLessThan(MAX_PROOF_BYTES / 4);
  });
});

describe('a removal proof', () => {
  it('verifies for its name only, and never as a deployment', async () => {
    const removal = unwrap(await issueRemovalProof('alice:web', alice));
    expect(printName(unwrap(verifyRemovalProof(removal, 'alice:web', check)).name)).toBe('alice:web');
    const other = verifyRemovalProof(removal, 'alice:db', check);
    expect(other.ok || other.error.code).toBe('E_DEPLOY_ALTERED');
    const asDeployment = verifyDeploymentProof(removal, request(), check);
    expect(asDeployment.ok || asDeployment.error.code).toBe('E_DEPLOY_MALFORMED');
    const deploymentAsRemoval = verifyRemovalProof(proof, 'alice:web', check);
    expect(deploymentAsRemoval.ok || deploymentAsRemoval.error.code).toBe('E_DEPLOY_MALFORMED');
  });

  it('is not made for a name outside the delegation, nor by the CA itself', async () => {
    expect((await issueRemovalProof('bob:web', alice)).ok).toBe(false);
    expect((await issueRemovalProof('alice:web', ca)).ok).toBe(false);
  });
});

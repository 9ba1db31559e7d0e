// The PKI tooling: profiles identical to the certificates Albatross 2.1 made (the captured PKI),
// validity rules, key types, the signing checks, certificate requests, and `petrel ca`.

import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runPetrel } from '../../src/cli/dispatch.js';
import { printName } from '../../src/resources/name.js';
import { decodeDer } from '../../src/tls/certs.js';
import { loadTrustAnchor, verifyClientChain } from '../../src/tls/chain.js';
import { createRequest, signRequest } from '../../src/tls/csr.js';
import { authorize } from '../../src/tls/identity.js';
import { exportPrivateKey, generateKey, importPrivateKey, KEY_TYPES } from '../../src/tls/keys.js';
import {
  days,
  type Issuer,
  issue,
  issueCommandLeaf,
  issueDelegation,
  leafCommonName,
  ON_THE_FLY_MS,
  validityFor,
} from '../../src/tls/pki.js';
import { x509 } from '../../src/tls/x509.js';
import { findCertExtension } from '../../src/wire/index.js';
import { solo5Config } from '../../src/wire/shapes.js';
import type { Command, UnikernelConfig } from '../../src/wire/types.js';
import { der, ders, INFO, name, policy, rootCa, serverIdentity, VECTORS } from './helpers.js';

const vector = async (file: string) => new Uint8Array(await readFile(join(VECTORS, 'pki', file)));

/** What a profile is: every extension with its criticality, and the values that matter. */
function profile(cert: x509.X509Certificate) {
  return {
    extensions: cert.extensions.map((e) => `${e.type}${e.critical ? '!' : ''}`).sort(),
    keyUsage: cert.getExtension(x509.KeyUsagesExtension)?.usages,
    ca: cert.getExtension(x509.BasicConstraintsExtension)?.ca,
    pathLength: cert.getExtension(x509.BasicConstraintsExtension)?.pathLength,
    extKeyUsage: cert.getExtension(x509.ExtendedKeyUsageExtension)?.usages.map(String),
  };
}

describe('profiles are those of the certificates Albatross made', async () => {
  const root = await rootCa('ca');
  const subKey = await generateKey('ed25519');
  const sub = await issue({
    profile: 'delegation',
    commonName: 'sub',
    publicKey: subKey.publicKey,
    validity: validityFor(new Date(), days(365)),
    command: { type: 'policy-add', policy: policy() },
    issuer: root,
  });

  it('root CA', async () => {
    expect(profile(root.chain[0] as x509.X509Certificate)).toEqual(
      profile(new x509.X509Certificate(await vector('cacert.der'))),
    );
  });

  it('server', async () => {
    const server = await serverIdentity(root);
    expect(profile(server.certificate)).toEqual(
      profile(new x509.X509Certificate(await vector('server.pem'))),
    );
  });

  it('delegation', async () => {
    expect(profile(sub.certificate)).toEqual(profile(new x509.X509Certificate(await vector('sub.der'))));
  });

  it('command leaf, on the fly: 10 s in the past to 300 s ahead', async () => {
    const now = new Date('2026-11-29T15:30:51.000Z');
    const leaf = await issueCommandLeaf({ chain: sub.chain, key: subKey }, INFO, name(':web'), { now });
    if (!leaf.ok) throw new Error(leaf.error.message);
    const captured = await readFile(
      join(VECTORS, '08-unikernel-info-sub', 'albatross-client-23623-001-client-cert.der'),
    );
    expect(profile(leaf.value.certificate)).toEqual(profile(new x509.X509Certificate(captured)));
    expect(leaf.value.certificate.notBefore.getTime()).toBe(now.getTime() - 10_000);
    expect(leaf.value.certificate.notAfter.getTime()).toBe(now.getTime() + ON_THE_FLY_MS);
    // Presented as [leaf, sub]: the self-signed root is left out.
    expect(leaf.value.chain.map((c) => c.subject)).toEqual(['CN=web', 'CN=sub']);
  });
});

describe('keys', () => {
  it.each(KEY_TYPES.filter((t) => t !== 'rsa4096'))(
    '%s: PKCS#8 round trip and a self-signed root that verifies',
    async (type) => {
      const key = await generateKey(type);
      const pem = await exportPrivateKey(key);
      expect(pem).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
      const back = await importPrivateKey(pem);
      expect(back.ok && back.value.type).toBe(type);
      const root = await rootCa('ca', type);
      expect(await root.chain[0]?.verify({ date: new Date() })).toBe(true);
    },
  );

  it('the captured Ed25519 CA key imports', async () => {
    expect((await importPrivateKey(await vector('ca.key'))).ok).toBe(true);
    expect(await importPrivateKey('garbage')).toMatchObject({ ok: false, error: { code: 'E_PKI_KEY' } });
  });
});

describe('signing checks', async () => {
  const root = await rootCa();
  const aliceKey = await generateKey('ed25519');
  const validity = validityFor(new Date(), days(365));
  const delegated = await issueDelegation(
    root,
    'alice',
    policy({ vms: 2, memory: 32, cpuids: [0], bridges: ['service'] }),
    aliceKey.publicKey,
    validity,
  );
  if (!delegated.ok) throw new Error(delegated.error.message);
  const alice: Issuer = { chain: delegated.value.chain, key: aliceKey };

  it('a delegation must be usable', async () => {
    const unusable = await issueDelegation(root, 'x', policy({ cpuids: [] }), aliceKey.publicKey, validity);
    expect(unusable).toMatchObject({ ok: false, error: { message: 'Unusable policy with no CPUids' } });
    const small = await issueDelegation(root, 'x', policy({ memory: 16 }), aliceKey.publicKey, validity);
    expect(small).toMatchObject({
      ok: false,
      error: { message: 'Unusable policy with memory 16 MB <= 16 MB' },
    });
  });

  it("a delegation must fit inside the issuing CA's policy", async () => {
    const bob = await issueDelegation(
      alice,
      'bob',
      policy({ vms: 3, memory: 32 }),
      aliceKey.publicKey,
      validity,
    );
    expect(bob).toMatchObject({
      ok: false,
      error: { code: 'E_POLICY_VMS', message: 'policy above allows 2 unikernels, which is fewer than 3' },
    });
    const fits = await issueDelegation(
      alice,
      'bob',
      policy({ vms: 1, memory: 20, block: null }),
      aliceKey.publicKey,
      validity,
    );
    expect(fits.ok).toBe(true);
  });

  it("a create must fit the CA's policy, with the client's texts", async () => {
    const create = (change: Partial<UnikernelConfig>): Command => ({
      type: 'unikernel-create',
      force: false,
      release: '2.7',
      config: { ...config, ...change },
    });
    const fly = (command: Command) => issueCommandLeaf(alice, command, name(':web'));
    expect(await fly(create({ memory: 64 }))).toMatchObject({
      ok: false,
      error: { message: '64 MB memory assigned to unikernel exceeds policy (32MB)' },
    });
    expect(await fly(create({ cpuids: [0, 3] }))).toMatchObject({
      ok: false,
      error: { message: 'the CPUids 3 requested by the unikernel are not allowed by policy' },
    });
    expect(await fly(create({ bridges: [{ netif: 'net', bridge: 'other', mac: null }] }))).toMatchObject({
      ok: false,
      error: { message: 'Bridge(s) other not allowed by policy (available: service)' },
    });
    expect((await fly(create({}))).ok).toBe(true);
  });

  it('leaf CNs follow the client conventions', () => {
    expect(leafCommonName(INFO, name(':web'))).toEqual({ ok: true, value: 'web' });
    expect(leafCommonName(INFO, name(':'))).toEqual({ ok: true, value: '.' });
    expect(leafCommonName({ type: 'policy-info' }, name(':'))).toEqual({ ok: true, value: '.' });
    expect(leafCommonName({ type: 'policy-info' }, name('a:b:'))).toEqual({ ok: true, value: 'a:b' });
    expect(leafCommonName(INFO, name('a:web'))).toMatchObject({
      ok: false,
      error: { message: 'non-empty path' },
    });
  });

  it('an on-the-fly leaf under a delegation verifies and names alice:web', async () => {
    const leaf = await issueCommandLeaf(alice, INFO, name(':web'));
    if (!leaf.ok) throw new Error(leaf.error.message);
    const anchor = loadTrustAnchor(der(root.chain[0] as x509.X509Certificate));
    if (!anchor.ok) throw new Error(anchor.error.message);
    const path = await verifyClientChain(ders(leaf.value.chain), anchor.value, new Date());
    if (!path.ok) throw new Error(path.error.message);
    const identity = authorize(path.value);
    expect(identity.ok && printName(identity.value.name)).toBe('alice:web');
  });
});

const config: UnikernelConfig = solo5Config(new Uint8Array([1]));

describe('certificate requests', async () => {
  const root = await rootCa();

  it('policy add → delegation, other command → command leaf, none → server', async () => {
    const key = await generateKey('p256');
    const cases: [Command | null, boolean, string | undefined][] = [
      [{ type: 'policy-add', policy: policy() }, true, undefined],
      [INFO, false, '1.3.6.1.5.5.7.3.2'],
      [null, false, '1.3.6.1.5.5.7.3.1'],
    ];
    for (const [command, ca, eku] of cases) {
      const csr = await createRequest('alice', command, key);
      const issued = await signRequest(root, csr.toString('pem'));
      if (!issued.ok) throw new Error(issued.error.message);
      expect(profile(issued.value.certificate)).toMatchObject({
        ca,
        extKeyUsage: eku === undefined ? undefined : [eku],
      });
    }
  });

  it('the captured sub.req signed by the captured CA carries the captured extension', async () => {
    const caKey = await importPrivateKey(await vector('ca.key'));
    if (!caKey.ok) throw new Error(caKey.error.message);
    const ca: Issuer = { chain: [new x509.X509Certificate(await vector('cacert.der'))], key: caKey.value };
    const issued = await signRequest(ca, await vector('sub.req'));
    if (!issued.ok) throw new Error(issued.error.message);
    const ours = findCertExtension(der(issued.value.certificate));
    const theirs = findCertExtension(await vector('sub.der'));
    expect(ours.ok && ours.value?.value).toEqual(theirs.ok && theirs.value?.value);
    expect(profile(issued.value.certificate)).toEqual(
      profile(new x509.X509Certificate(await vector('sub.der'))),
    );
  });

  it('a request that is not signed by its own key, or exceeds the CA policy, is refused', async () => {
    const csr = await createRequest(
      'alice',
      { type: 'policy-add', policy: policy({ memory: 8 }) },
      await generateKey('ed25519'),
    );
    expect(await signRequest(root, csr.toString('pem'))).toMatchObject({
      ok: false,
      error: { code: 'E_POLICY_UNUSABLE' },
    });
    const bytes = new Uint8Array(csr.rawData);
    bytes[bytes.length - 1] = (bytes[bytes.length - 1] as number) ^ 1;
    expect(await signRequest(root, bytes)).toMatchObject({ ok: false, error: { code: 'E_PKI_CSR' } });
  });
});

describe('petrel ca', () => {
  const dirs: string[] = [];
  afterEach(async () => {
    for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
  });

  async function petrel(...argv: string[]) {
    let stdout = '';
    let stderr = '';
    const code = await runPetrel(argv, {
      stdout: (chunk) => {
        stdout += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
      },
      stderr: (text) => {
        stderr += text;
      },
      readFile: async (p) => new Uint8Array(await readFile(p)),
      writeFile: (p, data) => writeFile(p, data),
    });
    expect(stdout + stderr).not.toMatch(/PRIVATE|BEGIN/);
    return { code, stdout, stderr };
  }

  const mode = async (file: string) => (await stat(file)).mode & 0o777;

  it('init, delegate twice, then a leaf under the delegation verifies against the CA', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'petrel-ca-'));
    dirs.push(dir);
    expect((await petrel('ca', 'init', '--dir', dir)).code).toBe(0);
    expect(await mode(join(dir, 'ca.key'))).toBe(0o600);
    expect(await mode(join(dir, 'server.key'))).toBe(0o600);
    expect((await petrel('ca', 'init', '--dir', dir)).code).toBe(1);
    const alice = await petrel(
      'ca',
      'delegate',
      'alice',
      '--vms',
      '2',
      '--mem',
      '64',
      '--cpus',
      '0,1',
      '--bridge',
      'service',
      '--dir',
      dir,
    );
    expect(alice).toMatchObject({ code: 0 });
    expect(await mode(join(dir, 'alice.key'))).toBe(0o600);
    const tooBig = await petrel('ca', 'delegate', 'alice:bob', '--vms', '3', '--mem', '32', '--dir', dir);
    expect(tooBig).toMatchObject({
      code: 1,
      stderr: 'petrel ca: policy above allows 2 unikernels, which is fewer than 3\n',
    });
    expect(
      (await petrel('ca', 'delegate', 'alice:bob', '--vms', '1', '--mem', '32', '--dir', dir)).code,
    ).toBe(0);
    expect((await petrel('ca', 'delegate', 'carol:dave', '--vms', '1', '--dir', dir)).code).toBe(1);
    expect((await petrel('ca', 'delegate', 'x', '--dir', dir)).code).toBe(2);
    expect((await readFile(join(dir, 'db'), 'utf8')).trim().split('\n')).toHaveLength(4);

    const bobChain = decodeDer(await readFile(join(dir, 'alice:bob.pem'), 'utf8')).map(
      (d) => new x509.X509Certificate(d),
    );
    expect(bobChain.map((c) => c.subject)).toEqual(['CN=bob', 'CN=alice']);
    const bobKey = await importPrivateKey(await readFile(join(dir, 'alice:bob.key')));
    if (!bobKey.ok) throw new Error(bobKey.error.message);
    const leaf = await issueCommandLeaf({ chain: bobChain, key: bobKey.value }, INFO, name(':web'));
    if (!leaf.ok) throw new Error(leaf.error.message);
    const anchor = loadTrustAnchor(await readFile(join(dir, 'cacert.pem'), 'utf8'));
    if (!anchor.ok) throw new Error(anchor.error.message);
    const path = await verifyClientChain(ders(leaf.value.chain), anchor.value, new Date());
    if (!path.ok) throw new Error(path.error.message);
    const identity = authorize(path.value);
    expect(identity.ok && printName(identity.value.name)).toBe('alice:bob:web');
    expect(identity.ok && identity.value.policies.map((p) => p.path.join(':'))).toEqual([
      'alice:bob',
      'alice',
    ]);
  });

  it('sign: a request file becomes a certificate next to it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'petrel-ca-'));
    dirs.push(dir);
    expect((await petrel('ca', 'init', '--dir', dir, '--key-type', 'p256')).code).toBe(0);
    const csr = await createRequest('web', INFO, await generateKey('ed25519'));
    await writeFile(join(dir, 'web.req'), csr.toString('pem'));
    expect((await petrel('ca', 'sign', join(dir, 'web.req'), '--dir', dir)).code).toBe(0);
    const cert = new x509.X509Certificate(await readFile(join(dir, 'web.pem'), 'utf8'));
    expect(cert.notAfter.getTime() - cert.notBefore.getTime()).toBe(days(1) + 10_000);
    expect((await petrel('ca', 'sign', join(dir, 'missing.req'), '--dir', dir)).code).toBe(1);
  });

  it('usage errors', async () => {
    expect((await petrel('ca')).code).toBe(2);
    expect((await petrel('ca', 'frobnicate')).code).toBe(2);
    expect((await petrel('ca', 'init', '--key-type', 'dsa')).code).toBe(2);
    expect((await petrel('ca', 'delegate', 'a', '--vms', 'two')).code).toBe(2);
    expect((await petrel('ca', '--help')).stdout).toContain('petrel ca delegate PATH');
  });
});

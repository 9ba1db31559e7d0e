// `petrel ca web-cert`: a server certificate browsers accept, signed by the root CA, with a
// P-256 (or RSA) key and every name and address as subjectAltName; Ed25519 refused.

import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkServerIdentity, type PeerCertificate } from 'node:tls';
import { afterAll, expect, it } from 'vitest';
import { caCommand } from '../../src/cli/commands/ca.js';

const dir = await mkdtemp(join(tmpdir(), 'petrel-web-cert-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

async function ca(...args: string[]): Promise<{ status: number; stderr: string }> {
  let stderr = '';
  const status = await caCommand.run(args, {
    stdout: () => {},
    stderr: (t) => {
      stderr += String(t);
    },
    readFile: async () => new Uint8Array(),
    writeFile: async () => {},
  });
  return { status, stderr };
}

it('makes a P-256 certificate for names and addresses that verifies against the CA', async () => {
  expect((await ca('init', '--dir', dir)).status).toBe(0);
  expect((await ca('web-cert', 'petrel.example', '127.0.0.1', '::1', '--dir', dir)).status).toBe(0);
  const cert = new X509Certificate(await readFile(join(dir, 'web.pem')));
  const root = new X509Certificate(await readFile(join(dir, 'cacert.pem')));
  expect(cert.verify(root.publicKey)).toBe(true);
  expect(cert.publicKey.asymmetricKeyType).toBe('ec');
  expect(cert.publicKey.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
  expect(cert.subjectAltName).toBe('DNS:petrel.example, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1');
  expect(cert.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
  const peer = {
    subject: { CN: 'petrel.example' },
    subjectaltname: cert.subjectAltName,
  } as unknown as PeerCertificate;
  expect(checkServerIdentity('petrel.example', peer)).toBeUndefined();
  expect(checkServerIdentity('127.0.0.1', peer)).toBeUndefined();
  expect(checkServerIdentity('other.example', peer)).toBeInstanceOf(Error);
  const key = await readFile(join(dir, 'web.key'), 'utf8');
  expect(key).toContain('PRIVATE KEY');
});

it('refuses Ed25519, which browsers refuse, and a name that is neither DNS nor IP', async () => {
  const ed = await ca('web-cert', 'x.example', '--key-type', 'ed25519', '--dir', dir);
  expect(ed.status).toBe(2);
  expect(ed.stderr).toContain('browsers refuse it');
  const bad = await ca('web-cert', 'not a name', '--dir', dir);
  expect(bad.status).toBe(2);
  expect(bad.stderr).toContain('neither a DNS name nor an IP address');
  expect((await ca('web-cert', '300.1.1.1', '--dir', dir)).stderr).toContain('not an IPv4 address');
});

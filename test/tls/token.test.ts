// Web API bearer tokens (issue 24): minted by `petrel ca token` from a delegation, verified as a
// TLS client chain is (with the token purpose), expired, revoked, malformed and look-alike
// tokens refused with their codes; a token's leaf never passes as a TLS client certificate.

import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { caCommand } from '../../src/cli/commands/ca.js';
import { printPath } from '../../src/resources/name.js';
import { decodeDer } from '../../src/tls/certs.js';
import { loadTrustAnchor, type TrustAnchor, verifyClientChain } from '../../src/tls/chain.js';
import { importPrivateKey } from '../../src/tls/keys.js';
import { issueCommandLeaf } from '../../src/tls/pki.js';
import {
  certificateId,
  encodeToken,
  MAX_TOKEN_CHARS,
  parseDenyList,
  parseToken,
  TOKEN_PREFIX,
  verifyToken,
} from '../../src/tls/token.js';
import { x509 } from '../../src/tls/x509.js';
import { INFO } from './helpers.js';

/** `petrel ca ARGS...` with its status and output. */
async function ca(...args: string[]): Promise<{ status: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const io = {
    stdout: (t: string | Uint8Array) => {
      stdout += String(t);
    },
    stderr: (t: string | Uint8Array) => {
      stderr += String(t);
    },
    readFile: async () => new Uint8Array(),
    writeFile: async () => {},
  };
  const status = await caCommand.run(args, io);
  return { status, stdout, stderr };
}

let dir = '';
let anchor: TrustAnchor;
const none = () => false;
const file = (name: string) => join(dir, name);

async function mint(cert: string, ...args: string[]): Promise<string> {
  const made = await ca('token', '--cert', file(`${cert}.pem`), '--key', file(`${cert}.key`), ...args);
  if (made.status !== 0) throw new Error(made.stderr);
  return made.stdout.trim();
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'petrel-token-'));
  expect((await ca('init', '--dir', dir)).status).toBe(0);
  expect((await ca('delegate', 'alice', '--vms', '2', '--mem', '64', '--dir', dir)).status).toBe(0);
  expect((await ca('delegate', 'alice:bob', '--vms', '1', '--mem', '32', '--dir', dir)).status).toBe(0);
  expect((await ca('delegate', 'carol', '--vms', '1', '--mem', '32', '--dir', dir)).status).toBe(0);
  const loaded = loadTrustAnchor(await readFile(file('cacert.pem')));
  if (!loaded.ok) throw new Error(loaded.error.message);
  anchor = loaded.value;
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('petrel ca token', () => {
  it('makes a token that speaks for its delegation, with its policies deepest first', async () => {
    const made = await ca(
      'token',
      ...['--cert', file('alice:bob.pem'), '--key', file('alice:bob.key'), '--name', 'ci', '--expires', '2h'],
    );
    expect(made.status).toBe(0);
    const text = made.stdout.trim();
    expect(text.startsWith(TOKEN_PREFIX)).toBe(true);
    const verified = verifyToken(text, anchor, new Date(), none);
    if (!verified.ok) throw new Error(verified.error.message);
    expect(verified.value.name).toBe('ci');
    expect(printPath(verified.value.path)).toBe('alice:bob');
    expect(verified.value.policies.map((p) => [printPath(p.path), p.policy.memory])).toEqual([
      ['alice:bob', 32],
      ['alice', 64],
    ]);
    const hours = (verified.value.expires.getTime() - Date.now()) / 3_600_000;
    expect(hours).toBeGreaterThan(1.99);
    expect(hours).toBeLessThanOrEqual(2);
    // The id on standard error is the one revocation uses; the token itself is not there.
    expect(made.stderr).toContain(`id ${verified.value.id}`);
    expect(made.stderr).not.toContain(text.slice(TOKEN_PREFIX.length, 40));
  });

  it('writes --out 0600 and refuses to overwrite it', async () => {
    const out = file('out.token');
    const writeOut = () =>
      ca('token', '--cert', file('alice.pem'), '--key', file('alice.key'), '--name', 'x', '--out', out);
    const first = await writeOut();
    expect(first.status).toBe(0);
    expect(first.stdout).toBe('');
    const { mode } = await import('node:fs/promises').then((fs) => fs.stat(out));
    expect(mode & 0o777).toBe(0o600);
    expect(verifyToken((await readFile(out, 'utf8')).trim(), anchor, new Date(), none).ok).toBe(true);
    const again = await writeOut();
    expect(again.status).toBe(1);
  });

  it('refuses the CA itself, a name that is no label, a bad expiry, one beyond the delegation, a key of another', async () => {
    const root = await ca('token', '--cert', file('cacert.pem'), '--key', file('ca.key'), '--name', 'x');
    expect(root).toMatchObject({ status: 1, stdout: '' });
    expect(root.stderr).toContain('not a delegation');
    const alice = ['--cert', file('alice.pem'), '--key', file('alice.key')];
    expect((await ca('token', ...alice, '--name', 'no:label')).stderr).toContain('token name');
    expect((await ca('token', ...alice, '--name', 'x', '--expires', 'soon')).status).toBe(2);
    expect((await ca('token', ...alice)).status).toBe(2);
    const far = await ca('token', ...alice, '--name', 'x', '--expires', '999d');
    expect(far.status).toBe(1);
    expect(far.stderr).toContain('outlive its delegation');
    const wrong = await ca('token', '--cert', file('alice.pem'), '--key', file('carol.key'), '--name', 'x');
    expect(wrong.stderr).toContain('is not the key of the certificate');
  });
});

describe('verifyToken', () => {
  it('refuses an expired token by its own code, naming when it expired', async () => {
    const text = await mint('alice', '--name', 'brief', '--expires', '1m');
    const later = new Date(Date.now() + 2 * 60_000);
    const refused = verifyToken(text, anchor, later, none);
    expect(refused.ok).toBe(false);
    if (refused.ok) return;
    expect(refused.error.code).toBe('E_TOKEN_EXPIRED');
    expect(refused.error.message).toMatch(/^the token brief expired at \d{4}-/);
  });

  it('refuses malformed text with E_TOKEN_MALFORMED and a message naming the fault', async () => {
    const good = await mint('alice', '--name', 'm');
    const cases: [string, RegExp][] = [
      ['', /begins with/],
      ['Bearer xyz', /begins with/],
      [`${TOKEN_PREFIX}abc+def`, /base64url/],
      [`${TOKEN_PREFIX}${'A'.repeat(MAX_TOKEN_CHARS)}`, /characters long/],
      [good.slice(0, good.length - 20), /cut or not DER/],
      [`${TOKEN_PREFIX}${Buffer.from([0x31, 0x00]).toString('base64url')}`, /not DER/],
    ];
    for (const [text, message] of cases) {
      const refused = verifyToken(text, anchor, new Date(), none);
      expect(refused.ok ? null : refused.error.code, text.slice(0, 30)).toBe('E_TOKEN_MALFORMED');
      expect(refused.ok ? '' : refused.error.message).toMatch(message);
    }
    const leafOnly = encodeToken([(parseToken(good) as { value: Uint8Array[] }).value[0] as Uint8Array]);
    expect(verifyToken(leafOnly, anchor, new Date(), none)).toMatchObject({
      ok: false,
      error: { code: 'E_TOKEN_MALFORMED' },
    });
  });

  it('refuses a forged signature, another CA, and certificates that are not a token', async () => {
    const good = await mint('alice', '--name', 'f');
    const ders = (parseToken(good) as { value: Uint8Array[] }).value.map((d) => new Uint8Array(d));
    const forged = new Uint8Array(ders[0] as Uint8Array);
    forged[forged.length - 5] = ((forged[forged.length - 5] as number) ^ 1) & 0xff;
    expect(verifyToken(encodeToken([forged, ...ders.slice(1)]), anchor, new Date(), none)).toMatchObject({
      ok: false,
      error: { code: 'E_TLS_SIGNATURE' },
    });
    const other = await mkdtemp(join(tmpdir(), 'petrel-token-other-'));
    try {
      await ca('init', '--dir', other, '--name', 'other');
      const stranger = loadTrustAnchor(await readFile(join(other, 'cacert.pem')));
      if (!stranger.ok) throw new Error(stranger.error.message);
      expect(verifyToken(good, stranger.value, new Date(), none)).toMatchObject({
        ok: false,
        error: { code: 'E_TLS_UNTRUSTED' },
      });
    } finally {
      await rm(other, { recursive: true, force: true });
    }
    // A TLS client's command leaf is public (any server it talked to saw it): never a token.
    const chain = decodeDer(await readFile(file('alice.pem'))).map((d) => new x509.X509Certificate(d));
    const key = await importPrivateKey(await readFile(file('alice.key')));
    if (!key.ok) throw new Error(key.error.message);
    const leaf = await issueCommandLeaf({ chain, key: key.value }, INFO, { path: [], label: null });
    if (!leaf.ok) throw new Error(leaf.error.message);
    const commandToken = encodeToken([leaf.value.der, ...ders.slice(1)]);
    expect(verifyToken(commandToken, anchor, new Date(), none)).toMatchObject({
      ok: false,
      error: { code: 'E_TLS_KEY_USAGE' },
    });
    // Nor a delegation certificate presented as the leaf.
    const bob = decodeDer(await readFile(file('alice:bob.pem')));
    expect(verifyToken(encodeToken(bob), anchor, new Date(), none)).toMatchObject({
      ok: false,
      error: { code: 'E_TLS_KEY_USAGE' },
    });
    // And a token's leaf is no TLS client certificate.
    expect(verifyClientChain(ders, anchor, new Date())).toMatchObject({
      ok: false,
      error: { code: 'E_TLS_KEY_USAGE' },
    });
  });
});

describe('petrel ca revoke', () => {
  it('denies a token by file, by text and by id, and every token of a revoked delegation', async () => {
    const state = file('state');
    await import('node:fs/promises').then((fs) => fs.mkdir(state));
    const denied = async () => parseDenyList(await readFile(join(state, 'web-deny-list'), 'utf8'));
    const tokenFile = file('revoke-me.token');
    const one = await mint('alice', '--name', 'one');
    await writeFile(tokenFile, `${one}\n`);
    const two = await mint('alice', '--name', 'two');
    const three = await mint('alice:bob', '--name', 'three');
    const idOf = (text: string) =>
      certificateId((parseToken(text) as { value: Uint8Array[] }).value[0] as Uint8Array);

    expect((await ca('revoke', tokenFile, '--state-dir', state)).status).toBe(0);
    let list = await denied();
    expect(verifyToken(one, anchor, new Date(), (id) => list.ids.has(id))).toMatchObject({
      ok: false,
      error: { code: 'E_TOKEN_REVOKED', message: `the token one is revoked (id ${idOf(one)})` },
    });
    expect(verifyToken(two, anchor, new Date(), (id) => list.ids.has(id)).ok).toBe(true);
    expect((await ca('revoke', two, '--state-dir', state)).status).toBe(0);
    const again = await ca('revoke', idOf(two), '--state-dir', state);
    expect(again.stdout).toContain('already revoked');
    list = await denied();
    expect([...list.ids]).toEqual([idOf(one), idOf(two)]);
    expect(list.invalid).toEqual([]);
    expect(verifyToken(two, anchor, new Date(), (id) => list.ids.has(id)).ok).toBe(false);

    // alice's delegation revoked: bob's token, made below it, goes too.
    expect(verifyToken(three, anchor, new Date(), (id) => list.ids.has(id)).ok).toBe(true);
    expect((await ca('revoke', file('alice.pem'), '--state-dir', state)).status).toBe(0);
    list = await denied();
    const refused = verifyToken(three, anchor, new Date(), (id) => list.ids.has(id));
    expect(refused.ok ? '' : refused.error.message).toMatch(/^its delegation CN=alice is revoked/);

    expect((await ca('revoke', file('missing'), '--state-dir', state)).status).toBe(1);
    expect((await ca('revoke', `${TOKEN_PREFIX}!!`, '--state-dir', state)).stderr).toContain('base64url');
  });

  it('reads a deny-list with comments, blank lines and a line that is not an id', () => {
    const id = 'ab'.repeat(16);
    const parsed = parseDenyList(`# revoked\n\n${id} # ci\n${'CD'.repeat(16)}\nnot an id\n`);
    expect([...parsed.ids]).toEqual([id, 'cd'.repeat(16)]);
    expect(parsed.invalid).toEqual([5]);
  });
});

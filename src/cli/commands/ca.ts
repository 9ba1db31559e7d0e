// `petrel ca init|delegate|sign|token|revoke`: the CA files of a Petrel (or Albatross)
// deployment and the web API's tokens, a thin shell over src/tls/pki.ts and src/tls/token.ts.
// Keys are written 0600, reused when present, and never printed.

import { webcrypto } from 'node:crypto';
import { appendFile, chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, extname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { err, ok, type PetrelError, type Result } from '../../resources/errors.js';
import { type Path, parsePath, printPath } from '../../resources/name.js';
import { makePolicy } from '../../resources/policy.js';
import { decodeDer, viewOf } from '../../tls/certs.js';
import { signRequest } from '../../tls/csr.js';
import { describeError } from '../../tls/errors.js';
import { delegationOf } from '../../tls/identity.js';
import {
  exportPrivateKey,
  generateKey,
  importPrivateKey,
  type KeyPair,
  type KeyType,
  parseKeyType,
} from '../../tls/keys.js';
import {
  createRootCa,
  DEFAULT_DAYS,
  days,
  type Issued,
  type Issuer,
  issue,
  issueDelegation,
  issueToken,
  parseAltName,
  selfSigned,
  validityFor,
} from '../../tls/pki.js';
import {
  certificateId,
  DENY_LIST_FILE,
  encodeToken,
  parseDenyList,
  parseToken,
  TOKEN_PREFIX,
} from '../../tls/token.js';
import { x509 } from '../../tls/x509.js';
import { parseUsage, USAGE_FILE } from '../../web/usage-file.js';
import { type CliCommand, type CliIo, EXIT } from '../command.js';

const USAGE = `usage:
  petrel ca init [--dir DIR] [--name NAME] [--server-name NAME] [--key-type TYPE]
                 [--days N] [--server-days N]
  petrel ca delegate PATH --vms N [--mem MB] [--cpus LIST] [--block MB] [--bridge NAME]...
                 [--days N] [--dir DIR] [--issuer-cert FILE --issuer-key FILE] [--key-type TYPE]
  petrel ca sign CSR [--dir DIR] [--issuer-cert FILE --issuer-key FILE] [--days N] [--out FILE]
  petrel ca web-cert NAME|ADDRESS... [--dir DIR] [--key-type TYPE] [--days N]
  petrel ca token --cert FILE --key FILE --name NAME [--expires WHEN] [--out FILE]
  petrel ca token --list [--state-dir DIR] [--json]
  petrel ca revoke TOKEN|FILE|ID [--state-dir DIR] [--registry URL]

init      a self-signed CA (DIR/cacert.pem, DIR/ca.key; CN --name, default "ca", --days 3650)
          and the server certificate the TLS endpoint presents (DIR/server.pem, DIR/server.key;
          CN --server-name, default "server", --server-days 365).
delegate  an intermediate CA for PATH carrying a policy: --vms unikernels, --mem MB (512),
          --cpus CPU ids (comma-separated, default 0), --block MB (absent: no block storage),
          --bridge names (repeat or comma-separate). It must be usable and fit inside the
          issuing CA's own policy. The issuer of a:b is DIR/a.pem + DIR/a.key (the root CA for
          a top-level PATH) unless --issuer-cert/--issuer-key say otherwise. Writes DIR/PATH.pem
          (the certificate and the issuer chain, what clients use as --ca) and DIR/PATH.key.
          --days 365.
sign      signs a certificate request with the root CA (or --issuer-cert/--issuer-key):
          a policy add becomes a delegation (365 days), another command a command
          certificate (1 day), no command a server certificate (365 days). Writes --out,
          default the request's file name with .pem.
web-cert  the certificate petreld's web API (webListen) presents to browsers, signed by the
          root CA: DIR/web.pem and DIR/web.key, for every NAME (DNS) and ADDRESS (IPv4, IPv6)
          given, as subjectAltName (browsers ignore the CN). --key-type p256 (default), p384,
          rsa2048 or rsa4096: browsers refuse Ed25519 server certificates. --days 365.
          A browser trusts it once DIR/cacert.pem is imported as an authority.
token     a bearer token for petreld's web API (webListen), made offline from a delegation
          (--cert, the delegation's file as \`delegate\` wrote it, and its --key): it can do
          exactly what the delegation can. --name is a label naming it in petreld's audit log;
          --expires a duration (30d, 12h, 90m) or an ISO date, default 30d, not beyond the
          delegation's own expiry. The token is written to --out (0600) or standard output;
          its id goes to standard error. Anyone holding it acts as the delegation: keep it
          secret, as the key. --list prints the tokens petreld's web API has seen (from
          DIR/web-token-usage.json, --state-dir, written at most once a minute): id, name,
          delegation, uses, last use, expiry, and whether revoked (in the local deny-list,
          or with --registry URL in the fleet registry's too) or expired.
revoke    adds a token (its text, or a file holding it), a delegation certificate (a PEM file:
          every token made from it) or an id to petreld's deny-list, DIR/web-deny-list
          (--state-dir, petreld's stateDir, default /var/lib/petrel). petreld honours it on the
          next request, without a restart. --registry URL (the fleet registry's PostgreSQL
          connection string, petreld's fleetDb) adds it to the registry's list instead, which
          every node's web API reads every fleetRevocationPoll (default 5s); with --state-dir
          as well, to both.

Key types: ed25519 (default), p256, p384, p521, rsa2048, rsa4096. Existing key files are reused.
Serial numbers and CNs are appended to DIR/db.

Examples:
  petrel ca init --dir /etc/petrel/ca
  petrel ca delegate alice --vms 2 --mem 64 --cpus 0,1 --bridge service --dir /etc/petrel/ca
  petrel ca delegate alice:bob --vms 1 --mem 32 --dir /etc/petrel/ca
  petrel ca token --cert /etc/petrel/ca/alice.pem --key /etc/petrel/ca/alice.key --name ci \\
                  --expires 30d --out ci.token
  petrel ca revoke ci.token --state-dir /var/lib/petrel
  petrel ca revoke ci.token --registry postgres://petrel@db.example.org/petrel

Exit status: 0 on success, 1 when the work failed, 2 on a usage error.
`;

const OPTIONS = {
  dir: { type: 'string', default: '.' },
  name: { type: 'string' },
  'server-name': { type: 'string', default: 'server' },
  'key-type': { type: 'string' },
  days: { type: 'string' },
  'server-days': { type: 'string' },
  vms: { type: 'string' },
  mem: { type: 'string', default: '512' },
  cpus: { type: 'string', default: '0' },
  block: { type: 'string' },
  bridge: { type: 'string', multiple: true },
  'issuer-cert': { type: 'string' },
  'issuer-key': { type: 'string' },
  out: { type: 'string', short: 'o' },
  cert: { type: 'string' },
  key: { type: 'string' },
  expires: { type: 'string', default: '30d' },
  'state-dir': { type: 'string' },
  registry: { type: 'string' },
  list: { type: 'boolean' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];

class Usage extends Error {}

const DEFAULT_STATE_DIR = '/var/lib/petrel';

export const caCommand: CliCommand = {
  name: 'ca',
  usage: USAGE,
  run: async (args, io) => {
    try {
      const { values, positionals } = parseArgs({
        args: [...args],
        options: OPTIONS,
        allowPositionals: true,
      });
      if (values.help === true) {
        io.stdout(USAGE);
        return EXIT.OK;
      }
      const [action, target, ...extra] = positionals;
      if (extra.length > 0 && action !== 'web-cert') throw new Usage(`unexpected argument '${extra[0]}'`);
      const result = await dispatch(action, target, extra, values, io);
      if (result.ok) return EXIT.OK;
      io.stderr(`petrel ca: ${result.error.message}\n`);
      return EXIT.FAILURE;
    } catch (e) {
      if (e instanceof Usage || (e instanceof TypeError && 'code' in e)) {
        io.stderr(`petrel ca: ${e.message}\n\n${USAGE}`);
        return EXIT.USAGE;
      }
      throw e;
    }
  },
};

function dispatch(
  action: string | undefined,
  target: string | undefined,
  extra: readonly string[],
  values: Values,
  io: CliIo,
) {
  switch (action) {
    case 'init':
      if (target !== undefined) throw new Usage(`unexpected argument '${target}'`);
      return init(values, io);
    case 'delegate':
      if (target === undefined) throw new Usage('delegate needs a PATH');
      return delegate(target, values, io);
    case 'sign':
      if (target === undefined) throw new Usage('sign needs a CSR file');
      return sign(target, values, io);
    case 'web-cert':
      if (target === undefined) throw new Usage('web-cert needs at least one NAME or ADDRESS');
      return webCert([target, ...extra], values, io);
    case 'token':
      if (target !== undefined) throw new Usage(`unexpected argument '${target}'`);
      return values.list === true ? listTokens(values, io) : token(values, io);
    case 'revoke':
      if (target === undefined) throw new Usage('revoke needs a token, a file or an id');
      return revoke(target, values, io);
    default:
      throw new Usage(
        action === undefined
          ? 'missing init, delegate, sign, web-cert, token or revoke'
          : `unknown action '${action}'`,
      );
  }
}

function count(text: string | undefined, flag: string, fallback?: number): number {
  if (text === undefined) {
    if (fallback === undefined) throw new Usage(`--${flag} is required`);
    return fallback;
  }
  const n = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(n))
    throw new Usage(`--${flag} must be a number, not '${text}'`);
  return n;
}

function keyType(values: Values, fallback: KeyType = 'ed25519'): KeyType {
  const type = parseKeyType(values['key-type'] ?? fallback);
  if (!type.ok) throw new Usage(type.error.message);
  return type.value;
}

async function init(values: Values, io: CliIo): Promise<Result<void, PetrelError>> {
  const dir = values.dir;
  if (await exists(join(dir, 'cacert.pem'))) {
    return err('E_PKI_EXISTS', `${join(dir, 'cacert.pem')} exists; remove it or choose another --dir`);
  }
  // The CA directory holds private keys: only its owner may enter it.
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const now = new Date();
  const caKey = await loadOrCreateKey(join(dir, 'ca.key'), keyType(values), io);
  if (!caKey.ok) return caKey;
  const lifetime = count(values.days, 'days', DEFAULT_DAYS.ca);
  const root = await createRootCa(caKey.value, values.name ?? 'ca', validityFor(now, days(lifetime)));
  await writeCertificates(join(dir, 'cacert.pem'), [root.chain[0] as x509.X509Certificate], io);
  await record(dir, root.chain[0] as x509.X509Certificate);
  const serverKey = await loadOrCreateKey(join(dir, 'server.key'), keyType(values), io);
  if (!serverKey.ok) return serverKey;
  const server = await issue({
    profile: 'server',
    commonName: values['server-name'],
    publicKey: serverKey.value.publicKey,
    validity: validityFor(now, days(count(values['server-days'], 'server-days', DEFAULT_DAYS.server))),
    issuer: root,
  });
  await writeCertificates(join(dir, 'server.pem'), [server.certificate], io);
  await record(dir, server.certificate);
  return ok(undefined);
}

async function delegate(pathText: string, values: Values, io: CliIo): Promise<Result<void, PetrelError>> {
  const path = parsePath(pathText);
  if (!path.ok) throw new Usage(path.error.message);
  const label = path.value.at(-1);
  if (label === undefined) throw new Usage('PATH must name at least one label');
  const parent = path.value.slice(0, -1);
  const policy = makePolicy({
    vms: count(values.vms, 'vms'),
    memory: count(values.mem, 'mem'),
    cpuids: list(values.cpus).map((id) => count(id, 'cpus')),
    block: values.block === undefined ? null : count(values.block, 'block'),
    bridges: (values.bridge ?? []).flatMap(list),
  });
  if (!policy.ok) throw new Usage(policy.error.message);
  const issuer = await loadIssuer(values, parent);
  if (!issuer.ok) return issuer;
  const dir = values.dir;
  const file = join(dir, printPath(path.value));
  const key = await loadOrCreateKey(`${file}.key`, keyType(values), io);
  if (!key.ok) return key;
  const lifetime = count(values.days, 'days', DEFAULT_DAYS.delegation);
  const issued = await issueDelegation(
    issuer.value,
    label,
    policy.value,
    key.value.publicKey,
    validityFor(new Date(), days(lifetime)),
  );
  if (!issued.ok) return issued;
  await writeCertificates(`${file}.pem`, issued.value.chain, io);
  await record(dir, issued.value.certificate);
  return ok(undefined);
}

async function sign(csrFile: string, values: Values, io: CliIo): Promise<Result<void, PetrelError>> {
  const out = values.out ?? join(dirname(csrFile), `${basename(csrFile, extname(csrFile))}.pem`);
  if (out === csrFile) throw new Usage('the request would be overwritten; give --out');
  const issuer = await loadIssuer(values, null);
  if (!issuer.ok) return issuer;
  const request = await readBytes(csrFile);
  if (!request.ok) return request;
  const options = values.days === undefined ? {} : { days: count(values.days, 'days') };
  const issued: Result<Issued, PetrelError> = await signRequest(issuer.value, request.value, options);
  if (!issued.ok) return issued;
  await writeCertificates(out, issued.value.chain, io);
  await record(values.dir, issued.value.certificate);
  return ok(undefined);
}

/** Key types browsers accept for a server certificate. */
const WEB_KEY_TYPES: readonly KeyType[] = ['p256', 'p384', 'rsa2048', 'rsa4096'];

async function webCert(
  names: readonly string[],
  values: Values,
  io: CliIo,
): Promise<Result<void, PetrelError>> {
  const altNames = names.map((n) => {
    const parsed = parseAltName(n);
    if (!parsed.ok) throw new Usage(parsed.error.message);
    return parsed.value;
  });
  const type = keyType(values, 'p256');
  if (!WEB_KEY_TYPES.includes(type)) {
    throw new Usage(`--key-type ${type}: browsers refuse it for a server; use ${WEB_KEY_TYPES.join(', ')}`);
  }
  const issuer = await loadIssuer(values, null);
  if (!issuer.ok) return issuer;
  const dir = values.dir;
  const key = await loadOrCreateKey(join(dir, 'web.key'), type, io);
  if (!key.ok) return key;
  if (!WEB_KEY_TYPES.includes(key.value.type)) {
    return err('E_PKI_KEY', `${join(dir, 'web.key')} is an ${key.value.type} key, which browsers refuse`);
  }
  const server = await issue({
    profile: 'server',
    commonName: names[0] as string,
    publicKey: key.value.publicKey,
    validity: validityFor(new Date(), days(count(values.days, 'days', DEFAULT_DAYS.server))),
    altNames,
    issuer: issuer.value,
  });
  await writeCertificates(join(dir, 'web.pem'), server.chain, io);
  await record(dir, server.certificate);
  return ok(undefined);
}

async function token(values: Values, io: CliIo): Promise<Result<void, PetrelError>> {
  if (values.cert === undefined || values.key === undefined) throw new Usage('token needs --cert and --key');
  if (values.name === undefined) throw new Usage('token needs --name');
  const now = new Date();
  const expires = expiry(values.expires, now);
  const issuer = await readIssuer(values.cert, values.key);
  if (!issuer.ok) return issuer;
  const delegation = delegationOf(issuer.value.chain.map((c) => viewOf(c)));
  if (!delegation.ok) return delegation;
  // A token of the CA itself would hold the whole host, unscoped, in a header: tokens are made
  // from delegations, whose policies bound them.
  if (delegation.value.path.length === 0) {
    return err('E_PKI_CERT', `${values.cert} is not a delegation (petrel ca delegate makes one)`);
  }
  const issued = await issueToken(issuer.value, values.name, expires, now);
  if (!issued.ok) return issued;
  const text = encodeToken([
    issued.value.der,
    ...issuer.value.chain.filter((c) => !selfSigned(c)).map(derOf),
  ]);
  if (values.out === undefined) io.stdout(`${text}\n`);
  else {
    try {
      await writeFile(values.out, `${text}\n`, { mode: 0o600, flag: 'wx' });
    } catch (e) {
      return err('E_PKI_FILE', `cannot write ${values.out}: ${describeError(e)}`);
    }
  }
  const who = `${printPath(delegation.value.path)}:`;
  io.stderr(
    `token ${values.name} of ${who} (id ${certificateId(issued.value.der)}, expires ${expires.toISOString()})${values.out === undefined ? '' : `, written to ${values.out}`}\n`,
  );
  return ok(undefined);
}

const derOf = (cert: x509.X509Certificate): Uint8Array => new Uint8Array(cert.rawData);

/** The tokens petreld has seen, with their use and whether they are revoked or expired. */
async function listTokens(values: Values, io: CliIo): Promise<Result<void, PetrelError>> {
  const dir = values['state-dir'] ?? DEFAULT_STATE_DIR;
  const text = async (file: string): Promise<Result<string, PetrelError>> => {
    try {
      return ok(await readFile(join(dir, file), 'utf8'));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return ok('');
      return err('E_PKI_FILE', `cannot read ${join(dir, file)}: ${describeError(e)}`);
    }
  };
  const usage = await text(USAGE_FILE);
  if (!usage.ok) return usage;
  const denied = await text(DENY_LIST_FILE);
  if (!denied.ok) return denied;
  const revoked = new Set(parseDenyList(denied.value).ids);
  if (values.registry !== undefined) {
    const listed = await registryRevocations(values.registry);
    if (!listed.ok) return listed;
    for (const id of listed.value) revoked.add(id);
  }
  const now = Date.now();
  const rows = [...parseUsage(usage.value)]
    .map(([id, t]) => ({
      id,
      ...t,
      state: revoked.has(id) ? 'revoked' : Date.parse(t.expires) <= now ? 'expired' : 'valid',
    }))
    .sort((a, b) => (a.lastUsed < b.lastUsed ? 1 : a.lastUsed > b.lastUsed ? -1 : 0));
  if (values.json === true) {
    io.stdout(`${JSON.stringify(rows, null, 2)}\n`);
    return ok(undefined);
  }
  if (rows.length === 0) {
    io.stdout(`no token has been used (${join(dir, USAGE_FILE)})\n`);
    return ok(undefined);
  }
  const table = [
    ['ID', 'NAME', 'DELEGATION', 'USES', 'LAST USED', 'EXPIRES', 'STATE'],
    ...rows.map((r) => [r.id, r.name, `${r.delegation}:`, String(r.uses), r.lastUsed, r.expires, r.state]),
  ];
  const widths = (table[0] as string[]).map((_, i) =>
    Math.max(...table.map((row) => (row[i] as string).length)),
  );
  for (const row of table)
    io.stdout(
      `${row
        .map((cell, i) => cell.padEnd(widths[i] as number))
        .join('  ')
        .trimEnd()}\n`,
    );
  return ok(undefined);
}

/** `30d`, `12h`, `90m` from now, or an ISO date. */
function expiry(text: string, now: Date): Date {
  const span = /^(\d{1,6})([dhm])$/.exec(text);
  if (span !== null) {
    const unit = { d: 86_400_000, h: 3_600_000, m: 60_000 }[span[2] as 'd' | 'h' | 'm'];
    return new Date(now.getTime() + Number(span[1]) * unit);
  }
  const date = /^\d{4}-\d{2}-\d{2}/.test(text) ? new Date(text) : new Date(Number.NaN);
  if (Number.isNaN(date.getTime())) {
    throw new Usage(`--expires must be a duration (30d, 12h, 90m) or an ISO date, not '${text}'`);
  }
  return date;
}

async function revoke(target: string, values: Values, io: CliIo): Promise<Result<void, PetrelError>> {
  const what = await revocationId(target);
  if (!what.ok) return what;
  // --registry alone writes the registry; --state-dir too, or neither, the local file.
  if (values.registry !== undefined) {
    const written = await revokeInRegistry(values.registry, what.value, io);
    if (!written.ok || values['state-dir'] === undefined) return written;
  }
  return revokeInFile(join(values['state-dir'] ?? DEFAULT_STATE_DIR, DENY_LIST_FILE), what.value, io);
}

/** Every id on the fleet registry's list. */
async function registryRevocations(url: string): Promise<Result<string[], PetrelError>> {
  const [{ openDb }, { revocationsAfter }] = await Promise.all([
    import('../../fleet/db.js'),
    import('../../fleet/revocations.js'),
  ]);
  const pool = openDb(url, { max: 1, applicationName: 'petrel ca token --list' });
  try {
    const read = await revocationsAfter(pool, 0n);
    return read.ok ? ok(read.value.ids) : read;
  } finally {
    await pool.end();
  }
}

/** The id added to the fleet registry's list, which every node's web API polls. */
async function revokeInRegistry(
  url: string,
  what: { id: string; label: string },
  io: CliIo,
): Promise<Result<void, PetrelError>> {
  const [{ openDb }, { addRevocation }] = await Promise.all([
    import('../../fleet/db.js'),
    import('../../fleet/revocations.js'),
  ]);
  const pool = openDb(url, { max: 1, applicationName: 'petrel ca revoke' });
  try {
    const added = await addRevocation(pool, what.id, what.label);
    if (!added.ok) return added;
    io.stdout(
      added.value
        ? `revoked ${what.id} (${what.label}) in the fleet registry\n`
        : `${what.id} (${what.label}) is already revoked in the fleet registry\n`,
    );
    return ok(undefined);
  } finally {
    await pool.end();
  }
}

async function revokeInFile(
  file: string,
  what: { id: string; label: string },
  io: CliIo,
): Promise<Result<void, PetrelError>> {
  let present = '';
  try {
    present = await readFile(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') {
      return err('E_PKI_FILE', `cannot read ${file}: ${describeError(e)}`);
    }
  }
  if (parseDenyList(present).ids.has(what.id)) {
    io.stdout(`${what.id} (${what.label}) is already revoked in ${file}\n`);
    return ok(undefined);
  }
  // One line appended whole (O_APPEND): petreld, reading at any moment, sees it or not.
  const separator = present === '' || present.endsWith('\n') ? '' : '\n';
  await appendFile(file, `${separator}${what.id} # ${what.label}, revoked ${new Date().toISOString()}\n`, {
    mode: 0o644,
  });
  io.stdout(`revoked ${what.id} (${what.label}) in ${file}\n`);
  return ok(undefined);
}

/** The id `revoke` denies: of a token's text or file, a certificate file's first certificate, or given. */
async function revocationId(target: string): Promise<Result<{ id: string; label: string }, PetrelError>> {
  if (/^[0-9a-f]{32}$/.test(target)) return ok({ id: target, label: 'by id' });
  let text = target;
  if (!target.startsWith(TOKEN_PREFIX)) {
    const bytes = await readBytes(target);
    if (!bytes.ok) return bytes;
    text = Buffer.from(bytes.value).toString('utf8').trim();
    if (!text.startsWith(TOKEN_PREFIX)) {
      let ders: Uint8Array[];
      try {
        ders = decodeDer(bytes.value);
      } catch (e) {
        return err('E_PKI_CERT', `${target}: ${describeError(e)}`);
      }
      const first = ders[0];
      if (first === undefined) return err('E_PKI_CERT', `${target} holds neither a token nor a certificate`);
      const cert = new x509.X509Certificate(first);
      return ok({ id: certificateId(first), label: `certificate ${cert.subject}` });
    }
  }
  const ders = parseToken(text);
  if (!ders.ok) return ders;
  const leaf = new x509.X509Certificate(ders.value[0] as Uint8Array);
  return ok({
    id: certificateId(ders.value[0] as Uint8Array),
    label: `token ${viewOf(leaf).commonName ?? ''}`,
  });
}

const list = (text: string): string[] =>
  text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');

/**
 * The signing CA: --issuer-cert/--issuer-key, else the one for `parent` in --dir. When `parent`
 * is given, the issuer's own chain must spell that path, so `delegate a:b` cannot be signed by
 * the CA of some other path.
 */
async function loadIssuer(values: Values, parent: Path | null): Promise<Result<Issuer, PetrelError>> {
  const base = parent === null || parent.length === 0 ? null : join(values.dir, printPath(parent));
  const certFile = values['issuer-cert'] ?? (base === null ? join(values.dir, 'cacert.pem') : `${base}.pem`);
  const keyFile = values['issuer-key'] ?? (base === null ? join(values.dir, 'ca.key') : `${base}.key`);
  const issuer = await readIssuer(certFile, keyFile);
  if (!issuer.ok || parent === null) return issuer;
  const delegation = delegationOf(issuer.value.chain.map((c) => viewOf(c)));
  if (!delegation.ok) return delegation;
  if (printPath(delegation.value.path) !== printPath(parent)) {
    const has = `${printPath(delegation.value.path)}:`;
    return err('E_PKI_PATH', `the issuing CA in ${certFile} delegates ${has}, not ${printPath(parent)}:`);
  }
  return issuer;
}

/** A CA's certificate file (its chain) and its key, which must be the certificate's. */
async function readIssuer(certFile: string, keyFile: string): Promise<Result<Issuer, PetrelError>> {
  const certBytes = await readBytes(certFile);
  if (!certBytes.ok) return certBytes;
  let chain: x509.X509Certificate[];
  try {
    chain = decodeDer(certBytes.value).map((der) => new x509.X509Certificate(der));
  } catch (e) {
    return err('E_PKI_CERT', `${certFile}: not a certificate (${describeError(e)})`);
  }
  const head = chain[0];
  if (head === undefined) return err('E_PKI_CERT', `${certFile} holds no certificate`);
  const keyBytes = await readBytes(keyFile);
  if (!keyBytes.ok) return keyBytes;
  const key = await importPrivateKey(keyBytes.value);
  if (!key.ok) return err('E_PKI_KEY', `${keyFile}: ${key.error.message}`);
  if (!(await sameKey(head, key.value))) {
    return err('E_PKI_KEY', `${keyFile} is not the key of the certificate in ${certFile}`);
  }
  return ok({ chain, key: key.value });
}

async function sameKey(cert: x509.X509Certificate, key: KeyPair): Promise<boolean> {
  const spki = new Uint8Array(await webcrypto.subtle.exportKey('spki', key.publicKey));
  return Buffer.compare(spki, new Uint8Array(cert.publicKey.rawData)) === 0;
}

async function loadOrCreateKey(
  file: string,
  type: KeyType,
  io: CliIo,
): Promise<Result<KeyPair, PetrelError>> {
  if (await exists(file)) {
    const bytes = await readBytes(file);
    if (!bytes.ok) return bytes;
    const key = await importPrivateKey(bytes.value);
    if (!key.ok) return err('E_PKI_KEY', `${file}: ${key.error.message}`);
    io.stdout(`reusing key ${file}\n`);
    return key;
  }
  const key = await generateKey(type);
  await writeFile(file, await exportPrivateKey(key), { mode: 0o600, flag: 'wx' });
  await chmod(file, 0o600);
  io.stdout(`wrote key ${file} (${type})\n`);
  return ok(key);
}

async function writeCertificates(
  file: string,
  chain: readonly x509.X509Certificate[],
  io: CliIo,
): Promise<void> {
  await writeFile(
    file,
    chain
      .map((c) => c.toString('pem'))
      .join('\n')
      .concat('\n'),
    { mode: 0o644 },
  );
  const cert = chain[0] as x509.X509Certificate;
  io.stdout(`wrote ${file}: ${cert.subject}, valid until ${cert.notAfter.toISOString()}\n`);
}

async function record(dir: string, cert: x509.X509Certificate): Promise<void> {
  await appendFile(join(dir, 'db'), `${cert.serialNumber} ${viewOf(cert).commonName ?? ''}\n`);
}

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}

async function readBytes(file: string): Promise<Result<Uint8Array, PetrelError>> {
  try {
    return ok(new Uint8Array(await readFile(file)));
  } catch (e) {
    return err('E_PKI_FILE', `cannot read ${file}: ${describeError(e)}`);
  }
}

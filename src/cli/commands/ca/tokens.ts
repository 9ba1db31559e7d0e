// `petrel ca token`: a bearer token for the web API made offline from a delegation, and
// `--list`, the tokens petreld has seen with their use and whether revoked or expired.

import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { err, ok, type PetrelError, type Result } from '../../../resources/errors.js';
import { printPath } from '../../../resources/name.js';
import { viewOf } from '../../../tls/certs.js';
import { describeError } from '../../../tls/errors.js';
import { delegationOf } from '../../../tls/identity.js';
import { issueToken, selfSigned } from '../../../tls/pki.js';
import { certificateId, DENY_LIST_FILE, encodeToken, parseDenyList } from '../../../tls/token.js';
import { parseUsage, USAGE_FILE } from '../../../tls/token-usage.js';
import type { x509 } from '../../../tls/x509.js';
import type { CliIo } from '../../command.js';
import { readIssuer } from './files.js';
import { DEFAULT_STATE_DIR, Usage, type Values } from './options.js';
import { registryRevocations } from './revoke.js';

export async function token(values: Values, io: CliIo): Promise<Result<void, PetrelError>> {
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
export async function listTokens(values: Values, io: CliIo): Promise<Result<void, PetrelError>> {
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

// `petrel ca revoke`: a token, a delegation certificate or an id added to petreld's deny-list
// file, or to the fleet registry's list that every node's web API polls.

import { appendFile, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type pg from 'pg';
import { err, ok, type PetrelError, type Result } from '../../../resources/errors.js';
import { decodeDer, viewOf } from '../../../tls/certs.js';
import { describeError } from '../../../tls/errors.js';
import {
  certificateId,
  DENY_LIST_FILE,
  parseDenyList,
  parseToken,
  TOKEN_PREFIX,
} from '../../../tls/token.js';
import { x509 } from '../../../tls/x509.js';
import type { CliIo } from '../../command.js';
import { readBytes } from './files.js';
import { DEFAULT_STATE_DIR, type Values } from './options.js';

export async function revoke(target: string, values: Values, io: CliIo): Promise<Result<void, PetrelError>> {
  const what = await revocationId(target);
  if (!what.ok) return what;
  // --registry alone writes the registry; --state-dir too, or neither, the local file.
  if (values.registry !== undefined) {
    const written = await revokeInRegistry(values.registry, what.value, io);
    if (!written.ok || values['state-dir'] === undefined) return written;
  }
  return revokeInFile(join(values['state-dir'] ?? DEFAULT_STATE_DIR, DENY_LIST_FILE), what.value, io);
}

/**
 * `use` with one connection to the fleet registry, closed after it; the registry's code is loaded
 * only then, so `petrel ca` without --registry never reads it.
 */
async function withRegistry<T>(
  url: string,
  applicationName: string,
  use: (pool: pg.Pool, revocations: typeof import('../../../fleet/revocations.js')) => Promise<T>,
): Promise<T> {
  const [{ openDb }, revocations] = await Promise.all([
    import('../../../fleet/db.js'),
    import('../../../fleet/revocations.js'),
  ]);
  const pool = openDb(url, { max: 1, applicationName });
  try {
    return await use(pool, revocations);
  } finally {
    await pool.end();
  }
}

/** Every id on the fleet registry's list. */
export function registryRevocations(url: string): Promise<Result<string[], PetrelError>> {
  return withRegistry(url, 'petrel ca token --list', async (pool, { revocationsAfter }) => {
    const read = await revocationsAfter(pool, 0n);
    return read.ok ? ok(read.value.ids) : read;
  });
}

/** The id added to the fleet registry's list, which every node's web API polls. */
function revokeInRegistry(
  url: string,
  what: { id: string; label: string },
  io: CliIo,
): Promise<Result<void, PetrelError>> {
  return withRegistry(url, 'petrel ca revoke', async (pool, { addRevocation }) => {
    const added = await addRevocation(pool, what.id, what.label);
    if (!added.ok) return added;
    io.stdout(
      added.value
        ? `revoked ${what.id} (${what.label}) in the fleet registry\n`
        : `${what.id} (${what.label}) is already revoked in the fleet registry\n`,
    );
    return ok(undefined);
  });
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

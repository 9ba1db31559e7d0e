// `petrel ca init|delegate|sign|web-cert|token|revoke`: the CA files of a Petrel (or Albatross)
// deployment and the web API's tokens, a thin shell over src/tls/pki.ts and src/tls/token.ts.
// Keys are written 0600, reused when present, and never printed. Each action is in ca/.

import { parseArgs } from 'node:util';
import { type CliCommand, type CliIo, EXIT } from '../command.js';
import { delegate, init, sign } from './ca/certificates.js';
import { OPTIONS, Usage, type Values } from './ca/options.js';
import { revoke } from './ca/revoke.js';
import { listTokens, token } from './ca/tokens.js';
import { webCert } from './ca/web-cert.js';

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

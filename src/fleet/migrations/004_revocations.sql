-- Revoked web API tokens and delegations (issue 24): `petrel ca revoke --registry URL` adds a row,
-- and every node's web API reads the rows added since it last looked (src/fleet/revocations.ts),
-- so one revocation holds on every node. Rows are only ever added: `seq` is how far a node has read.
CREATE TABLE revocations (
  seq bigserial PRIMARY KEY,
  -- The first 16 bytes of the certificate's SHA-256, hex (src/tls/token.ts certificateId).
  id text NOT NULL UNIQUE CHECK (id ~ '^[0-9a-f]{32}$'),
  label text NOT NULL DEFAULT '',
  at timestamptz NOT NULL DEFAULT now()
);

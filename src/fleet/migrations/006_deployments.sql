-- Deployments (src/fleet/deployment.ts): what the fleet is asked to keep running, the images they
-- run, where each replica is assigned, and leases for a leader. The registry holds no authority:
-- a deployment row is worth only its proof (the delegation's DER certificate chain, leaf first);
-- its other columns copy what the proof signs so that the registry can query them.

-- Each image once, under the SHA-256 of its bytes, so it outlives every node that ran it. The
-- checks make a row worth its key even when it was written by hand.
CREATE TABLE images (
  sha256 text PRIMARY KEY CHECK (sha256 ~ '^[0-9a-f]{64}$'),
  size bigint NOT NULL CHECK (size >= 0),
  bytes bytea NOT NULL,
  stored_at timestamptz NOT NULL DEFAULT now(),
  CHECK (octet_length(bytes) = size),
  CHECK (encode(sha256(bytes), 'hex') = sha256)
);

CREATE TABLE deployments (
  -- The canonical full name (`alice:web`): the signer's delegation path and a label.
  name text PRIMARY KEY,
  replicas integer NOT NULL CHECK (replicas >= 1),
  -- An image is never deleted while a deployment names it.
  image text NOT NULL REFERENCES images (sha256),
  -- The Albatross create command's DER, its image empty.
  command bytea NOT NULL,
  requirements jsonb NOT NULL,
  block_devices integer NOT NULL CHECK (block_devices >= 0),
  -- The node it is pinned to, or NULL for any that qualifies.
  node text,
  proof bytea NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  -- Set together when a delegation asks for its removal (the removal's own signed proof).
  removal_proof bytea,
  removed_at timestamptz,
  CHECK ((removal_proof IS NULL) = (removed_at IS NULL))
);

-- One row per replica (deployment name, index). No foreign key to nodes: an assignment outlives
-- a node removed from the registry (it waits for it, or is re-placed with a higher generation).
CREATE TABLE assignments (
  name text NOT NULL REFERENCES deployments (name) ON DELETE CASCADE,
  index integer NOT NULL CHECK (index >= 0),
  node text,
  generation integer NOT NULL DEFAULT 0 CHECK (generation >= 0),
  state text NOT NULL CHECK (state IN ('placing', 'running', 'unplaced', 'waiting', 'exited', 'refused', 'expired')),
  since timestamptz NOT NULL DEFAULT now(),
  reason text,
  PRIMARY KEY (name, index),
  CHECK (state <> 'unplaced' OR node IS NULL),
  CHECK (state NOT IN ('placing', 'running', 'waiting', 'exited') OR node IS NOT NULL),
  -- A deployment's replicas are on distinct nodes (NULLs are distinct: any number unplaced).
  -- Checked at commit, so one batch may swap two replicas' nodes.
  CONSTRAINT assignments_distinct_nodes UNIQUE (name, node) DEFERRABLE INITIALLY DEFERRED
);

CREATE INDEX assignments_node ON assignments (node) WHERE node IS NOT NULL;

-- A lease per lock key (a leader's), which ends by time: a session advisory lock would stay held
-- for as long as a silent TCP connection looks open to the server, which can be hours.
CREATE TABLE leases (
  key text PRIMARY KEY,
  holder text NOT NULL,
  expires_at timestamptz NOT NULL
);

-- Capacity that reflects placements (issue 16). A report now lists the unikernels the node runs,
-- and placement holds room on a node with a reservation until the node's report shows the
-- unikernel (then the report deletes it), the create fails (the placer deletes it) or it expires.
ALTER TABLE nodes ADD COLUMN unikernels text[] NOT NULL DEFAULT '{}';
-- The node's tie-break key (placement.ts spreadKey of its id), stored so that ordering the
-- prefilter's rows costs an XOR per row rather than a hash.
ALTER TABLE nodes ADD COLUMN spread integer NOT NULL DEFAULT 0;

CREATE TABLE reservations (
  id bigserial PRIMARY KEY,
  node text NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
  -- The unikernel's name as the node will list it.
  vm text NOT NULL,
  memory_mib bigint NOT NULL CHECK (memory_mib >= 0),
  at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL
);

CREATE INDEX reservations_node ON reservations (node);
CREATE INDEX reservations_expires_at ON reservations (expires_at);

-- The audit trail: which node each unikernel was placed on, when, and by whom. No foreign key to
-- nodes: the trail outlives a node that is removed from the registry.
CREATE TABLE placements (
  id bigserial PRIMARY KEY,
  vm text NOT NULL,
  node text NOT NULL,
  at timestamptz NOT NULL DEFAULT now(),
  by text NOT NULL
);

CREATE INDEX placements_vm_at ON placements (vm, at DESC);

-- Nodes and what they last reported. A report replaces capabilities and resources wholesale and
-- sets last_seen from the database clock, so freshness never depends on a node's own clock.
-- The '{}' defaults matter: a node that never reported fails every predicate, exactly like one
-- that reported false.
CREATE TABLE nodes (
  id text PRIMARY KEY,
  address text NOT NULL,
  last_seen timestamptz NOT NULL,
  capabilities jsonb NOT NULL DEFAULT '{}',
  resources jsonb NOT NULL DEFAULT '{}'
);

-- Placement's capability prefilter is one containment test (capabilities @> '{...}');
-- jsonb_path_ops indexes exactly that operator and is smaller than the default operator class.
CREATE INDEX nodes_capabilities_gin ON nodes USING gin (capabilities jsonb_path_ops);

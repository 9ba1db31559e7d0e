// `petrel fleet ls`: the deployments the registry holds and where each replica stands, read
// without authority (anyone who can read the registry can list it).

import type pg from 'pg';
import { listDeployments, readAssignments } from '../../../fleet/deployments.js';
import { deploymentsJson, formatDeployments } from '../../../fleet/format.js';
import { type Path, parsePath } from '../../../resources/name.js';
import { type CliIo, EXIT } from '../../command.js';
import { failure, type Values } from './common.js';

export const LS_HELP = `usage: petrel fleet ls --db URL [--under PATH] [--json]

Lists each deployment the registry holds (removed ones too, until their replicas are retired)
with what it asks, and each replica: its node, its state, its generation, since when, and why.

  --under PATH   only the deployments named under this delegation path (alice: holds alice:web
                 and alice:team:db, never alice2:web)
  --json         one object per deployment, its replicas under "assignments"

A replica is
  placing   assigned to a node that has not reported it running yet
  running   its node reports it
  unplaced  no node qualifies (or none has looked yet): the reason says why, per node
  waiting   pinned or with block devices, and its node is lost: it waits for that node
  exited    it exited and is not restarted elsewhere (the reason is its exit status)
  refused   a node found its proof forged, altered or not of its CA: never placed again
  expired   its delegation expired or was revoked: stopped, never placed again
Nodes do not act on deployments yet: until they do, every replica stays unplaced.

examples:
  petrel fleet ls --db postgres://registry/petrel
  petrel fleet ls --db postgres://registry/petrel --under alice: --json

Exit status: 0 on success, 1 when the registry fails, 2 on a usage error.
`;

export async function runList(io: CliIo, pool: pg.Pool, values: Values): Promise<number> {
  let under: Path | undefined;
  if (values.under !== undefined) {
    // `alice:` (how paths are written) or `alice`.
    const path = parsePath(values.under.replace(/:$/u, ''));
    if (!path.ok) return failure(io, path.error);
    under = path.value;
  }
  const deployments = await listDeployments(pool, under === undefined ? {} : { under });
  if (!deployments.ok) return failure(io, deployments.error);
  const assignments = await readAssignments(pool);
  if (!assignments.ok) return failure(io, assignments.error);
  io.stdout(
    values.json === true
      ? `${JSON.stringify(deploymentsJson(deployments.value, assignments.value), null, 2)}\n`
      : formatDeployments(deployments.value, assignments.value),
  );
  return EXIT.OK;
}

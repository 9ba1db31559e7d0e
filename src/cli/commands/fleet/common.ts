// What every `petrel fleet` action shares: its options, its usage text, how it reports a usage
// error or a failure, and NAME IMAGE with the create options read as a node will read them.

import type { parseArgs } from 'node:util';
import { parseNodeId } from '../../../fleet/node.js';
import { makeRequirements, type Requirements } from '../../../fleet/placement.js';
import type { PetrelError } from '../../../resources/errors.js';
import { parseName } from '../../../resources/name.js';
import { readSolo5Notes, tenderKindOf } from '../../../tender/elf.js';
import { hostBridge } from '../../../wire/allocation.js';
import { readNet } from '../../../wire/config-flags.js';
import type { NetSpec } from '../../../wire/types.js';
import { type CliIo, EXIT } from '../../command.js';

export const USAGE = `usage:
  petrel fleet migrate --db URL
  petrel fleet nodes --db URL [--json] [--fresh SECONDS]
  petrel fleet explain NAME IMAGE --db URL [CREATE OPTIONS] [--json]
  petrel fleet create NAME IMAGE --db URL [CREATE OPTIONS] [--arg ARG]...
                      [--tls-ca FILE --tls-cert FILE --tls-key FILE]
  petrel fleet deploy NAME IMAGE --db URL [CREATE OPTIONS] [--arg ARG]... [--replicas N]
                      --tls-cert FILE --tls-key FILE [--tls-ca FILE] [--json]
  petrel fleet ls --db URL [--under PATH] [--json]
  petrel fleet rm NAME --db URL --tls-cert FILE --tls-key FILE [--tls-ca FILE] [--json]

migrate  applies the registry's schema migrations in order (a no-op when up to date)
nodes    lists the registered nodes: the runtimes each serves (its --runtimes that its probe
         found usable) beside the tenders the probe found, free capacity, live reservations
explain  shows, per node, what it serves, its free capacity net of reservations, why it can or
         cannot run the unikernel, and the node create would pick
create   reserves room on the chosen node, creates the unikernel there over mutual TLS, records
         the placement; a node that refuses is left out and the next qualifying node tried
deploy   records a deployment the fleet keeps running, signed by your delegation: the image is
         stored in the registry once, each replica waits unplaced for the nodes to place it
ls       lists the deployments and where each replica stands
rm       records, signed by your delegation, that a deployment is to be removed
         (nodes do not act on deployments yet: deploy, ls and rm only keep the registry's record)

CREATE OPTIONS (the runtime and ABI version come from IMAGE's solo5 ABI note):
  --mem MIB          memory (default 32)
  --cpus N           vCPUs (default 1); the node must offer that many CPU ids (pins, not used up)
  --net [NETIF:]BRIDGE[@MAC]   a network on BRIDGE (repeatable); the node must have BRIDGE up
  --node ID          place only on this node, and only if it qualifies
  --fresh SECONDS    nodes seen longer ago do not qualify (default 30)

A node qualifies when it was seen within --fresh, serves the image's runtime at its ABI version,
has its bridges, and has the memory, a unikernel slot and the CPUs free, net of the reservations
of placements it has not reported yet (a reservation ends when the node reports the unikernel,
when the create fails, or after 2 minutes).
Choice rule: the most free memory after the placement; ties by a hash of NAME and the node id, so
equal nodes take turns. With --node, only that node, never another.
\`petrel fleet deploy --help\` (ls, rm) shows an action's own help, with examples.
Exit status: 0 on success, 1 when no node qualifies, every node tried refused, a delegation or its
policy refuses, or the registry fails, 2 on a usage error.
`;

export const OPTIONS = {
  db: { type: 'string' },
  json: { type: 'boolean' },
  fresh: { type: 'string' },
  mem: { type: 'string' },
  cpus: { type: 'string' },
  net: { type: 'string', multiple: true },
  node: { type: 'string' },
  arg: { type: 'string', multiple: true },
  replicas: { type: 'string' },
  under: { type: 'string' },
  'tls-ca': { type: 'string' },
  'tls-cert': { type: 'string' },
  'tls-key': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

export type Values = ReturnType<
  typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>
>['values'];

export function usageError(io: CliIo, message: string): number {
  io.stderr(`petrel fleet: ${message}\n\n${USAGE}`);
  return EXIT.USAGE;
}

export function failure(io: CliIo, error: PetrelError): number {
  io.stderr(`petrel fleet: ${error.code}: ${error.message}\n`);
  return EXIT.FAILURE;
}

export interface Workload {
  /** NAME as given (a bare label is completed by the delegation's path where it is used). */
  readonly name: string;
  readonly image: Uint8Array;
  readonly requirements: Requirements;
  /** The --net values, read as the node reads them. */
  readonly nets: readonly NetSpec[];
}

/** NAME IMAGE and the create options; the runtime and ABI come from the image's ABI note. */
export async function readWorkload(
  io: CliIo,
  rest: readonly string[],
  values: Values,
): Promise<Workload | number> {
  const [nameText, imagePath, ...extra] = rest;
  if (nameText === undefined || imagePath === undefined) return usageError(io, 'needs NAME and IMAGE');
  if (extra.length > 0) return usageError(io, `unexpected argument '${extra[0]}'`);
  const name = parseName(nameText);
  if (!name.ok) return failure(io, name.error);
  if (name.value.label === null) return usageError(io, `NAME ${nameText} is a path, not a unikernel`);
  const count = (flag: 'mem' | 'cpus', fallback: number) => {
    const text = values[flag];
    return text === undefined ? fallback : /^\d{1,9}$/u.test(text) ? Number(text) : null;
  };
  const memoryMiB = count('mem', 32);
  const cpus = count('cpus', 1);
  if (memoryMiB === null) return usageError(io, '--mem must be a whole number of MiB');
  if (cpus === null) return usageError(io, '--cpus must be a whole number');
  const nets: NetSpec[] = [];
  for (const text of values.net ?? []) {
    const net = readNet(text);
    if (!net.ok) return usageError(io, net.error.message);
    nets.push(net.value);
  }
  if (values.node !== undefined) {
    const node = parseNodeId(values.node);
    if (!node.ok) return failure(io, node.error);
  }
  let image: Uint8Array;
  try {
    image = await io.readFile(imagePath);
  } catch (e) {
    io.stderr(`petrel fleet: cannot read ${imagePath}: ${e instanceof Error ? e.message : String(e)}\n`);
    return EXIT.FAILURE;
  }
  const notes = readSolo5Notes(image, imagePath);
  if (!notes.ok) return failure(io, notes.error);
  const runtime = tenderKindOf(notes.value.abi);
  if (!runtime.ok) return failure(io, runtime.error);
  const requirements = makeRequirements({
    runtime: runtime.value,
    abi: notes.value.abi.version,
    bridges: nets.map(hostBridge),
    memoryMiB,
    cpus,
  });
  if (!requirements.ok) return failure(io, requirements.error);
  return { name: nameText, image, requirements: requirements.value, nets };
}

// `petrel fleet migrate|nodes|explain|create`: the operator's view of the node registry, a thin
// shell over src/fleet (argument parsing, one database pool per run, printing).

import { parseArgs } from 'node:util';
import type pg from 'pg';
import { openDb } from '../../fleet/db.js';
import { formatNodes, formatVerdicts, nodesJson } from '../../fleet/format.js';
import { loadMigrations, migrate } from '../../fleet/migrate.js';
import { parseNodeId } from '../../fleet/node.js';
import {
  DEFAULT_FRESH_MS,
  describeRequirements,
  explain,
  makeRequirements,
  type Placement,
  place,
  type Requirements,
} from '../../fleet/placement.js';
import { Registry } from '../../fleet/registry.js';
import type { PetrelError, Result } from '../../resources/errors.js';
import { parseName } from '../../resources/name.js';
import { readSolo5Notes, tenderKindOf } from '../../tender/elf.js';
import { type CliCommand, type CliIo, EXIT } from '../command.js';

const USAGE = `usage:
  petrel fleet migrate --db URL
  petrel fleet nodes --db URL [--json] [--fresh SECONDS]
  petrel fleet explain NAME IMAGE --db URL [CREATE OPTIONS] [--json]
  petrel fleet create NAME IMAGE --db URL [CREATE OPTIONS] [--arg ARG]...
                      [--tls-ca FILE --tls-cert FILE --tls-key FILE]

migrate  applies the registry's schema migrations in order (a no-op when up to date)
nodes    lists the registered nodes, their last report and whether they are fresh
explain  shows, per node, why it can or cannot run the unikernel, and the node create would pick
create   places the unikernel, creates it on the chosen node over mutual TLS, records the placement

CREATE OPTIONS (the runtime and ABI version come from IMAGE's solo5 ABI note):
  --mem MIB          memory (default 32)
  --cpus N           CPUs the unikernel needs free on the node (default 1)
  --net [NETIF:]BRIDGE[@MAC]   a network on BRIDGE (repeatable); the node must have BRIDGE up
  --node ID          place only on this node, and only if it qualifies
  --fresh SECONDS    nodes seen longer ago do not qualify (default 30)

Choice rule: among the nodes that qualify, the one with the most free memory; ties by node id.
Exit status: 0 on success, 1 when no node qualifies or the registry fails, 2 on a usage error.
`;

const OPTIONS = {
  db: { type: 'string' },
  json: { type: 'boolean' },
  fresh: { type: 'string' },
  mem: { type: 'string' },
  cpus: { type: 'string' },
  net: { type: 'string', multiple: true },
  node: { type: 'string' },
  arg: { type: 'string', multiple: true },
  'tls-ca': { type: 'string' },
  'tls-cert': { type: 'string' },
  'tls-key': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];

/** What `fleet create` asks of the node it chose. */
export interface RemoteCreateRequest {
  readonly node: string;
  /** The node's `--node-address HOST:PORT`. */
  readonly address: string;
  readonly name: string;
  readonly image: Uint8Array;
  readonly memoryMiB: number;
  readonly cpus: number;
  /** `--net` values as given (`[netif:]bridge[@mac]`). */
  readonly nets: readonly string[];
  readonly args: readonly string[];
  readonly tls: { readonly ca?: string; readonly cert?: string; readonly key?: string };
}

/** Creates a unikernel on a remote node over mutual TLS; `by` names the client (for the audit). */
export interface RemoteCreator {
  create(request: RemoteCreateRequest): Promise<Result<{ readonly by: string; readonly reply: string }>>;
}

/** Creates over mutual TLS with the caller's delegation (src/cli/client/remote-create.ts). */
const tlsCreator: RemoteCreator = {
  create: async (request) => (await import('../client/remote-create.js')).tlsCreator.create(request),
};

export function makeFleetCommand(creator: RemoteCreator): CliCommand {
  return {
    name: 'fleet',
    usage: USAGE,
    run: async (args, io) => {
      let parsed: { values: Values; positionals: string[] };
      try {
        parsed = parseArgs({ args: [...args], options: OPTIONS, allowPositionals: true, strict: true });
      } catch (e) {
        return usageError(io, e instanceof Error ? e.message : String(e));
      }
      const { values, positionals } = parsed;
      if (values.help === true) {
        io.stdout(USAGE);
        return EXIT.OK;
      }
      const [action, ...rest] = positionals;
      if (action === undefined) return usageError(io, 'missing action');
      if (!['migrate', 'nodes', 'explain', 'create'].includes(action)) {
        return usageError(io, `unknown action '${action}'`);
      }
      if (values.db === undefined) return usageError(io, `${action} needs --db URL`);
      const freshMs = values.fresh === undefined ? DEFAULT_FRESH_MS : Number(values.fresh) * 1000;
      if (!(Number.isFinite(freshMs) && freshMs > 0)) {
        return usageError(io, '--fresh must be a positive number');
      }
      if ((action === 'migrate' || action === 'nodes') && rest.length > 0) {
        return usageError(io, `${action} takes no arguments`);
      }
      // One connection for the whole command, closed before returning.
      const pool = openDb(values.db, { max: 1 });
      try {
        if (action === 'migrate') return await runMigrate(io, pool);
        if (action === 'nodes') return await runNodes(io, new Registry(pool), values.json === true, freshMs);
        const workload = await readWorkload(io, rest, values);
        if (typeof workload === 'number') return workload;
        const registry = new Registry(pool);
        if (action === 'explain') return await runExplain(io, registry, workload, values, freshMs);
        return await runCreate(io, registry, creator, workload, values, freshMs);
      } finally {
        await pool.end();
      }
    },
  };
}

export const fleetCommand: CliCommand = makeFleetCommand(tlsCreator);

function usageError(io: CliIo, message: string): number {
  io.stderr(`petrel fleet: ${message}\n\n${USAGE}`);
  return EXIT.USAGE;
}

function failure(io: CliIo, error: PetrelError): number {
  io.stderr(`petrel fleet: ${error.code}: ${error.message}\n`);
  return EXIT.FAILURE;
}

async function runMigrate(io: CliIo, pool: pg.Pool): Promise<number> {
  const migrations = await loadMigrations();
  if (!migrations.ok) return failure(io, migrations.error);
  const outcome = await migrate(pool, migrations.value);
  if (!outcome.ok) return failure(io, outcome.error);
  const { applied, alreadyApplied } = outcome.value;
  for (const m of applied) io.stdout(`applied ${String(m.version).padStart(3, '0')}_${m.name}\n`);
  io.stdout(`schema up to date (${applied.length} applied now, ${alreadyApplied} before)\n`);
  return EXIT.OK;
}

async function runNodes(io: CliIo, registry: Registry, json: boolean, freshMs: number): Promise<number> {
  const snapshot = await registry.nodes();
  if (!snapshot.ok) return failure(io, snapshot.error);
  io.stdout(
    json
      ? `${JSON.stringify(nodesJson(snapshot.value, freshMs), null, 2)}\n`
      : formatNodes(snapshot.value, freshMs),
  );
  return EXIT.OK;
}

interface Workload {
  readonly name: string;
  readonly image: Uint8Array;
  readonly requirements: Requirements;
}

/** NAME IMAGE and the create options; the runtime and ABI come from the image's ABI note. */
async function readWorkload(io: CliIo, rest: readonly string[], values: Values): Promise<Workload | number> {
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
  const bridges: string[] = [];
  for (const net of values.net ?? []) {
    const bridge = /^(?:[^:@]+:)?([^:@]+)(?:@[0-9a-fA-F:]+)?$/u.exec(net)?.[1];
    if (bridge === undefined) return usageError(io, `--net ${net}: expected [NETIF:]BRIDGE[@MAC]`);
    bridges.push(bridge);
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
    bridges,
    memoryMiB,
    cpus,
  });
  if (!requirements.ok) return failure(io, requirements.error);
  return { name: nameText, image, requirements: requirements.value };
}

async function runExplain(
  io: CliIo,
  registry: Registry,
  workload: Workload,
  values: Values,
  freshMs: number,
): Promise<number> {
  const snapshot = await registry.nodes();
  if (!snapshot.ok) return failure(io, snapshot.error);
  const { now, nodes } = snapshot.value;
  const options = values.node === undefined ? { now, freshMs } : { now, freshMs, node: values.node };
  const verdicts = explain(nodes, workload.requirements, options);
  const placed = place(nodes, workload.requirements, options);
  if (values.json === true) {
    const outcome = placed.ok ? { placed: placed.value } : { error: placed.error };
    io.stdout(
      `${JSON.stringify({ name: workload.name, requirements: workload.requirements, verdicts, ...outcome }, null, 2)}\n`,
    );
  } else {
    io.stdout(`${workload.name}: ${describeRequirements(workload.requirements)}\n`);
    io.stdout(formatVerdicts(verdicts));
    io.stdout(
      placed.ok
        ? `choice: ${describeChoice(placed.value, values.node)}\n`
        : `no placement: ${placed.error.message}\n`,
    );
  }
  return placed.ok ? EXIT.OK : EXIT.FAILURE;
}

function describeChoice(p: Placement, requested: string | undefined): string {
  const why = requested === undefined ? 'most free memory, ties by id' : 'requested with --node';
  return `${p.node} (${p.address}), free ${p.free.memoryMiB} MiB (${why})`;
}

async function runCreate(
  io: CliIo,
  registry: Registry,
  creator: RemoteCreator,
  workload: Workload,
  values: Values,
  freshMs: number,
): Promise<number> {
  const placed = await registry.place(
    workload.requirements,
    values.node === undefined ? { freshMs } : { freshMs, node: values.node },
  );
  if (!placed.ok) return failure(io, placed.error);
  const { node, address } = placed.value;
  const tls = {
    ...(values['tls-ca'] === undefined ? {} : { ca: values['tls-ca'] }),
    ...(values['tls-cert'] === undefined ? {} : { cert: values['tls-cert'] }),
    ...(values['tls-key'] === undefined ? {} : { key: values['tls-key'] }),
  };
  const created = await creator.create({
    node,
    address,
    name: workload.name,
    image: workload.image,
    memoryMiB: workload.requirements.memoryMiB,
    cpus: workload.requirements.cpus,
    nets: values.net ?? [],
    args: values.arg ?? [],
    tls,
  });
  if (!created.ok) return failure(io, created.error);
  const recorded = await registry.recordPlacement(workload.name, node, created.value.by);
  if (!recorded.ok) {
    io.stderr(`petrel fleet: ${workload.name} was created on ${node}, but recording the placement failed\n`);
    return failure(io, recorded.error);
  }
  io.stdout(
    `${created.value.reply}\n${workload.name} placed on ${describeChoice(placed.value, values.node)}\n`,
  );
  return EXIT.OK;
}

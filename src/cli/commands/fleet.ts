// `petrel fleet migrate|nodes|explain|create`: the operator's view of the node registry, a thin
// shell over src/fleet (argument parsing, one database pool per run, printing).

import { parseArgs } from 'node:util';
import type pg from 'pg';
import { openDb } from '../../fleet/db.js';
import { formatNodes, formatVerdicts, nodesJson, verdictsJson } from '../../fleet/format.js';
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
import { err, type PetrelError } from '../../resources/errors.js';
import { parseName } from '../../resources/name.js';
import { readSolo5Notes, tenderKindOf } from '../../tender/elf.js';
import type { RemoteCreateRequest, RemoteCreator } from '../client/remote-create.js';
import { type CliCommand, type CliIo, EXIT } from '../command.js';

// Where the tests and other callers have always found them.
export type { RemoteCreateRequest, RemoteCreator };

const USAGE = `usage:
  petrel fleet migrate --db URL
  petrel fleet nodes --db URL [--json] [--fresh SECONDS]
  petrel fleet explain NAME IMAGE --db URL [CREATE OPTIONS] [--json]
  petrel fleet create NAME IMAGE --db URL [CREATE OPTIONS] [--arg ARG]...
                      [--tls-ca FILE --tls-cert FILE --tls-key FILE]

migrate  applies the registry's schema migrations in order (a no-op when up to date)
nodes    lists the registered nodes: the runtimes each serves (its --runtimes that its probe
         found usable) beside the tenders the probe found, free capacity, live reservations
explain  shows, per node, what it serves, its free capacity net of reservations, why it can or
         cannot run the unikernel, and the node create would pick
create   reserves room on the chosen node, creates the unikernel there over mutual TLS, records
         the placement; a node that refuses is left out and the next qualifying node tried

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
Exit status: 0 on success, 1 when no node qualifies, every node tried refused, or the registry
fails, 2 on a usage error.
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

/** Creates over mutual TLS with the caller's delegation (src/cli/client/remote-create.ts). */
const tlsCreator: RemoteCreator = {
  create: async (request) => (await import('../client/remote-create.js')).tlsCreator.create(request),
  nameOnNode: async (name, tls) => {
    const { tlsCreator: creator } = await import('../client/remote-create.js');
    return creator.nameOnNode?.(name, tls) ?? { ok: true, value: name };
  },
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
  const reservations = await registry.reservations();
  if (!reservations.ok) return failure(io, reservations.error);
  io.stdout(
    json
      ? `${JSON.stringify(nodesJson(snapshot.value, freshMs, reservations.value), null, 2)}\n`
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
  const options = {
    now,
    freshMs,
    vm: workload.name,
    ...(values.node === undefined ? {} : { node: values.node }),
  };
  const verdicts = explain(nodes, workload.requirements, options);
  const placed = place(nodes, workload.requirements, options);
  if (values.json === true) {
    const outcome = placed.ok ? { placed: placed.value } : { error: placed.error };
    const document = {
      name: workload.name,
      requirements: workload.requirements,
      verdicts: verdictsJson(verdicts),
    };
    io.stdout(`${JSON.stringify({ ...document, ...outcome }, null, 2)}\n`);
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
  const why = requested === undefined ? 'most free memory after the placement' : 'requested with --node';
  return `${p.node} (${p.address}), ${p.memoryAfterMiB} MiB free after it (${why})`;
}

/**
 * Reserve, create, and on a refusal release and try the next qualifying node (never with
 * --node), until one node creates it or none is left; each refusal is named in the outcome.
 */
async function runCreate(
  io: CliIo,
  registry: Registry,
  creator: RemoteCreator,
  workload: Workload,
  values: Values,
  freshMs: number,
): Promise<number> {
  const tls = {
    ...(values['tls-ca'] === undefined ? {} : { ca: values['tls-ca'] }),
    ...(values['tls-cert'] === undefined ? {} : { cert: values['tls-cert'] }),
    ...(values['tls-key'] === undefined ? {} : { key: values['tls-key'] }),
  };
  const named = (await creator.nameOnNode?.(workload.name, tls)) ?? {
    ok: true as const,
    value: workload.name,
  };
  if (!named.ok) return failure(io, named.error);
  const vm = named.value;
  const refused = new Map<string, string>();
  for (;;) {
    const placed = await registry.reserve(workload.requirements, {
      freshMs,
      vm,
      refused,
      ...(values.node === undefined ? {} : { node: values.node }),
    });
    if (!placed.ok) {
      if (refused.size === 0 || placed.error.code !== 'E_FLEET_NO_CAPABLE_NODE')
        return failure(io, placed.error);
      const tried = [...refused.keys()].join(', ');
      return failure(
        io,
        err(
          'E_FLEET_CREATE_FAILED',
          `${vm} was not created: ${tried} refused it and no other node qualifies; ${placed.error.message}`,
          { refused: Object.fromEntries(refused) },
        ).error,
      );
    }
    const { node, address, reservation } = placed.value;
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
    if (!created.ok) {
      // The room was not taken: give it back now rather than when the reservation expires.
      const released = await registry.release(reservation);
      if (!released.ok) io.stderr(`petrel fleet: ${released.error.message} (it expires by itself)\n`);
      // A problem of our own (no delegation) is the same on every node: stop here.
      if (created.error.code === 'E_FLEET_TLS') return failure(io, created.error);
      refused.set(node, created.error.message);
      if (values.node !== undefined) {
        return failure(
          io,
          err(
            'E_FLEET_CREATE_FAILED',
            `${vm} was not created: ${node} (requested with --node) refused it: ${created.error.message}`,
            { refused: Object.fromEntries(refused) },
          ).error,
        );
      }
      continue;
    }
    const recorded = await registry.recordPlacement(vm, node, created.value.by);
    if (!recorded.ok) {
      io.stderr(`petrel fleet: ${vm} was created on ${node}, but recording the placement failed\n`);
      return failure(io, recorded.error);
    }
    const after = [...refused].map(([n, why]) => `  ${n} refused it first: ${why}\n`).join('');
    io.stdout(
      `${created.value.reply}\n${vm} placed on ${describeChoice(placed.value, values.node)}\n${after}`,
    );
    return EXIT.OK;
  }
}

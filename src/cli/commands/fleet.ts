// `petrel fleet migrate|nodes|explain|create|deploy|ls|rm`: the operator's view of the fleet
// registry, a thin shell over src/fleet (argument parsing, one database pool per run, printing).

import { parseArgs } from 'node:util';
import type pg from 'pg';
import { openDb } from '../../fleet/db.js';
import { formatNodes, formatVerdicts, nodesJson, verdictsJson } from '../../fleet/format.js';
import { loadMigrations, migrate } from '../../fleet/migrate.js';
import {
  DEFAULT_FRESH_MS,
  describeRequirements,
  explain,
  type Placement,
  place,
} from '../../fleet/placement.js';
import { Registry } from '../../fleet/registry.js';
import { err } from '../../resources/errors.js';
import type { RemoteCreateRequest, RemoteCreator } from '../client/remote-create.js';
import { type CliCommand, type CliIo, EXIT } from '../command.js';
import {
  failure,
  OPTIONS,
  readWorkload,
  USAGE,
  usageError,
  type Values,
  type Workload,
} from './fleet/common.js';
import { LS_HELP, runList } from './fleet/list.js';

// Where the tests and other callers have always found them.
export type { RemoteCreateRequest, RemoteCreator };

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
      const [action, ...rest] = positionals;
      if (values.help === true) {
        io.stdout(await helpOf(action));
        return EXIT.OK;
      }
      if (action === undefined) return usageError(io, 'missing action');
      if (!ACTIONS.includes(action)) return usageError(io, `unknown action '${action}'`);
      if (values.replicas !== undefined && action !== 'deploy')
        return usageError(io, '--replicas is for deploy');
      if (values.under !== undefined && action !== 'ls') return usageError(io, '--under is for ls');
      if (values.db === undefined) return usageError(io, `${action} needs --db URL`);
      const freshMs = values.fresh === undefined ? DEFAULT_FRESH_MS : Number(values.fresh) * 1000;
      if (!(Number.isFinite(freshMs) && freshMs > 0)) {
        return usageError(io, '--fresh must be a positive number');
      }
      if ((action === 'migrate' || action === 'nodes' || action === 'ls') && rest.length > 0) {
        return usageError(io, `${action} takes no arguments`);
      }
      // One connection for the whole command, closed before returning.
      const pool = openDb(values.db, { max: 1 });
      try {
        if (action === 'migrate') return await runMigrate(io, pool);
        if (action === 'nodes') return await runNodes(io, new Registry(pool), values.json === true, freshMs);
        if (action === 'ls') return await runList(io, pool, values);
        // Signing loads the certificate code: only these two actions pay for it.
        if (action === 'deploy')
          return await (await import('./fleet/deploy.js')).runDeploy(io, pool, rest, values);
        if (action === 'rm')
          return await (await import('./fleet/deploy.js')).runRemove(io, pool, rest, values);
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

const ACTIONS: readonly string[] = ['migrate', 'nodes', 'explain', 'create', 'deploy', 'ls', 'rm'];

/** `petrel fleet ACTION --help`: the action's own help where it has one, else the whole usage. */
async function helpOf(action: string | undefined): Promise<string> {
  if (action === 'ls') return LS_HELP;
  if (action === 'deploy' || action === 'rm') {
    const { DEPLOY_HELP, RM_HELP } = await import('./fleet/deploy.js');
    return action === 'deploy' ? DEPLOY_HELP : RM_HELP;
  }
  return USAGE;
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

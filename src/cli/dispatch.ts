// `petrel SUBCOMMAND ...`: finds the subcommand module and runs it. Subcommands are loaded on
// demand, so adding one is one entry in SUBCOMMANDS and a module under commands/.

import { type CliCommand, type CliIo, EXIT } from './command.js';

export interface Subcommand {
  readonly summary: string;
  readonly load: () => Promise<CliCommand>;
}

export const SUBCOMMANDS: Readonly<Record<string, Subcommand>> = {
  ca: {
    summary: 'make the CA, the server certificate and delegations (intermediate CAs with a policy)',
    load: async () => (await import('./commands/ca.js')).caCommand,
  },
  wire: {
    summary: 'decode and encode Albatross wire messages, certificate commands and state files',
    load: async () => (await import('./commands/wire.js')).wireCommand,
  },
  fleet: {
    summary: 'the fleet registry: migrate its schema, list nodes, explain and create placements',
    load: async () => (await import('./commands/fleet.js')).fleetCommand,
  },
};

function usage(subcommands: Readonly<Record<string, Subcommand>>): string {
  const width = Math.max(...Object.keys(subcommands).map((name) => name.length));
  const lines = Object.entries(subcommands).map(([name, s]) => `  ${name.padEnd(width)}  ${s.summary}`);
  return [
    'usage: petrel <command> [arguments]',
    '',
    'commands:',
    ...lines,
    '',
    "Run 'petrel <command> --help' for details.",
    '',
  ].join('\n');
}

export async function runPetrel(
  argv: readonly string[],
  io: CliIo,
  subcommands: Readonly<Record<string, Subcommand>> = SUBCOMMANDS,
): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined) {
    io.stderr(usage(subcommands));
    return EXIT.USAGE;
  }
  if (name === '--help' || name === '-h' || name === 'help') {
    const topic = rest[0] === undefined ? undefined : subcommands[rest[0]];
    if (topic !== undefined) io.stdout((await topic.load()).usage);
    else io.stdout(usage(subcommands));
    return EXIT.OK;
  }
  const subcommand = Object.hasOwn(subcommands, name) ? subcommands[name] : undefined;
  if (subcommand === undefined) {
    io.stderr(`petrel: unknown command '${name}'\n\n${usage(subcommands)}`);
    return EXIT.USAGE;
  }
  try {
    return await (await subcommand.load()).run(rest, io);
  } catch (e) {
    io.stderr(
      `petrel ${name}: unexpected error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`,
    );
    return EXIT.FAILURE;
  }
}

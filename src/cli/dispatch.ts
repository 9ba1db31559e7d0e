// `petrel [OPTIONS] SUBCOMMAND ...`: finds the subcommand module and runs it. Subcommands are
// loaded on demand, so adding one is one entry in SUBCOMMANDS and a module under commands/.

import { type CliCommand, type CliIo, EXIT } from './command.js';
import { splitLeadingOptions } from './options.js';

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
    summary: 'the fleet registry: migrate its schema, list nodes, place unikernels, record deployments',
    load: async () => (await import('./commands/fleet.js')).fleetCommand,
  },
  create: {
    summary: 'start a unikernel from an image file (--force replaces a running one)',
    load: async () => (await import('./commands/create.js')).createCommand,
  },
  destroy: {
    summary: 'stop a unikernel and forget it',
    load: async () => (await import('./commands/destroy.js')).destroyCommand,
  },
  replace: {
    summary: 'replace a unikernel by a new image, checked for liveness, rolled back if it fails',
    load: async () => (await import('./commands/replace.js')).replaceCommand,
  },
  restart: {
    summary: 'restart a unikernel, with its configuration or a new one',
    load: async () => (await import('./commands/restart.js')).restartCommand,
  },
  info: {
    summary: 'list running unikernels',
    load: async () => (await import('./commands/info.js')).infoCommand,
  },
  get: {
    summary: 'fetch the image a unikernel runs',
    load: async () => (await import('./commands/get.js')).getCommand,
  },
  policy: {
    summary: 'add, remove and list the resource policies of paths',
    load: async () => (await import('./commands/policy.js')).policyCommand,
  },
  block: {
    summary: 'add, remove, list, fill and dump block devices',
    load: async () => (await import('./commands/block.js')).blockCommand,
  },
  console: {
    summary: "follow a unikernel's console, with history",
    load: async () => (await import('./commands/console.js')).consoleCommand,
  },
  consoles: {
    summary: 'list stopped unikernels whose console history is kept',
    load: async () => (await import('./commands/consoles.js')).consolesCommand,
  },
  stats: {
    summary: 'follow the resource usage of unikernels',
    load: async () => (await import('./commands/stats.js')).statsCommand,
  },
  node: {
    summary: "this host's capabilities and boot canary result, as petreld found them",
    load: async () => (await import('./commands/node.js')).nodeCommand,
  },
};

function usage(subcommands: Readonly<Record<string, Subcommand>>): string {
  const width = Math.max(...Object.keys(subcommands).map((name) => name.length));
  const lines = Object.entries(subcommands).map(([name, s]) => `  ${name.padEnd(width)}  ${s.summary}`);
  return [
    'usage: petrel [connection options] [--json] <command> [arguments]',
    '',
    'commands:',
    ...lines,
    '',
    'The connection options (--run-dir, --socket, --remote, --ca, --cert, --key) and --json go',
    "before or after the command. Run 'petrel <command> --help' for details.",
    '',
  ].join('\n');
}

export async function runPetrel(
  argv: readonly string[],
  io: CliIo,
  subcommands: Readonly<Record<string, Subcommand>> = SUBCOMMANDS,
): Promise<number> {
  const split = splitLeadingOptions(argv);
  if (!split.ok) {
    io.stderr(`petrel: ${split.error}\n\n${usage(subcommands)}`);
    return EXIT.USAGE;
  }
  const [name, ...after] = split.rest;
  // Before the command's own arguments, so a `--` among those still ends the options.
  const rest = [...split.leading, ...after];
  if (name === undefined) {
    io.stderr(usage(subcommands));
    return EXIT.USAGE;
  }
  if (name === '--help' || name === '-h' || name === 'help') {
    const topic =
      after[0] !== undefined && Object.hasOwn(subcommands, after[0]) ? subcommands[after[0]] : undefined;
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

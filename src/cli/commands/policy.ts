// `petrel policy add|remove|info`: the resource policies of paths (semantics §4, §6), a policy
// checked for being usable before it is sent.

import { makePolicy, usable } from '../../resources/policy.js';
import { formatPolicies, policiesJson } from '../client/format.js';
import {
  clientCommand,
  EXIT_HELP,
  expectReply,
  parseCommandLine,
  pathArgument,
  positionals,
  Session,
  usageError,
  wholeNumber,
} from '../client/shell.js';
import { CONNECTION_HELP, CONNECTION_OPTIONS } from '../client/target.js';

const USAGE = `usage:
  petrel policy add PATH --vms N [--mem MIB] [--cpus LIST] [--block MIB] [--bridge NAME]...
  petrel policy remove PATH
  petrel policy info [PATH] [--json]

add     sets the policy of PATH (user, or a:b): at most --vms unikernels, --mem MiB of memory
        (default 512), the CPU ids --cpus (comma-separated, default 0), --block MiB of block
        storage (absent: none) and the bridges --bridge (repeat or comma-separate). It must be
        usable (at least one unikernel and one CPU id, more than 16 MiB) and fit inside the
        policy above it.
remove  removes the policy of PATH (running unikernels below it keep running).
info    lists the policies at and below PATH (default: all), relative to PATH.

${CONNECTION_HELP}
examples:
  petrel policy add alice --vms 2 --mem 64 --cpus 0,1 --bridge service
  petrel policy add alice:test --vms 1 --mem 32 --block 100
  petrel policy info alice --json
  petrel policy remove alice:test

${EXIT_HELP}`;

const OPTIONS = {
  ...CONNECTION_OPTIONS,
  vms: { type: 'string' },
  mem: { type: 'string' },
  cpus: { type: 'string' },
  block: { type: 'string' },
  bridge: { type: 'string', multiple: true },
  json: { type: 'boolean' },
} as const;

const list = (text: string): string[] =>
  text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');

export const policyCommand = clientCommand('policy', USAGE, async (args, io) => {
  const { values, positionals: given } = parseCommandLine(args, OPTIONS);
  const session = new Session(io, values);
  const [action, ...rest] = given;
  const policyFlags = (['vms', 'mem', 'cpus', 'block', 'bridge'] as const).filter(
    (f) => values[f] !== undefined,
  );
  if (action !== 'add' && policyFlags.length > 0) throw usageError(`--${policyFlags[0]} is for policy add`);
  switch (action) {
    case 'add': {
      const [pathText] = positionals(rest, ['PATH']) as [string];
      const path = pathArgument(pathText);
      if (values.vms === undefined) throw usageError('policy add needs --vms N');
      const policy = makePolicy({
        vms: wholeNumber(values.vms, '--vms', 0),
        memory: wholeNumber(values.mem ?? '512', '--mem', 0),
        cpuids: list(values.cpus ?? '0').map((id) => wholeNumber(id, '--cpus', 0)),
        block: values.block === undefined ? null : wholeNumber(values.block, '--block', 0),
        bridges: (values.bridge ?? []).flatMap(list),
      });
      if (!policy.ok) throw usageError(policy.error.message);
      const checked = usable(policy.value);
      if (!checked.ok) throw usageError(checked.error.message);
      session.printText(path, await session.ask(path, { type: 'policy-add', policy: policy.value }));
      return 0;
    }
    case 'remove': {
      const [pathText] = positionals(rest, ['PATH']) as [string];
      const path = pathArgument(pathText);
      session.printText(path, await session.ask(path, { type: 'policy-remove' }));
      return 0;
    }
    case 'info': {
      const [pathText] = positionals(rest, ['PATH'], 1);
      const path = pathArgument(pathText);
      const reply = expectReply(await session.ask(path, { type: 'policy-info' }), 'policies');
      session.print(
        () => formatPolicies(reply.entries),
        () => policiesJson(reply.entries),
      );
      return 0;
    }
    default:
      throw usageError(action === undefined ? 'missing add, remove or info' : `unknown action '${action}'`);
  }
});

// `petrel node info`: what petreld found on this host at its last start — the capability report
// and the boot canary's result it wrote to <run-dir>/node.json.

import path from 'node:path';
import { DEFAULT_RUN_DIR } from '../../daemon/layout.js';
import { readWhole } from '../client/files.js';
import { table } from '../client/format.js';
import {
  CLIENT_EXIT,
  clientCommand,
  EXIT_HELP,
  parseCommandLine,
  positionals,
  Stop,
  usageError,
} from '../client/shell.js';

const USAGE = `usage: petrel node info [--run-dir DIR] [--json]

Prints the host capabilities petreld probed at its last start (KVM, tenders and their ABI,
tun, bridges, CPUs, memory, block storage, tap creation, and why anything is missing) and the
boot canary's result, from DIR/node.json (DIR default ${DEFAULT_RUN_DIR}). --json prints the
file as it is.

examples:
  petrel node info
  petrel node info --run-dir /tmp/petrel/run --json

${EXIT_HELP}`;

const OPTIONS = { 'run-dir': { type: 'string' }, json: { type: 'boolean' } } as const;

type Obj = { readonly [key: string]: unknown };
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const yesNo = (v: unknown): string => (v === true ? 'yes' : v === false ? 'no' : '?');
const text = (v: unknown): string => (v === undefined || v === null ? '-' : String(v));
const objects = (v: unknown): Obj[] => (Array.isArray(v) ? v.filter(isObj) : []);

/** The report as aligned `key  value` lines; fields are read defensively (another version wrote it). */
export function formatNode(node: Obj): string {
  const report = isObj(node.report) ? node.report : {};
  const tenders = objects(report.tenders).map(
    (t) => `${text(t.kind)} ABI ${text(t.abi)} ${text(t.path)} (${text(t.version)})`,
  );
  const bridges = objects(report.bridges).map((b) => `${text(b.name)}${b.up === false ? ' (down)' : ''}`);
  const rows: string[][] = [
    ['probed at', text(report.probedAt)],
    ['kvm', yesNo(report.kvm)],
    ['tenders', tenders.length === 0 ? 'none' : tenders.join('; ')],
    ['tun', yesNo(report.tun)],
    ['tap creation', yesNo(report.netAdmin)],
    ['bridges', bridges.length === 0 ? 'none' : bridges.join(', ')],
    ['cpus', text(report.cpus)],
    ['memory', `${text(report.memoryMiB)} MiB`],
    ['block storage', `${text(report.blockStorageMiB)} MiB`],
  ];
  const problems = isObj(report.problems) ? Object.entries(report.problems) : [];
  for (const [capability, problem] of problems) {
    const p = isObj(problem) ? problem : {};
    rows.push([
      `problem: ${capability}`,
      `${text(p.detail)}${p.hint === undefined ? '' : ` (hint: ${text(p.hint)})`}`,
    ]);
  }
  // Daemons before jails wrote none.
  if (isObj(node.jail)) {
    const jail = node.jail;
    rows.push([
      'jail',
      jail.enabled === true
        ? `on: ids ${text(jail.ids)}; ${Array.isArray(jail.limits) ? jail.limits.join(', ') : '-'}; cgroups ${text(jail.cgroups)}`
        : 'off: tenders run unjailed (jail = false)',
    ]);
  }
  // One canary per runtime (`canaries`); daemons before spt wrote a single `canary`.
  const canaries = Array.isArray(node.canaries)
    ? objects(node.canaries)
    : isObj(node.canary)
      ? [node.canary]
      : [];
  if (canaries.length === 0) rows.push(['canary', 'none run (no runtime configured)']);
  for (const c of canaries) {
    rows.push([
      `canary${c.runtime === undefined ? '' : ` ${text(c.runtime)}`}`,
      `booted in ${text(c.bootMs)} ms at ${text(c.at)}, tender peak RSS ${text(c.tenderPeakRssKiB)} KiB`,
    ]);
  }
  return table(null, rows);
}

export const nodeCommand = clientCommand('node', USAGE, async (args, io) => {
  const { values, positionals: given } = parseCommandLine(args, OPTIONS);
  const [action] = positionals(given, ['info']);
  if (action !== 'info') throw usageError(`unknown action '${action}'`);
  const file = path.join(values['run-dir'] ?? DEFAULT_RUN_DIR, 'node.json');
  const bytes = await readWhole(io, file).catch((e: unknown) => {
    if (!(e instanceof Stop)) throw e;
    throw new Stop(e.exit, `${e.message} (has petreld started? give its run directory with --run-dir DIR)`);
  });
  let node: unknown;
  try {
    node = JSON.parse(Buffer.from(bytes).toString('utf8'));
  } catch (e) {
    throw new Stop(CLIENT_EXIT.LOCAL, `${file} is not JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (!isObj(node)) throw new Stop(CLIENT_EXIT.LOCAL, `${file} does not hold a node report`);
  io.stdout(values.json === true ? `${JSON.stringify(node, null, 2)}\n` : formatNode(node));
  return 0;
});

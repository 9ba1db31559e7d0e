// Every import in src/ keeps to the module table of the team's design page
// (../shared/ARCHITECTURE.md, "may import" column): which src/<module> may import which, with
// the few amendments below, each needed by some import and each with its reason.

import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { importGraph } from '../../scripts/import-graph.mjs';
import { repo } from '../repo.js';

const DESIGN = path.join(repo, '..', 'shared', 'ARCHITECTURE.md');
const HEADING = /^##\s+Modules and what each may touch\s*$/u;

/** Module → the other modules it may import; the design page's order kept. */
type Table = ReadonlyMap<string, readonly string[]>;

/**
 * The table under HEADING: the row of each `src/<module>`, its "may import" cell read as the
 * modules it names (backquoted or not; what stands in parentheses only qualifies them), all rows
 * above it for "everything above", none for "nothing …" or "—". Qualifiers such as "types" or
 * "small … utilities" are not checked, only which modules. A cell read otherwise is an error,
 * so a change of the page's wording fails here rather than allowing everything.
 */
function readTable(markdown: string): Table {
  const lines = markdown.split('\n');
  const start = lines.findIndex((l) => HEADING.test(l));
  if (start < 0) throw new Error(`no heading "${HEADING.source}"`);
  const rows: string[][] = [];
  for (const line of lines.slice(start + 1)) {
    if (/^#{1,6}\s/u.test(line)) break;
    if (line.trim().startsWith('|'))
      rows.push(
        line
          .trim()
          .slice(1, -1)
          .split('|')
          .map((c) => c.trim()),
      );
  }
  const [header, , ...body] = rows;
  const moduleColumn = header?.indexOf('module') ?? -1;
  const mayColumn = header?.indexOf('may import') ?? -1;
  if (moduleColumn < 0 || mayColumn < 0) throw new Error('no "module" and "may import" columns');
  const named = body.flatMap((cells) => {
    const module = /^`src\/([a-z]+)`$/u.exec(cells[moduleColumn] ?? '')?.[1];
    return module === undefined ? [] : [{ module, cell: cells[mayColumn] ?? '' }];
  });
  const modules = named.map((r) => r.module);
  const table = new Map<string, readonly string[]>();
  for (const [index, { module, cell }] of named.entries()) {
    const text = cell.replace(/\([^)]*\)/gu, ' ');
    for (const quoted of text.matchAll(/`([^`]*)`/gu)) {
      if (!modules.includes(quoted[1] as string))
        throw new Error(
          `src/${module}: "may import" names \`${quoted[1]}\`, which is no module of the table`,
        );
    }
    const may = /\beverything above\b/iu.test(text)
      ? modules.slice(0, index)
      : modules.filter((m) => m !== module && new RegExp(`(?<![\\w/-])${m}(?![\\w/-])`, 'u').test(text));
    if (may.length === 0 && !/^\s*(?:nothing\b|—|-\s*$)/iu.test(text))
      throw new Error(`src/${module}: cannot read its "may import" cell: ${cell}`);
    table.set(module, may);
  }
  return table;
}

/** Each import of one module's file by another module's that the table does not allow, by pair. */
function violations(edges: ReadonlyMap<string, readonly string[]>, table: Table): string[] {
  const found = new Map<string, string[]>();
  for (const [from, targets] of edges) {
    const source = from.split('/')[0] as string;
    for (const to of targets) {
      const target = to.split('/')[0] as string;
      if (source === target || table.get(source)?.includes(target)) continue;
      const allowed = table.get(source);
      const key = `src/${source} may not import src/${target} (it may import: ${
        allowed === undefined ? 'not in the table' : allowed.length === 0 ? 'nothing' : allowed.join(', ')
      })`;
      found.set(key, [...(found.get(key) ?? []), `${from} → ${to}`]);
    }
  }
  return [...found].sort().map(([key, files]) => `${key}:\n      ${files.join('\n      ')}`);
}

describe('reading a module table', () => {
  const page = [
    '# Design',
    '## Modules and what each may touch',
    '| module | job | may import | never does |',
    '|---|---|---|---|',
    '| `src/core` | names | nothing but itself | I/O |',
    '| `src/io` | files | `core` (for names) | policy |',
    '| `src/ui` | pages | — | — |',
    '| `src/app` | all of it | everything above | — |',
    '| `src/cli` | flags | app, `io` types (not `ui`) | — |',
    '| `native/` | C | — | — |',
    '## Next',
    '| `src/late` | | everything | |',
  ].join('\n');

  it('reads each row: names, parentheses, everything above, nothing', () => {
    expect(Object.fromEntries(readTable(page))).toEqual({
      core: [],
      io: ['core'],
      ui: [],
      app: ['core', 'io', 'ui'],
      cli: ['io', 'app'],
    });
  });

  it('refuses a cell it cannot read, or a name that is no module', () => {
    expect(() => readTable(page.replace('nothing but itself', 'whatever it needs'))).toThrow(/src\/core/u);
    expect(() => readTable(page.replace('`core` (for names)', '`core`, `disk`'))).toThrow(/`disk`/u);
  });

  it('lists an import the table does not allow, with the files', () => {
    const edges = new Map([
      ['io/file.ts', ['core/name.ts', 'io/other.ts']],
      ['core/name.ts', ['io/file.ts']],
      ['cli/main.ts', ['app/start.ts', 'ui/page.ts']],
      ['app/start.ts', ['ui/page.ts', 'core/name.ts']],
    ]);
    expect(violations(edges, readTable(page))).toEqual([
      'src/cli may not import src/ui (it may import: io, app):\n      cli/main.ts → ui/page.ts',
      'src/core may not import src/io (it may import: nothing):\n      core/name.ts → io/file.ts',
    ]);
  });
});

/**
 * Where the code imports more than the design page's table says, and why that is the design's
 * intent rather than a layering fault. The page is the team's, outside this repository: these
 * are to be taken into it (docs/architecture.md lists them). Each must still be needed.
 */
const AMENDMENTS: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  cli: {
    resources:
      'names, policies, errors and liveness checks are parsed and printed by the client as petreld reads them',
    tender: "the client reads an image's ELF notes and manifest (its type, its devices) before it sends it",
  },
  console: { resources: 'consoles are keyed by the unikernel names of src/resources/name.ts' },
  daemon: {
    fleet:
      "the composition root wires the fleet registry's reporter and revocations (the table lists fleet below it)",
  },
};

function amended(table: Table): Table {
  const wider = new Map(table);
  for (const [module, extra] of Object.entries(AMENDMENTS))
    wider.set(module, [...(table.get(module) ?? []), ...Object.keys(extra)]);
  return wider;
}

describe(`the module table of ${path.relative(repo, DESIGN)}`, () => {
  const table = readTable(readFileSync(DESIGN, 'utf8'));

  it('has a row for every module of src/', () => {
    const modules = readdirSync(path.join(repo, 'src'), { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name)
      .sort();
    expect(modules.filter((m) => !table.has(m))).toEqual([]);
  });

  it('holds for every import in src/ (type-only and import() included), with its amendments', () => {
    const found = violations(importGraph(path.join(repo, 'src')).edges, amended(table));
    expect(found, `imports the table does not allow:\n  ${found.join('\n  ')}`).toEqual([]);
  });

  it('needs each amendment: the table does not already allow it, and some import uses it', () => {
    const edges = importGraph(path.join(repo, 'src')).edges;
    const used = new Set(
      [...edges].flatMap(([from, targets]) =>
        targets.map((to) => `${from.split('/')[0]}→${to.split('/')[0]}`),
      ),
    );
    const stale = Object.entries(AMENDMENTS).flatMap(([module, extra]) =>
      Object.keys(extra).flatMap((target) =>
        table.get(module)?.includes(target) || !used.has(`${module}→${target}`)
          ? [`${module} → ${target}`]
          : [],
      ),
    );
    expect(stale).toEqual([]);
  });
});

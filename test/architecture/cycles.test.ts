// No import cycle in src/: the finder (scripts/import-graph.mjs) checked on small trees written
// here, then src/ itself, with type-only imports and `import()` counted like any other.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { importGraph, specifiersOf } from '../../scripts/import-graph.mjs';
import { repo } from '../repo.js';

const scratch = mkdtempSync(path.join(tmpdir(), 'petrel-cycles-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Writes a tree of files (path → text) in a fresh directory and returns its cycles' files. */
function cyclesOf(files: Readonly<Record<string, string>>): string[][] {
  const root = mkdtempSync(path.join(scratch, 'tree-'));
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), text);
  }
  const graph = importGraph(root);
  expect(graph.unresolved, 'every relative import of the fixture resolves').toEqual([]);
  return graph.cycles.map((c) => [...c.files]);
}

describe('the cycle finder', () => {
  it('finds a cycle of two files', () => {
    expect(
      cyclesOf({
        'a.ts': "import { b } from './b.js';\nexport const a = () => b;\n",
        'b.ts': "import { a } from './a.js';\nexport const b = () => a;\n",
      }),
    ).toEqual([['a.ts', 'b.ts']]);
  });

  it('finds a cycle of three files closed by a type-only import, across directories', () => {
    expect(
      cyclesOf({
        'x/a.ts': "import { b } from '../y/b.js';\nexport const a = b;\n",
        'y/b.ts': "export { c as b } from './c.js';\n",
        'y/c.ts':
          "import type { A } from '../x/a.js';\nexport const c: A | null = null;\nexport type C = 1;\n",
        'z.ts': "import { a } from './x/a.js';\nexport const z = a;\n",
      }),
    ).toEqual([['x/a.ts', 'y/b.ts', 'y/c.ts']]);
  });

  it('finds a cycle through import(), in code and in a type', () => {
    expect(
      cyclesOf({
        'a.ts': "export const load = () => import('./b.js');\n",
        'b.ts': "export let a: typeof import('./a.js') | undefined;\n",
        'c.ts': "export const load = async () => (await import('./d.js')).d;\n",
        'd.ts': "import { load } from './c.js';\nexport const d = load;\n",
      }),
    ).toEqual([
      ['a.ts', 'b.ts'],
      ['c.ts', 'd.ts'],
    ]);
  });

  it('finds none in an acyclic graph, whatever its comments, strings and regular expressions say', () => {
    expect(
      cyclesOf({
        'a.ts': "import { b } from './b.js';\nimport { c } from './c.js';\nexport const a = [b, c];\n",
        'b.ts': "import { c } from './c.js';\nexport const b = c;\n",
        'c.ts': [
          "// import { a } from './a.js';",
          "/* import('./b.js') */",
          // biome-ignore lint/suspicious/noTemplateCurlyInString: a template literal of the fixture's source
          "export const c = \"import('./a.js')\".length + `${'//'}`.length;",
          "export const re = /import '\\.\\/a\\.js'/u;",
          '',
        ].join('\n'),
      }),
    ).toEqual([]);
  });

  it('reads every form of import a file can have', () => {
    const source = [
      "import a from './a.js';",
      "import type { B } from './b.js';",
      "import {\n  c,\n  type C,\n} from './c.js';",
      "export * from './d.js';",
      "export { e } from './e.js';",
      "import './f.js';",
      "const g = await import('./g.js');",
      "let h: import('./h.js').H;",
      "import { i } from 'node:fs';",
    ].join('\n');
    expect(specifiersOf(source).sort()).toEqual(
      ['./a.js', './b.js', './c.js', './d.js', './e.js', './f.js', './g.js', './h.js', 'node:fs'].sort(),
    );
  });
});

describe('src/', () => {
  const graph = importGraph(path.join(repo, 'src'));

  it('is read whole: many files, every relative import resolved', () => {
    expect(graph.files.length).toBeGreaterThan(100);
    expect(graph.unresolved).toEqual([]);
  });

  it('has no import cycle', () => {
    const report = graph.cycles.map((c) => `${c.files.join(', ')}\n    e.g. ${c.loop.join(' → ')}`);
    expect(report, `import cycles in src/:\n  ${report.join('\n  ')}`).toEqual([]);
  });
});

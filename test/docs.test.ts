// The documentation (README.md and docs/) held to the code where that is cheap to check: the
// configuration table against src/daemon/config.ts, names it uses against the tree, links inside it.

import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { buildConfig, CONFIG_FIELDS, type ConfigKey, flagName, keyPath } from '../src/daemon/config.js';
import { TLS_ENDPOINT_USAGE } from '../src/tls/cli.js';
import { repo } from './repo.js';

// ---------------------------------------------------------------------------------------------
// Reading the pages: fenced code blocks apart from prose, inline code spans, links, headings.

interface Page {
  /** Relative to the repository, e.g. `docs/operations.md`. */
  readonly file: string;
  readonly text: string;
  /** Prose lines (outside fenced blocks), with their line numbers. */
  readonly prose: readonly { readonly line: number; readonly text: string }[];
  /** Fenced code blocks: the info string (`toml`, `sh`, …) and the body. */
  readonly blocks: readonly { readonly line: number; readonly lang: string; readonly body: string }[];
}

function readPage(file: string): Page {
  const text = readFileSync(path.join(repo, file), 'utf8');
  const prose: { line: number; text: string }[] = [];
  const blocks: { line: number; lang: string; body: string }[] = [];
  let open: { line: number; lang: string; lines: string[]; fence: string } | null = null;
  text.split('\n').forEach((content, index) => {
    const line = index + 1;
    const fence = /^\s*(`{3,}|~{3,})\s*([\w-]*)/u.exec(content);
    if (open === null && fence !== null) {
      open = { line, lang: fence[2] ?? '', lines: [], fence: fence[1] as string };
    } else if (open !== null && content.trim().startsWith(open.fence)) {
      blocks.push({ line: open.line, lang: open.lang, body: open.lines.join('\n') });
      open = null;
    } else if (open !== null) {
      open.lines.push(content);
    } else {
      prose.push({ line, text: content });
    }
  });
  return { file, text, prose, blocks };
}

const docFiles = [
  'README.md',
  ...readdirSync(path.join(repo, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`),
];
const pages = docFiles.map(readPage);
const page = (file: string): Page => {
  const found = pages.find((p) => p.file === file);
  if (found === undefined) throw new Error(`${file} is missing`);
  return found;
};

/** Inline code spans of the prose, with where they are. */
function codeSpans(p: Page): { where: string; code: string }[] {
  return p.prose.flatMap(({ line, text }) =>
    [...text.matchAll(/(`+)(.+?)\1/gu)].map((m) => ({ where: `${p.file}:${line}`, code: m[2] as string })),
  );
}

/** Every command line: code blocks (continuations joined) and inline spans. */
function commandLines(p: Page): { where: string; code: string }[] {
  const fromBlocks = p.blocks.flatMap((b) =>
    b.body
      .replace(/\\\n/gu, ' ')
      .split('\n')
      .map((code) => ({ where: `${p.file}:${b.line}`, code })),
  );
  return [...fromBlocks, ...codeSpans(p)];
}

/** `[text](target)` and `[label]: target` outside code, with where they are. */
function links(p: Page): { where: string; target: string }[] {
  const found: { where: string; target: string }[] = [];
  for (const { line, text } of p.prose) {
    const withoutCode = text.replace(/(`+).+?\1/gu, '');
    for (const m of withoutCode.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/gu))
      found.push({ where: `${p.file}:${line}`, target: m[1] as string });
    const definition = /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/u.exec(withoutCode);
    if (definition !== null) found.push({ where: `${p.file}:${line}`, target: definition[1] as string });
  }
  return found;
}

/** GitHub's anchors for a page's headings. */
function anchors(p: Page): Set<string> {
  const slugs = new Set<string>();
  const seen = new Map<string, number>();
  for (const { text } of p.prose) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/u.exec(text);
    if (heading === null) continue;
    const plain = (heading[1] as string)
      .replace(/\[([^\]]*)\]\([^)]*\)/gu, '$1')
      .replace(/[`*_]/gu, '')
      .toLowerCase();
    const slug = plain.replace(/[^\p{L}\p{N}\s-]/gu, '').replace(/\s/gu, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    slugs.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return slugs;
}

// ---------------------------------------------------------------------------------------------

const KEYS = Object.keys(CONFIG_FIELDS) as ConfigKey[];

/** The rows of the table under "### Every key" in the operations guide. */
function keyTable(): { key: string; table: string; flag: string; defaultText: string }[] {
  const ops = page('docs/operations.md');
  const start = ops.prose.findIndex((l) => /^###\s+Every key\s*$/u.test(l.text));
  if (start < 0) throw new Error('docs/operations.md has no "### Every key" section');
  const rows: { key: string; table: string; flag: string; defaultText: string }[] = [];
  for (const { text } of ops.prose.slice(start + 1)) {
    if (/^#{1,6}\s/u.test(text)) break;
    const cells = text.split('|').map((c) => c.trim());
    const key = /^`(\w+)`$/u.exec(cells[1] ?? '')?.[1];
    if (key === undefined) continue;
    rows.push({ key, table: cells[2] ?? '', flag: cells[3] ?? '', defaultText: cells[4] ?? '' });
  }
  return rows;
}

describe('the configuration reference', () => {
  const rows = keyTable();

  it('lists every key of src/daemon/config.ts, once, and no other', () => {
    const listed = rows.map((r) => r.key);
    expect(
      listed.filter((k, i) => listed.indexOf(k) !== i),
      'listed twice',
    ).toEqual([]);
    expect(
      KEYS.filter((k) => !listed.includes(k)),
      'keys missing from docs/operations.md',
    ).toEqual([]);
    expect(
      listed.filter((k) => !KEYS.includes(k as ConfigKey)),
      'keys in docs/operations.md that config.ts lacks',
    ).toEqual([]);
  });

  it('gives each key its table, flag and default as config.ts has them', () => {
    for (const row of rows) {
      const key = row.key as ConfigKey;
      const field = CONFIG_FIELDS[key];
      if (field === undefined) continue; // reported by the test above
      expect(row.table, `${key}: table`).toBe(field.table === null ? 'top level' : `\`[${field.table}]\``);
      expect(row.flag, `${key}: flag`).toBe(`\`--${flagName(key)} ${field.arg}\``);
      expect(row.defaultText, `${key}: default`).toBe(field.defaultText);
    }
  });
});

/** Names the docs write like keys that are not keys, each with where the code has it. */
const NOT_KEYS: Readonly<Record<string, { readonly file: string; readonly what: string }>> = {
  hvtSse: { file: 'src/daemon/preflight.ts', what: 'a preflight check' },
  netAdmin: { file: 'src/daemon/preflight.ts', what: 'a preflight check' },
  stateFree: { file: 'src/daemon/preflight.ts', what: 'a preflight check' },
  runFree: { file: 'src/daemon/preflight.ts', what: 'a preflight check' },
  readyMs: { file: 'src/daemon/daemon.ts', what: 'a field of the ready log line' },
  probedMs: { file: 'src/daemon/daemon.ts', what: 'a field of the ready log line' },
  restoredMs: { file: 'src/daemon/daemon.ts', what: 'a field of the ready log line' },
  bootMs: { file: 'src/daemon/daemon.ts', what: 'a field of the canary log line' },
  lastExit: { file: 'src/cli/client/exits.ts', what: 'a field of petrel info --json' },
  jailError: { file: 'src/engine/supervision.ts', what: 'a field of the unikernel exited log line' },
  tokenId: { file: 'src/web/server.ts', what: 'a field of the web.audit log line' },
  testKvmDevice: { file: 'test/engine/guest.ts', what: 'the KVM device the tests configure' },
};

describe('configuration keys named in the docs', () => {
  it('exist: a bare `camelCase` name is a key (or one of the few other names, which exist too)', () => {
    const wrong: string[] = [];
    for (const p of pages) {
      for (const { where, code } of codeSpans(p)) {
        if (!/^[a-z]+(?:[A-Z][a-z0-9]*)+$/u.test(code)) continue;
        if (KEYS.includes(code as ConfigKey)) continue;
        const other = NOT_KEYS[code];
        if (other === undefined) wrong.push(`${where}: \`${code}\` is not a configuration key`);
      }
    }
    for (const [name, { file, what }] of Object.entries(NOT_KEYS)) {
      if (!readFileSync(path.join(repo, file), 'utf8').includes(name))
        wrong.push(`${name} (${what}) is not in ${file} any more`);
    }
    expect(wrong).toEqual([]);
  });

  it('exist with their table where written `table.key`', () => {
    const wrong: string[] = [];
    for (const p of pages) {
      for (const { where, code } of codeSpans(p)) {
        const m = /^(tls|limits|restart|fleet)\.([a-z]+[A-Z]\w*)$/u.exec(code);
        if (m === null) continue;
        const key = m[2] as ConfigKey;
        if (!KEYS.includes(key) || keyPath(key) !== code) wrong.push(`${where}: ${code}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('TOML examples are valid configurations', () => {
    const examples = pages.flatMap((p) =>
      p.blocks.filter((b) => b.lang === 'toml').map((b) => ({ where: `${p.file}:${b.line}`, body: b.body })),
    );
    expect(examples.length).toBeGreaterThan(0);
    for (const { where, body } of examples) {
      const built = buildConfig({ document: parseToml(body), documentDir: '/' });
      expect(built.ok ? 'valid' : built.error.message, where).toBe('valid');
    }
  });

  it('petreld flags in commands exist (the daemon, export-state, check, tls-endpoint)', () => {
    const daemonFlags = new Set([...KEYS.map(flagName), 'config', 'help']);
    const wrong: string[] = [];
    let seen = 0;
    for (const p of pages) {
      for (const { where, code } of commandLines(p)) {
        for (const m of code.matchAll(/(?:^|[\s/])petreld(?:\.js)?((?:\s+[^|;&#]*)?)/gu)) {
          const args = m[1] ?? '';
          const endpoint = /^\s+tls-endpoint\b/u.test(args);
          for (const flag of args.matchAll(/--([a-z][a-z0-9-]*)/gu)) {
            seen++;
            const name = flag[1] as string;
            const known = endpoint ? TLS_ENDPOINT_USAGE.includes(`--${name}`) : daemonFlags.has(name);
            if (!known) wrong.push(`${where}: --${name} in \`${code.trim()}\``);
          }
        }
      }
    }
    expect(seen).toBeGreaterThan(0);
    expect(wrong).toEqual([]);
  });
});

/** The other modules of `src/` that files of `src/<module>` import (statically or dynamically). */
function importsOf(module: string): string[] {
  const src = path.join(repo, 'src');
  const found = new Set<string>();
  for (const file of filesUnder(`src/${module}`).filter((f) => f.endsWith('.ts'))) {
    const text = readFileSync(path.join(repo, file), 'utf8');
    for (const m of text.matchAll(/(?:\bfrom|\bimport\()\s*'(\.{1,2}\/[^']+)'/gu)) {
      const target = path.resolve(path.dirname(path.join(repo, file)), m[1] as string);
      const top = path.relative(src, target).split(path.sep)[0] as string;
      if (top !== module && top !== '..') found.add(top);
    }
  }
  return [...found].sort();
}

describe('the architecture page', () => {
  it('gives each module of src/ the imports it really has', () => {
    const arch = page('docs/architecture.md');
    const start = arch.prose.findIndex((l) => /^##\s+Modules and what each may touch\s*$/u.test(l.text));
    expect(start).toBeGreaterThanOrEqual(0);
    const above: string[] = [];
    const documented = new Map<string, string[]>();
    for (const { text } of arch.prose.slice(start + 1)) {
      if (/^#{1,6}\s/u.test(text)) break;
      const cells = text.split('|').map((c) => c.trim());
      const module = /^`src\/([a-z]+)`$/u.exec(cells[1] ?? '')?.[1];
      if (module === undefined) continue;
      const column = (cells[3] ?? '').replace(/\([^)]*\)/gu, '');
      const imports =
        column === 'nothing'
          ? []
          : column === 'everything above'
            ? [...above]
            : [...column.matchAll(/`([a-z]+)`/gu)].map((m) => m[1] as string);
      documented.set(module, imports.sort());
      above.push(module);
    }
    const modules = readdirSync(path.join(repo, 'src'), { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name)
      .sort();
    expect([...documented.keys()].sort(), 'modules in the table').toEqual(modules);
    for (const module of modules) expect(documented.get(module), `src/${module}`).toEqual(importsOf(module));
  });
});

describe('names of the tree in the docs', () => {
  it('files and directories named in `code` exist', () => {
    const wrong: string[] = [];
    for (const p of pages) {
      for (const { where, code } of codeSpans(p)) {
        if (!/^(?:src|native|test|bench|scripts|contrib|property-tests|docs|\.ci)\/[\w./-]*$/u.test(code))
          continue;
        // Build products, and patterns such as bench/NAME.ts.
        if (code.startsWith('native/build/') || /NAME|<|\*/u.test(code)) continue;
        if (!existsSync(path.join(repo, code))) wrong.push(`${where}: ${code}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('the benchmark table lists every bench/*.ts, and `npm run bench -- NAME` names one', () => {
    const benches = readdirSync(path.join(repo, 'bench'))
      .filter((f) => f.endsWith('.ts'))
      .map((f) => f.slice(0, -3))
      .sort();
    const contributing = page('docs/contributing.md');
    const start = contributing.prose.findIndex((l) => /^##\s+Benchmarks\s*$/u.test(l.text));
    const listed: string[] = [];
    for (const { text } of contributing.prose.slice(start + 1)) {
      if (/^#{1,6}\s/u.test(text)) break;
      const name = /^\|\s*`([a-z]+)`\s*\|/u.exec(text)?.[1];
      if (name !== undefined) listed.push(name);
    }
    expect(listed.sort()).toEqual(benches);
    const wrong = pages.flatMap((p) =>
      commandLines(p).flatMap(({ where, code }) =>
        [...code.matchAll(/npm run bench -- ([a-z]+)/gu)]
          .map((m) => m[1] as string)
          .filter((n) => !benches.includes(n))
          .map((n) => `${where}: ${n}`),
      ),
    );
    expect(wrong).toEqual([]);
  });

  it('environment switches named in the docs are read by the code', () => {
    const sources = [
      'vitest.config.ts',
      'package.json',
      '.ci/run',
      ...['src', 'test', 'bench', 'scripts', 'property-tests'].flatMap((dir) => filesUnder(dir)),
    ].map((f) => readFileSync(path.join(repo, f), 'utf8'));
    const wrong: string[] = [];
    let seen = 0;
    for (const p of pages) {
      for (const { where, code } of codeSpans(p)) {
        const name =
          /^((?:PETREL|SOLO5|BENCH|FUZZ|PROPERTY|ENGINE_PROPERTY|ALBATROSS|PG)_[A-Z0-9_]+|CI)(?:=.*)?$/u.exec(
            code,
          )?.[1];
        if (name === undefined) continue;
        seen++;
        const read = new RegExp(`\\b${name}\\b`, 'u');
        if (!sources.some((s) => read.test(s))) wrong.push(`${where}: ${name}`);
      }
    }
    expect(seen).toBeGreaterThan(0);
    expect(wrong).toEqual([]);
  });
});

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    for (const entry of readdirSync(path.join(repo, rel), { withFileTypes: true })) {
      const child = `${rel}/${entry.name}`;
      if (entry.isDirectory()) walk(child);
      else if (/\.(?:ts|mjs|js|sh|sql)$/u.test(entry.name)) out.push(child);
    }
  };
  walk(dir);
  return out;
}

describe('links', () => {
  it('every relative link resolves, to a heading too when it names one', () => {
    const wrong: string[] = [];
    let seen = 0;
    for (const p of pages) {
      for (const { where, target } of links(p)) {
        if (/^(?:https?|mailto):/iu.test(target)) continue;
        seen++;
        const [file = '', anchor] = target.split('#');
        const resolved =
          file === '' ? path.join(repo, p.file) : path.resolve(repo, path.dirname(p.file), file);
        const relative = path.relative(repo, resolved);
        if (relative.startsWith('..') || path.isAbsolute(relative) || path.isAbsolute(file)) continue; // next test
        if (!existsSync(resolved)) {
          wrong.push(`${where}: ${target} does not exist`);
          continue;
        }
        if (anchor === undefined || anchor === '') continue;
        if (!statSync(resolved).isFile() || !resolved.endsWith('.md')) {
          wrong.push(`${where}: ${target}: an anchor into something that is not a page`);
          continue;
        }
        const into = pages.find((q) => q.file === relative) ?? readPage(relative);
        if (!anchors(into).has(anchor))
          wrong.push(`${where}: ${target}: no heading #${anchor} in ${relative}`);
      }
    }
    expect(seen).toBeGreaterThan(0);
    expect(wrong).toEqual([]);
  });

  it('no link leaves the repository: no ../ beyond its root, no absolute path, no file: URL', () => {
    const wrong: string[] = [];
    for (const p of pages) {
      for (const { where, target } of links(p)) {
        if (/^(?:https?|mailto):/iu.test(target)) continue;
        const [file = ''] = target.split('#');
        const relative = path.relative(repo, path.resolve(repo, path.dirname(p.file), file));
        if (/^[a-z][a-z0-9+.-]*:/iu.test(target) || path.isAbsolute(file) || relative.startsWith('..'))
          wrong.push(`${where}: ${target}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('the README links the documentation, and its index links every page', () => {
    expect(links(page('README.md')).map((l) => l.target)).toContain('docs/README.md');
    const indexed = new Set(links(page('docs/README.md')).map((l) => l.target.split('#')[0]));
    const missing = docFiles
      .filter((f) => f.startsWith('docs/') && f !== 'docs/README.md')
      .map((f) => path.basename(f))
      .filter((f) => !indexed.has(f));
    expect(missing, 'pages docs/README.md does not link').toEqual([]);
  });

  it('no page sends its reader to the team reference files outside the repository', () => {
    const wrong = pages.flatMap((p) =>
      p.text
        .split('\n')
        .flatMap((text, i) => (/\.\.\/shared\b/u.test(text) ? [`${p.file}:${i + 1}: ${text.trim()}`] : [])),
    );
    expect(wrong).toEqual([]);
  });
});

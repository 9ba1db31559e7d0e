// The import graph of a TypeScript tree (every .ts below a directory) and its cycles, for the
// architecture tests: static, type-only, re-exporting and `import()` edges all count.

import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/**
 * @typedef {object} ImportGraph
 * @property {string[]} files every .ts file, relative to the root, sorted
 * @property {Map<string, string[]>} edges each file's imports of files of the tree (relative, sorted)
 * @property {{ from: string, specifier: string }[]} unresolved relative specifiers that name no file
 * @property {Cycle[]} cycles
 */

/**
 * A group of files each of which reaches every other through imports (a strongly connected
 * component), or one file that imports itself.
 * @typedef {object} Cycle
 * @property {string[]} files the group, sorted
 * @property {string[]} loop one closed walk through some of them, first file repeated at the end
 */

/**
 * Reads every .ts file below `root` and returns its graph of relative imports: `./x.js` names
 * `./x.ts` (as `nodenext` resolution has it), bare and `node:` specifiers are left out.
 * @param {string} root
 * @returns {ImportGraph}
 */
export function importGraph(root) {
  const files = listTs(root, '');
  const known = new Set(files);
  const edges = new Map();
  const unresolved = [];
  for (const file of files) {
    const targets = new Set();
    for (const specifier of specifiersOf(readFileSync(path.join(root, file), 'utf8'))) {
      if (!specifier.startsWith('./') && !specifier.startsWith('../')) continue;
      const target = resolve(root, file, specifier);
      if (target !== null && known.has(target)) targets.add(target);
      else unresolved.push({ from: file, specifier });
    }
    edges.set(file, [...targets].sort());
  }
  return { files, edges, unresolved, cycles: findCycles(files, edges) };
}

/** @param {string} root @param {string} dir @returns {string[]} */
function listTs(root, dir) {
  const out = [];
  for (const entry of readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const rel = dir === '' ? entry.name : `${dir}/${entry.name}`;
    if (entry.isDirectory()) out.push(...listTs(root, rel));
    else if (entry.name.endsWith('.ts')) out.push(rel);
  }
  return out.sort();
}

/** `./a.js` → `a.ts`, relative to the root with `/` separators; null when it leaves the root. */
function resolve(root, from, specifier) {
  const absolute = path.resolve(root, path.dirname(from), specifier);
  const candidates = [
    absolute.replace(/\.js$/u, '.ts'),
    absolute,
    `${absolute}.ts`,
    path.join(absolute, 'index.ts'),
  ];
  for (const candidate of candidates) {
    const rel = path.relative(root, candidate);
    if (rel.startsWith('..') || path.isAbsolute(rel)) return null;
    if (existsSync(candidate) && statSync(candidate).isFile()) return rel.split(path.sep).join('/');
  }
  return null;
}

/**
 * The module specifiers a file names: `import … from`, `import type … from`, `export … from`,
 * `import '…'` and `import('…')` (in code or in a type). They are looked for in a masked copy of
 * the source in which comments and the insides of strings, templates and regular expressions
 * are blanked, so that an import quoted in prose or in a string is not taken for one; the
 * specifier itself is then read from the source at the same place.
 * @param {string} source
 * @returns {string[]}
 */
export function specifiersOf(source) {
  const masked = mask(source);
  const found = [];
  const patterns = [
    /\b(?:import|export)\s+(?:type\s+)?[^'";]*?\bfrom\s*(['"])([^'"\n]*)\1/dgu,
    /\bimport\s*(['"])([^'"\n]*)\1/dgu,
    /\bimport\s*\(\s*(['"])([^'"\n]*)\1\s*[,)]/dgu,
  ];
  for (const pattern of patterns) {
    for (const m of masked.matchAll(pattern)) {
      const [start, end] = m.indices[2];
      found.push(source.slice(start, end));
    }
  }
  return found;
}

/**
 * The source, as long and with its line breaks, with every comment and the insides of every
 * string, template literal (outside its `${…}`) and regular expression literal made spaces.
 * @param {string} source
 */
function mask(source) {
  let out = '';
  let i = 0;
  /** The last character of code that is not white space: decides whether `/` starts a regex. */
  let last = '';
  /** Open braces in each template literal's `${…}` being read, innermost last. */
  const templates = [];
  const blank = (text) => text.replace(/[^\n]/gu, ' ');
  while (i < source.length) {
    const c = source[i];
    const next = source[i + 1];
    if (c === '/' && next === '/') {
      const end = source.indexOf('\n', i);
      const stop = end < 0 ? source.length : end;
      out += blank(source.slice(i, stop));
      i = stop;
    } else if (c === '/' && next === '*') {
      const end = source.indexOf('*/', i + 2);
      const stop = end < 0 ? source.length : end + 2;
      out += blank(source.slice(i, stop));
      i = stop;
    } else if (c === "'" || c === '"') {
      const stop = skipQuoted(source, i, c);
      out += c + blank(source.slice(i + 1, stop - 1)) + source.slice(stop - 1, stop);
      last = c;
      i = stop;
    } else if (c === '`' || (c === '}' && templates.at(-1) === 0)) {
      if (c === '}') templates.pop();
      const stop = skipTemplate(source, i + 1);
      const opens = source.slice(stop - 2, stop) === '${';
      const tail = opens ? 2 : source[stop - 1] === '`' ? 1 : 0;
      out += c + blank(source.slice(i + 1, stop - tail)) + source.slice(stop - tail, stop);
      if (opens) templates.push(0);
      last = '`';
      i = stop;
    } else if (c === '/' && (last === '' || /[(,=:[!&|?{};+\-*%<>~^]/u.test(last) || endsWithKeyword(out))) {
      const stop = skipRegex(source, i);
      out += `/${blank(source.slice(i + 1, stop))}`;
      last = '/';
      i = stop;
    } else {
      if (templates.length > 0 && c === '{') templates[templates.length - 1]++;
      if (templates.length > 0 && c === '}') templates[templates.length - 1]--;
      out += c;
      if (!/\s/u.test(c)) last = c;
      i++;
    }
  }
  return out;
}

function endsWithKeyword(code) {
  return /\b(?:return|typeof|case|do|else|in|of|void|yield|await|throw|delete|instanceof)\s*$/u.test(code);
}

function skipQuoted(source, start, quote) {
  let i = start + 1;
  while (i < source.length && source[i] !== quote && source[i] !== '\n') i += source[i] === '\\' ? 2 : 1;
  return i + 1;
}

/** From just inside a template literal (or after its `}`): past its closing backtick or its next `${`. */
function skipTemplate(source, start) {
  let i = start;
  while (i < source.length) {
    if (source[i] === '\\') i += 2;
    else if (source[i] === '`') return i + 1;
    else if (source[i] === '$' && source[i + 1] === '{') return i + 2;
    else i++;
  }
  return i;
}

function skipRegex(source, start) {
  let i = start + 1;
  let inClass = false;
  while (i < source.length && source[i] !== '\n') {
    const c = source[i];
    if (c === '\\') i += 2;
    else {
      if (c === '[') inClass = true;
      else if (c === ']') inClass = false;
      else if (c === '/' && !inClass) return i + 1;
      i++;
    }
  }
  return i;
}

/**
 * Tarjan's strongly connected components: each one with more than one file, or a file that
 * imports itself, is a cycle.
 * @param {string[]} files
 * @param {Map<string, string[]>} edges
 * @returns {Cycle[]}
 */
export function findCycles(files, edges) {
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const components = [];
  let counter = 0;
  const visit = (file) => {
    index.set(file, counter);
    low.set(file, counter);
    counter++;
    stack.push(file);
    onStack.add(file);
    for (const next of edges.get(file) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file), low.get(next)));
      } else if (onStack.has(next)) {
        low.set(file, Math.min(low.get(file), index.get(next)));
      }
    }
    if (low.get(file) === index.get(file)) {
      const component = [];
      let member;
      do {
        member = stack.pop();
        onStack.delete(member);
        component.push(member);
      } while (member !== file);
      components.push(component.sort());
    }
  };
  for (const file of files) if (!index.has(file)) visit(file);
  return components
    .filter((c) => c.length > 1 || (edges.get(c[0]) ?? []).includes(c[0]))
    .map((c) => ({ files: c, loop: loopThrough(c, edges) }))
    .sort((a, b) => (a.files[0] < b.files[0] ? -1 : a.files[0] > b.files[0] ? 1 : 0));
}

/** A closed walk from the component's first file back to it, through each file at most once. */
function loopThrough(component, edges) {
  const members = new Set(component);
  const start = component[0];
  const pathTo = [start];
  const seen = new Set([start]);
  const walk = (file) => {
    for (const next of edges.get(file) ?? []) {
      if (next === start) return true;
      if (!members.has(next) || seen.has(next)) continue;
      seen.add(next);
      pathTo.push(next);
      if (walk(next)) return true;
      pathTo.pop();
    }
    return false;
  };
  walk(start);
  return [...pathTo, start];
}

// Types of scripts/import-graph.mjs, for the TypeScript tests that use it
// (test/architecture/): the graph of a tree's relative imports and its cycles.

/** A group of files that reach one another through imports, or one file that imports itself. */
export interface Cycle {
  /** The group, sorted. */
  readonly files: readonly string[];
  /** One closed walk through some of them, the first file repeated at the end. */
  readonly loop: readonly string[];
}

export interface ImportGraph {
  /** Every .ts file, relative to the root, sorted. */
  readonly files: readonly string[];
  /** Each file's imports of files of the tree (relative to the root, sorted). */
  readonly edges: ReadonlyMap<string, readonly string[]>;
  /** Relative specifiers that name no file of the tree. */
  readonly unresolved: readonly { readonly from: string; readonly specifier: string }[];
  readonly cycles: readonly Cycle[];
}

export function importGraph(root: string): ImportGraph;
export function specifiersOf(source: string): string[];
export function findCycles(files: readonly string[], edges: ReadonlyMap<string, readonly string[]>): Cycle[];

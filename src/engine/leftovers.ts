// What start-up found left over by a crash or an earlier petreld, and what it did with each:
// a kind to count it by and its own words, so the log says how many of each once, details aside.

export type LeftoverKind =
  | 'temporary file'
  | 'tender'
  | 'tap'
  | 'fifo'
  | 'image link'
  | 'image'
  | 'block'
  | 'jail claim'
  | 'jail cgroups'
  | 'jail-owned block';

export interface Leftover {
  readonly kind: LeftoverKind;
  readonly what: string;
  /** Could not be removed or handed back: worth a warning of its own. */
  readonly failed?: true;
}

export const leftover = (kind: LeftoverKind, what: string): Leftover => ({ kind, what });
export const leftoverFailed = (kind: LeftoverKind, what: string): Leftover => ({ kind, what, failed: true });

/** How many leftovers of each kind, in the order kinds first appear. */
export function countLeftovers(leftovers: readonly Leftover[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const { kind } of leftovers) counts[kind] = (counts[kind] ?? 0) + 1;
  return counts;
}

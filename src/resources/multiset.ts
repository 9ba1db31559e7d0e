// Immutable counted multisets: the tree keeps, per subtree, how many unikernels use each CPU id
// and bridge (and how many policies carry each limit), so unions and maxima cost O(distinct).

export type Multiset<K> = ReadonlyMap<K, number>;

export const EMPTY: Multiset<never> = new Map<never, never>();

/** Adds (`sign` 1) or removes (`sign` -1) one occurrence of each item; entries at 0 vanish. */
export function shift<K>(set: Multiset<K>, items: readonly K[], sign: 1 | -1): Multiset<K> {
  if (items.length === 0) return set;
  const next = new Map(set);
  for (const item of items) {
    const count = (next.get(item) ?? 0) + sign;
    if (count === 0) next.delete(item);
    else next.set(item, count);
  }
  return next;
}

/** The largest key, or undefined for the empty multiset. */
export function maxKey<K extends number | bigint>(set: Multiset<K>): K | undefined {
  let max: K | undefined;
  for (const key of set.keys()) if (max === undefined || key > max) max = key;
  return max;
}

/** Keys of `set` that `allowed` lacks, ascending. */
export function keysOutside<K extends number | string>(set: Multiset<K>, allowed: readonly K[]): K[] {
  return [...set.keys()].filter((key) => !allowed.includes(key)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

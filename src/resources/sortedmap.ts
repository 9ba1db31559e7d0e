// A persistent sorted map from strings: a treap whose priorities are a hash of the key, so its
// shape depends only on the set of keys (two maps with equal contents are structurally equal).
// set/remove copy one root-to-leaf path, O(log n) expected; iteration is in key order.

interface TreapNode<V> {
  readonly key: string;
  readonly value: V;
  readonly priority: number;
  readonly left: TreapNode<V> | null;
  readonly right: TreapNode<V> | null;
}

export interface SortedMap<V> {
  readonly size: number;
  readonly root: TreapNode<V> | null;
}

export const EMPTY: SortedMap<never> = Object.freeze({ size: 0, root: null });

/** FNV-1a: cheap, deterministic and well spread for short labels. */
function hash(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** Heap order with ties broken by key, so the shape is canonical even when hashes collide. */
function above<V>(a: TreapNode<V>, b: TreapNode<V>): boolean {
  return a.priority > b.priority || (a.priority === b.priority && a.key < b.key);
}

const node = <V>(
  key: string,
  value: V,
  priority: number,
  left: TreapNode<V> | null,
  right: TreapNode<V> | null,
): TreapNode<V> => ({ key, value, priority, left, right });

export function get<V>(map: SortedMap<V>, key: string): V | undefined {
  let at = map.root;
  while (at !== null) {
    if (key === at.key) return at.value;
    at = key < at.key ? at.left : at.right;
  }
  return undefined;
}

export function has<V>(map: SortedMap<V>, key: string): boolean {
  return get(map, key) !== undefined;
}

/** Splits into the keys below `key` and the keys above it (`key` itself must be absent). */
function split<V>(at: TreapNode<V> | null, key: string): [TreapNode<V> | null, TreapNode<V> | null] {
  if (at === null) return [null, null];
  if (key < at.key) {
    const [low, high] = split(at.left, key);
    return [low, node(at.key, at.value, at.priority, high, at.right)];
  }
  const [low, high] = split(at.right, key);
  return [node(at.key, at.value, at.priority, at.left, low), high];
}

/** Joins two treaps where every key of `low` is below every key of `high`. */
function merge<V>(low: TreapNode<V> | null, high: TreapNode<V> | null): TreapNode<V> | null {
  if (low === null) return high;
  if (high === null) return low;
  if (above(low, high)) return node(low.key, low.value, low.priority, low.left, merge(low.right, high));
  return node(high.key, high.value, high.priority, merge(low, high.left), high.right);
}

function insert<V>(at: TreapNode<V> | null, fresh: TreapNode<V>): TreapNode<V> {
  if (at === null) return fresh;
  if (above(fresh, at)) {
    const [left, right] = split(at, fresh.key);
    return node(fresh.key, fresh.value, fresh.priority, left, right);
  }
  if (fresh.key < at.key) return node(at.key, at.value, at.priority, insert(at.left, fresh), at.right);
  return node(at.key, at.value, at.priority, at.left, insert(at.right, fresh));
}

function replace<V>(at: TreapNode<V>, key: string, value: V): TreapNode<V> {
  if (key === at.key) return node(key, value, at.priority, at.left, at.right);
  if (key < at.key)
    return node(at.key, at.value, at.priority, replace(at.left as TreapNode<V>, key, value), at.right);
  return node(at.key, at.value, at.priority, at.left, replace(at.right as TreapNode<V>, key, value));
}

function removeFrom<V>(at: TreapNode<V> | null, key: string): TreapNode<V> | null {
  if (at === null) return null;
  if (key === at.key) return merge(at.left, at.right);
  if (key < at.key) return node(at.key, at.value, at.priority, removeFrom(at.left, key), at.right);
  return node(at.key, at.value, at.priority, at.left, removeFrom(at.right, key));
}

export function set<V>(map: SortedMap<V>, key: string, value: V): SortedMap<V> {
  if (map.root !== null && has(map, key)) return { size: map.size, root: replace(map.root, key, value) };
  return { size: map.size + 1, root: insert(map.root, node(key, value, hash(key), null, null)) };
}

export function remove<V>(map: SortedMap<V>, key: string): SortedMap<V> {
  if (!has(map, key)) return map;
  return map.size === 1 ? EMPTY : { size: map.size - 1, root: removeFrom(map.root, key) };
}

/** Entries in descending key order (Albatross lists siblings that way). */
export function* descending<V>(map: SortedMap<V>): Generator<[string, V]> {
  const stack: TreapNode<V>[] = [];
  let at = map.root;
  while (at !== null || stack.length > 0) {
    while (at !== null) {
      stack.push(at);
      at = at.right;
    }
    const top = stack.pop() as TreapNode<V>;
    yield [top.key, top.value];
    at = top.left;
  }
}

export function* values<V>(map: SortedMap<V>): Generator<V> {
  for (const [, value] of descending(map)) yield value;
}

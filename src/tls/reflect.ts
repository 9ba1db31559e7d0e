// The Reflect metadata API that @peculiar/x509's dependency injector (tsyringe) insists on at load
// time. Installed only when absent; imported by x509.ts before the library so load order is fixed.

type Key = unknown;
type Store = Map<Key, unknown>;

/** Per-target, per-property metadata. Undefined property keys are stored under this sentinel. */
const CLASS = Symbol('class');
const stores = new WeakMap<object, Map<PropertyKey, Store>>();

function store(target: object, property: PropertyKey | undefined, create: boolean): Store | undefined {
  let byProperty = stores.get(target);
  if (byProperty === undefined) {
    if (!create) return undefined;
    byProperty = new Map();
    stores.set(target, byProperty);
  }
  const key = property ?? CLASS;
  let found = byProperty.get(key);
  if (found === undefined && create) {
    found = new Map();
    byProperty.set(key, found);
  }
  return found;
}

function getOwnMetadata(key: Key, target: object, property?: PropertyKey): unknown {
  return store(target, property, false)?.get(key);
}

function getMetadata(key: Key, target: object, property?: PropertyKey): unknown {
  for (let at: object | null = target; at !== null; at = Object.getPrototypeOf(at)) {
    const own = store(at, property, false);
    if (own?.has(key)) return own.get(key);
  }
  return undefined;
}

function defineMetadata(key: Key, value: unknown, target: object, property?: PropertyKey): void {
  store(target, property, true)?.set(key, value);
}

function metadata(key: Key, value: unknown) {
  return (target: object, property?: PropertyKey): void => defineMetadata(key, value, target, property);
}

const reflect = Reflect as unknown as Record<string, unknown>;
if (typeof reflect.getMetadata !== 'function') {
  Object.assign(reflect, { getOwnMetadata, getMetadata, defineMetadata, metadata });
}

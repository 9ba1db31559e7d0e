// Engines for the engine tests' hooks: one fresh engine per test, or the engines a test makes,
// each closed after its test (its unikernels, namespace and directory with it).

import { afterEach, beforeEach } from 'vitest';
import { makeEngine, type TestEngine } from './harness.js';

/** A fresh engine (makeEngine) for each test of the calling file, closed after it; `use` is given each. */
export function engineEachTest(use: (engine: TestEngine) => void): void {
  let current: TestEngine | undefined;
  beforeEach(async () => {
    current = await makeEngine();
    use(current);
  });
  afterEach(async () => {
    await current?.close();
    current = undefined;
  });
}

/**
 * A list for the engines a test makes, closed after it, the newest first (the newest is the one
 * attached to the holder).
 */
export function enginesClosedAfterEach(): TestEngine[] {
  const engines: TestEngine[] = [];
  afterEach(async () => {
    for (const engine of engines.splice(0).reverse()) await engine.close();
  });
  return engines;
}

/**
 * enginesClosedAfterEach for tests that open their engines one by one: the function returned
 * keeps the engine it is given to be closed after its test (the newest first) and returns it.
 */
export function closingAfterEach(): (engine: TestEngine) => TestEngine {
  const engines = enginesClosedAfterEach();
  return (engine) => {
    engines.push(engine);
    return engine;
  };
}

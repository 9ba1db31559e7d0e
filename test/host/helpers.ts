// Shared by the host tests: fresh temporary directories and network namespaces, removed
// afterwards, and names.

import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import type { PetrelError, Result } from '../../src/resources/errors.js';
import { type Name, parseName } from '../../src/resources/name.js';

export function name(text: string): Name {
  const parsed = parseName(text);
  if (!parsed.ok) throw new Error(parsed.error.message);
  return parsed.value;
}

export function value<T>(result: Result<T, PetrelError>): T {
  if (!result.ok) throw new Error(`${result.error.code}: ${result.error.message}`);
  return result.value;
}

export function failure<T>(result: Result<T, PetrelError>): PetrelError {
  if (result.ok) throw new Error('expected a failure');
  return result.error;
}

/** A temporary directory for one test; call the returned cleanup in afterEach. */
export async function tempDir(): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'petrel-test-'));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * A fresh temporary directory for each test of the calling file, removed after it; `use` is
 * given each one (assign it to the file's `dir`).
 */
export function tempDirEachTest(use: (dir: string) => void): void {
  let cleanup: (() => Promise<void>) | undefined;
  beforeEach(async () => {
    const made = await tempDir();
    cleanup = made.cleanup;
    use(made.dir);
  });
  afterEach(async () => {
    await cleanup?.();
    cleanup = undefined;
  });
}

/**
 * A network namespace `<prefix>-<random>` for each test of the calling describe, made with what
 * `links` adds (each `ip -n <it> ARGS...`, its words split at spaces) and always deleted after
 * the test, once `tearDown` ran. `use` is given each name; the returned function runs `ip -n <current> ARGS...`.
 */
export function netnsEachTest(
  prefix: string,
  links: readonly string[],
  use: (netns: string) => void,
  tearDown: () => void = () => {},
): (...args: string[]) => string {
  let netns = '';
  const ip = (...args: string[]): string => execFileSync('ip', ['-n', netns, ...args], { encoding: 'utf8' });
  beforeEach(() => {
    netns = `${prefix}-${randomBytes(4).toString('hex')}`;
    execFileSync('ip', ['netns', 'add', netns]);
    use(netns);
    for (const args of links) ip(...args.split(' '));
  });
  afterEach(() => {
    try {
      tearDown();
    } finally {
      execFileSync('ip', ['netns', 'del', netns]);
    }
  });
  return ip;
}

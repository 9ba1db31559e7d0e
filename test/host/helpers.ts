// Shared by the host tests: fresh temporary directories, removed afterwards, and names.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
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

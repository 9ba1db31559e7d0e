// The repository root, found from this file whether it runs from test/ or compiled into dist/
// (benchmarks import test helpers from dist/test/): the nearest directory with a package.json.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

function findRepo(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('no package.json above test/repo.ts');
    dir = parent;
  }
  return dir;
}

export const repo = findRepo();

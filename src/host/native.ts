// Where the native parts built by `make -C native` are: the tenders, the canaries, the spawner.

import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** `<package root>/native/build/<file>`, the package root found by walking up to package.json. */
export function bundledNativePath(file: string): string | null {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(path.join(dir, 'package.json'))) return path.join(dir, 'native', 'build', file);
    const parent = path.dirname(dir);
    if (parent === dir) return null;
    dir = parent;
  }
}

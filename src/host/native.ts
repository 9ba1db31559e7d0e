// Where the native parts built by `make -C native` are: the tenders, the canaries, the spawner.

import { accessSync, constants, existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';

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

/** A bundled program petreld runs (`petrel-spawner`, `petrel-holder`), if built and executable. */
export function bundledProgram<C extends `E_${string}`>(
  file: string,
  code: C,
): Result<string, PetrelError<C>> {
  const program = bundledNativePath(file);
  if (program === null) return err(code, `${file}: no package root found`);
  try {
    accessSync(program, constants.X_OK);
  } catch {
    return err(code, `${file} is not built at ${program} (run \`make -C native\`)`);
  }
  return ok(program);
}

// Write faults for tests, so that a full disk or quota can be played at any write: every place
// Petrel writes to the state or run directory asks here first, and a test (or
// test/daemon/launch.mjs, from PETREL_TEST_WRITE_FAULT) may answer with an error carrying a real
// errno (ENOSPC, EDQUOT), thrown where the system call would be.
// Nothing is injected unless a test installs an injector.

/** Where a write happens. `replace:*` and `append:*` are the file thread's steps. */
export type WriteSite =
  | 'stage'
  | 'stage-sync'
  | 'store'
  | 'replace:write'
  | 'replace:fsync'
  | 'replace:rename'
  | 'append:write'
  | 'append:fdatasync'
  | 'block-create'
  | 'block-extend'
  | 'block-data'
  | 'reserve'
  | 'run-file'
  | 'fifo';

export type Injector = (site: WriteSite, file: string) => string | null;

let injector: Injector | null = null;

/** Installs (or with null removes) the injector; it returns an errno code to fail with, or null. */
export function injectWriteFaults(next: Injector | null): void {
  injector = next;
}

/** The error a write at `site` of `file` must fail with now, or null (always, outside tests). */
export function writeFault(site: WriteSite, file: string): NodeJS.ErrnoException | null {
  const code = injector?.(site, file) ?? null;
  if (code === null) return null;
  const messages: Record<string, string> = {
    ENOSPC: 'no space left on device',
    EDQUOT: 'disk quota exceeded',
  };
  const error = new Error(
    `${code}: ${messages[code] ?? 'injected'}, write '${file}'`,
  ) as NodeJS.ErrnoException;
  error.code = code;
  error.syscall = 'write';
  error.path = file;
  return error;
}

/** The path contains `part`; a part ending in `$` must end the path. */
const matches = (file: string, part: string): boolean =>
  part.endsWith('$') ? file.endsWith(part.slice(0, -1)) : file.includes(part);

/**
 * `PETREL_TEST_WRITE_FAULT=<site>[@<path part>[$]][=<errno>][#<n>]`: the n-th write (default
 * the first) at that site, of a file whose path contains the part (ends with it, with `$`),
 * fails with the errno (default ENOSPC); every later one succeeds. Used by
 * test/daemon/launch.mjs only.
 */
export function faultFromSpec(spec: string): Injector {
  const match = /^([a-z:-]+)(?:@([^=#]+))?(?:=([A-Z]+))?(?:#(\d+))?$/u.exec(spec);
  if (match === null) throw new Error(`bad PETREL_TEST_WRITE_FAULT ${JSON.stringify(spec)}`);
  const [, site, part, code = 'ENOSPC', nth = '1'] = match;
  let seen = 0;
  return (at, file) => {
    if (at !== site || (part !== undefined && !matches(file, part))) return null;
    seen += 1;
    return seen === Number(nth) ? code : null;
  };
}

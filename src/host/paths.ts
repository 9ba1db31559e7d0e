// Where Petrel's host artefacts live, derived from names so that no name can escape its
// directory: every file name is checked to be one plain path component before it is used.

import path from 'node:path';
import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import { type Name, printName } from '../resources/name.js';

export type PathError = PetrelError<'E_HOST_PATH'>;

/** Linux NAME_MAX: the longest file name component, in bytes. */
export const NAME_MAX = 255;

function reject(dir: string, fileName: string, why: string): Result<never, PathError> {
  return err('E_HOST_PATH', `file name ${JSON.stringify(fileName)} rejected: ${why}`, { dir, fileName });
}

/**
 * `dir/fileName`, where `fileName` must be exactly one path component: not empty, `.` or `..`,
 * without `/` or NUL, at most NAME_MAX bytes. The joined path is checked again to lie directly
 * in `dir`, so a future change to the rules above cannot open an escape.
 */
export function containedPath(dir: string, fileName: string): Result<string, PathError> {
  if (fileName === '') return reject(dir, fileName, 'empty');
  if (fileName === '.' || fileName === '..') return reject(dir, fileName, 'names a directory');
  if (fileName.includes('\0')) return reject(dir, fileName, 'contains NUL');
  if (fileName.includes('/')) return reject(dir, fileName, 'contains "/"');
  if (path.isAbsolute(fileName)) return reject(dir, fileName, 'absolute');
  const bytes = Buffer.byteLength(fileName, 'utf8');
  if (bytes > NAME_MAX) return reject(dir, fileName, `longer than ${NAME_MAX} bytes (${bytes})`);
  if (dir === '' || dir.includes('\0')) return reject(dir, fileName, 'invalid directory');
  const base = path.resolve(dir);
  const joined = path.join(base, fileName);
  if (path.dirname(joined) !== base || path.basename(joined) !== fileName) {
    return reject(dir, fileName, `escapes ${base}`);
  }
  return ok(joined);
}

function unikernelFile(dir: string, name: Name, suffix: string): Result<string, PathError> {
  if (name.label === null) {
    return err('E_HOST_PATH', `path ${printName(name)} used instead of a name`, { dir });
  }
  return containedPath(dir, `${printName(name)}${suffix}`);
}

/** `<run-dir>/fifo`: the console FIFOs. */
export function fifoDir(runDir: string): string {
  return path.join(runDir, 'fifo');
}

/** `<run-dir>/tenders`: the tender PID records. */
export function tendersDir(runDir: string): string {
  return path.join(runDir, 'tenders');
}

/** `<run-dir>/holder`: the socket, lock and log of the tenders' holder (petrel-holder). */
export function holderDir(runDir: string): string {
  return path.join(runDir, 'holder');
}

/** `<state-dir>/block`: the block device files. */
export function blockDir(stateDir: string): string {
  return path.join(stateDir, 'block');
}

/** `<run-dir>/<name>.img`: the link to the stored image a running unikernel's tender runs. */
export function imagePath(runDir: string, name: Name): Result<string, PathError> {
  return unikernelFile(runDir, name, '.img');
}

/** `<run-dir>/fifo/<name>`: the unikernel's console FIFO. */
export function fifoPath(runDir: string, name: Name): Result<string, PathError> {
  return unikernelFile(fifoDir(runDir), name, '');
}

/** `<run-dir>/tenders/<name>`: the PID record of the unikernel's tender. */
export function pidRecordPath(runDir: string, name: Name): Result<string, PathError> {
  return unikernelFile(tendersDir(runDir), name, '');
}

/** `<state-dir>/block/<blockname>`: a block device file (a name with a label, like `user:disk`). */
export function blockPath(stateDir: string, blockName: Name): Result<string, PathError> {
  return unikernelFile(blockDir(stateDir), blockName, '');
}

import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { blockPath, containedPath, fifoPath, imagePath, pidRecordPath } from '../../src/host/paths.js';
import { failure, name, value } from './helpers.js';

const dir = '/run/petrel';

describe('containedPath', () => {
  it.each([
    ['..', 'names a directory'],
    ['.', 'names a directory'],
    ['', 'empty'],
    ['../etc/passwd', 'contains "/"'],
    ['a/b', 'contains "/"'],
    ['/etc/passwd', 'contains "/"'],
    ['x\0y', 'contains NUL'],
    ['x'.repeat(256), 'longer than 255 bytes (256)'],
    ['é'.repeat(128), 'longer than 255 bytes (256)'],
  ])('rejects %j', (fileName, why) => {
    const error = failure(containedPath(dir, fileName));
    expect(error.code).toBe('E_HOST_PATH');
    expect(error.message).toContain(why);
  });

  it('joins a plain component, up to 255 bytes, directly inside the directory', () => {
    expect(value(containedPath(dir, 'user:web.img'))).toBe('/run/petrel/user:web.img');
    expect(value(containedPath('/run/petrel/', '..x'))).toBe('/run/petrel/..x');
    expect(path.dirname(value(containedPath('relative/dir', 'x'.repeat(255))))).toBe(
      path.resolve('relative/dir'),
    );
  });
});

describe('artefact paths derived from names', () => {
  it('places each artefact as Albatross does (wire §3.5, semantics §1.2)', () => {
    expect(value(imagePath(dir, name(':hello')))).toBe('/run/petrel/:hello.img');
    expect(value(fifoPath(dir, name('user:web')))).toBe('/run/petrel/fifo/user:web');
    expect(value(pidRecordPath(dir, name('a:b:c')))).toBe('/run/petrel/tenders/a:b:c');
    expect(value(blockPath('/var/lib/petrel', name('user:disk')))).toBe('/var/lib/petrel/block/user:disk');
  });

  it('keeps names made of dots inside the directory', () => {
    // `..` is a valid label; the name string always contains `:`, so it stays one component.
    expect(value(imagePath(dir, name('..')))).toBe('/run/petrel/:...img');
    expect(value(fifoPath(dir, name('..:..')))).toBe('/run/petrel/fifo/..:..');
  });

  it('refuses a path-only name and a name too long for one file name', () => {
    expect(failure(imagePath(dir, name('user:'))).message).toBe('path user: used instead of a name');
    const deep = name(Array.from({ length: 5 }, () => 'l'.repeat(63)).join(':'));
    expect(failure(fifoPath(dir, deep)).code).toBe('E_HOST_PATH');
  });
});

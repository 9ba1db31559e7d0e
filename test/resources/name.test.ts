import { describe, expect, it } from 'vitest';
import {
  childName,
  parseLabel,
  parseName,
  parsePath,
  pathName,
  printName,
  printPath,
  relativeTo,
  sameName,
} from '../../src/resources/name.js';
import { name, path } from './helpers.js';

describe('labels', () => {
  it('accept 1 to 63 characters of [a-zA-Z0-9.-] and lower-case them', () => {
    expect(parseLabel('Web')).toEqual({ ok: true, value: 'web' });
    expect(parseLabel('my.nice.unikernel').ok).toBe(true);
    expect(parseLabel('a'.repeat(63)).ok).toBe(true);
    expect(parseLabel('x-1').ok).toBe(true);
  });

  it.each(['', '-lead', 'a'.repeat(64), 'a/b', 'a:b', 'ü', 'a b', '..\u0000'])(
    'refuse %j naming it',
    (bad) => {
      const result = parseLabel(bad);
      expect(result.ok).toBe(false);
      if (!result.ok) {
        expect(result.error.code).toBe('E_NAME_INVALID');
        expect(result.error.message).toContain(JSON.stringify(bad));
        expect(result.error.message).toContain('only [a-zA-Z0-9-.] allowed, 1 to 63 chars');
      }
    },
  );
});

describe('names', () => {
  it('parse the forms of albatross-wire.md §3.3', () => {
    expect(name(':')).toEqual({ path: [], label: null });
    expect(name('user:')).toEqual({ path: ['user'], label: null });
    expect(name('a:b:')).toEqual({ path: ['a', 'b'], label: null });
    expect(name(':hello')).toEqual({ path: [], label: 'hello' });
    expect(name('hello')).toEqual({ path: [], label: 'hello' });
    expect(name('user:web')).toEqual({ path: ['user'], label: 'web' });
    expect(name('A:B:X')).toEqual({ path: ['a', 'b'], label: 'x' });
  });

  it('print canonically', () => {
    expect(printName(name(':'))).toBe(':');
    expect(printName(name('user:'))).toBe('user:');
    expect(printName(name('hello'))).toBe(':hello');
    expect(printName(name('User:Web'))).toBe('user:web');
    expect(printPath(path('a:b'))).toBe('a:b');
    expect(printPath(path(''))).toBe('');
    expect(printName(pathName(path('a:b')))).toBe('a:b:');
    expect(printName(childName(path('a'), name('x').label as never))).toBe('a:x');
  });

  it.each([
    ['', 'empty name'],
    ['::foo', 'empty label at position 1'],
    ['a::b', 'empty label at position 2'],
    ['a:-b', 'label "-b"'],
    ['a:b/c', 'label "b/c"'],
    ['../etc', 'label "../etc"'],
  ])('refuse %j with E_NAME_INVALID naming %s', (text, part) => {
    const result = parseName(text);
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.error.code).toBe('E_NAME_INVALID');
      expect(result.error.message).toContain(part);
    }
  });

  it('paths drop exactly one leading empty element', () => {
    expect(parsePath(':a:b')).toEqual(parsePath('a:b'));
    expect(parsePath('::a').ok).toBe(false);
    expect(parsePath('')).toEqual({ ok: true, value: [] });
  });

  it('compare equal after lower-casing', () => {
    expect(sameName(name('Foo:Bar'), name(':foo:bar'))).toBe(true);
    expect(sameName(name('foo:'), name(':foo'))).toBe(false);
  });

  it('are relative to a queried path as listings carry them', () => {
    expect(printName(relativeTo(path('user'), name('user:hello')) as never)).toBe(':hello');
    expect(printName(relativeTo(path('user'), name('user:')) as never)).toBe(':');
    expect(printName(relativeTo(path('user'), name('user:x:web')) as never)).toBe('x:web');
    expect(printName(relativeTo(path(''), name('user:web')) as never)).toBe('user:web');
    expect(relativeTo(path('user'), name('other:web'))).toBeNull();
  });
});

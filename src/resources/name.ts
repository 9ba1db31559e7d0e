// Labels, paths and names exactly as Albatross defines them (albatross-wire.md §3).
// A Name is built only by the parsers here, so holding one proves it is valid and canonical.

import { err, ok, type PetrelError, type Result } from './errors.js';

declare const labelBrand: unique symbol;
/** 1–63 characters of `[a-z0-9.-]`, not starting with `-`; lower-cased when parsed. */
export type Label = string & { readonly [labelBrand]: true };

/** A list of labels; the root path is the empty list. */
export type Path = readonly Label[];

/** A path plus an optional label: `user:` is a path, `user:web` a unikernel `web` under `user`. */
export interface Name {
  readonly path: Path;
  readonly label: Label | null;
}

export type NameError = PetrelError<'E_NAME_INVALID'>;

const LABEL_RULE = 'only [a-zA-Z0-9-.] allowed, 1 to 63 chars';
const LABEL_PATTERN = /^[a-zA-Z0-9.][a-zA-Z0-9.-]{0,62}$/;

export const ROOT: Path = Object.freeze([]) as Path;

export function parseLabel(text: string): Result<Label, NameError> {
  if (!LABEL_PATTERN.test(text)) {
    return err('E_NAME_INVALID', `invalid label ${JSON.stringify(text)} (${LABEL_RULE})`, { part: text });
  }
  return ok(text.toLowerCase() as Label);
}

function parseLabels(elements: readonly string[], whole: string, kind: string): Result<Label[], NameError> {
  const labels: Label[] = [];
  for (const [index, element] of elements.entries()) {
    const label = parseLabel(element);
    if (!label.ok) {
      const where =
        element === '' ? `empty label at position ${index + 1}` : `label ${JSON.stringify(element)}`;
      return err('E_NAME_INVALID', `invalid ${kind} ${JSON.stringify(whole)}: ${where} (${LABEL_RULE})`, {
        input: whole,
        part: element,
        position: index + 1,
      });
    }
    labels.push(label.value);
  }
  return ok(labels);
}

/** Split on `:` and drop ONE leading empty element, so `:a:b` and `a:b` are the same path. */
function splitPath(text: string): string[] {
  const elements = text.split(':');
  if (elements[0] === '') elements.shift();
  return elements;
}

/** Parses a path string (`a:b`, `:a:b`; the empty string is the root). */
export function parsePath(text: string): Result<Path, NameError> {
  const labels = parseLabels(splitPath(text), text, 'path');
  return labels.ok ? ok(Object.freeze(labels.value)) : labels;
}

/**
 * Parses a name string: `:` is the root, `user:` the path user, `:hello` ≡ `hello` the unikernel
 * hello at the root, `a:b:x` the unikernel x under a:b.
 */
export function parseName(text: string): Result<Name, NameError> {
  if (text === '') return err('E_NAME_INVALID', 'invalid name "": empty name', { input: text });
  if (text.endsWith(':')) {
    const labels = parseLabels(splitPath(text.slice(0, -1)), text, 'name');
    return labels.ok ? ok(makeName(labels.value, null)) : labels;
  }
  const labels = parseLabels(splitPath(text), text, 'name');
  if (!labels.ok) return labels;
  const label = labels.value.pop() as Label;
  return ok(makeName(labels.value, label));
}

function makeName(path: readonly Label[], label: Label | null): Name {
  return Object.freeze({ path: Object.freeze([...path]), label });
}

/** The name of a unikernel (or block device) `label` under `path`. */
export function childName(path: Path, label: Label): Name {
  return makeName(path, label);
}

/** The name that stands for a path itself (`user:`, root `:`). */
export function pathName(path: Path): Name {
  return makeName(path, null);
}

/** The path string: labels joined with `:`, the root is the empty string. */
export function printPath(path: Path): string {
  return path.join(':');
}

/** The canonical name string: `printPath(path) + ':' + (label or '')`. */
export function printName(name: Name): string {
  return `${printPath(name.path)}:${name.label ?? ''}`;
}

/** The path a name denotes when used as a path: its path plus its label, if any. */
export function nameAsPath(name: Name): Path {
  return name.label === null ? name.path : [...name.path, name.label];
}

export function samePath(a: Path, b: Path): boolean {
  return a.length === b.length && a.every((label, i) => label === b[i]);
}

export function sameName(a: Name, b: Name): boolean {
  return a.label === b.label && samePath(a.path, b.path);
}

/** True when `prefix` is `path` or one of its ancestors. */
export function isPrefix(prefix: Path, path: Path): boolean {
  return prefix.length <= path.length && prefix.every((label, i) => label === path[i]);
}

/**
 * The name relative to `base` as listing replies carry it: querying `user:` gives `:hello` for
 * `user:hello` and `:` for `user:` itself. Returns null when `name` is not at or below `base`.
 */
export function relativeTo(base: Path, name: Name): Name | null {
  if (!isPrefix(base, name.path)) return null;
  return makeName(name.path.slice(base.length), name.label);
}

/**
 * Albatross' listing order over label sequences (albatross-semantics.md §3.3): a node before its
 * descendants, siblings in descending bytewise label order.
 */
export function listingOrder(a: readonly string[], b: readonly string[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    if (a[i] !== b[i]) return (a[i] as string) < (b[i] as string) ? 1 : -1;
  }
  return a.length - b.length;
}

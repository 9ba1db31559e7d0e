// The identifiers and integer ranges of the Albatross DER subset (albatross-wire.md §2.1, §2.4).

export const TAG = {
  BOOLEAN: 0x01,
  INTEGER: 0x02,
  OCTET_STRING: 0x04,
  NULL: 0x05,
  OID: 0x06,
  UTF8: 0x0c,
  UTC_TIME: 0x17,
  GENERALIZED_TIME: 0x18,
  SEQUENCE: 0x30,
  SET: 0x31,
} as const;

/** The identifier of the constructed context-specific tag `[n]`. */
export const ctx = (n: number): number => 0xa0 + n;

/** OCaml's native integers: every Albatross INTEGER lies in −2^62 … 2^62−1. */
export const INT63_MIN = -(1n << 62n);
export const INT63_MAX = (1n << 62n) - 1n;
export const INT64_MIN = -(1n << 63n);
export const INT64_MAX = (1n << 63n) - 1n;

const NAMES: Record<number, string> = {
  1: 'BOOLEAN',
  2: 'INTEGER',
  4: 'OCTET STRING',
  5: 'NULL',
  6: 'OBJECT IDENTIFIER',
  12: 'UTF8String',
  23: 'UTCTime',
  24: 'GeneralizedTime',
  48: 'SEQUENCE',
  49: 'SET',
};

export function describeTag(tag: number): string {
  if (tag < 0) return 'the end of the value';
  const known = NAMES[tag];
  if (known !== undefined) return known;
  const hex = tag.toString(16).padStart(2, '0');
  if ((tag & 0xe0) === 0xa0) return `[${tag & 0x1f}] (${hex})`;
  return `identifier ${hex}`;
}

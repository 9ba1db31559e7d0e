// `petrel ca`'s flags and what its actions share in reading them: numbers, key types, lists,
// and the usage error that prints the help.

import type { parseArgs } from 'node:util';
import { type KeyType, parseKeyType } from '../../../tls/keys.js';

export const OPTIONS = {
  dir: { type: 'string', default: '.' },
  name: { type: 'string' },
  'server-name': { type: 'string', default: 'server' },
  'key-type': { type: 'string' },
  days: { type: 'string' },
  'server-days': { type: 'string' },
  vms: { type: 'string' },
  mem: { type: 'string', default: '512' },
  cpus: { type: 'string', default: '0' },
  block: { type: 'string' },
  bridge: { type: 'string', multiple: true },
  'issuer-cert': { type: 'string' },
  'issuer-key': { type: 'string' },
  out: { type: 'string', short: 'o' },
  cert: { type: 'string' },
  key: { type: 'string' },
  expires: { type: 'string', default: '30d' },
  'state-dir': { type: 'string' },
  registry: { type: 'string' },
  list: { type: 'boolean' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

export type Values = ReturnType<
  typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>
>['values'];

export class Usage extends Error {}

export const DEFAULT_STATE_DIR = '/var/lib/petrel';

export function count(text: string | undefined, flag: string, fallback?: number): number {
  if (text === undefined) {
    if (fallback === undefined) throw new Usage(`--${flag} is required`);
    return fallback;
  }
  const n = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(n))
    throw new Usage(`--${flag} must be a number, not '${text}'`);
  return n;
}

export function keyType(values: Values, fallback: KeyType = 'ed25519'): KeyType {
  const type = parseKeyType(values['key-type'] ?? fallback);
  if (!type.ok) throw new Usage(type.error.message);
  return type.value;
}

export const list = (text: string): string[] =>
  text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');

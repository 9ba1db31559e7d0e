// How configuration keys are spelled: every key in the table's order, each one's flag, and its
// path in the file (`limits.maxFrameBytes`), which is also how errors name it.

import { CONFIG_FIELDS } from './config-table.js';
import type { ConfigKey } from './config-types.js';

export const KEYS = Object.keys(CONFIG_FIELDS) as ConfigKey[];

/** `maxFrameBytes` → `max-frame-bytes`. */
export function flagName(key: ConfigKey): string {
  return key.replace(/[A-Z]/gu, (c) => `-${c.toLowerCase()}`);
}

/** `limits.maxFrameBytes`: how the file spells a key, and how errors name it. */
export function keyPath(key: ConfigKey): string {
  const table = CONFIG_FIELDS[key].table;
  return table === null ? key : `${table}.${key}`;
}

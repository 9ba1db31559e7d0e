// A node's identity in the registry: its id (`--node-id`) and the address clients reach its TLS
// endpoint at (`--node-address HOST:PORT`), checked where they enter.

import { err, ok, type PetrelError, type Result } from '../resources/errors.js';

export type NodeError = PetrelError<'E_FLEET_NODE_ID' | 'E_FLEET_NODE_ADDRESS'>;

const ID_PATTERN = /^[a-z0-9][a-z0-9.-]{0,62}$/u;

/** 1–63 characters of `[a-z0-9.-]`, not starting with `-` or `.` (like a label, lower case only,
 * so the id in the registry is exactly what was typed). */
export function parseNodeId(text: string): Result<string, NodeError> {
  if (ID_PATTERN.test(text)) return ok(text);
  return err('E_FLEET_NODE_ID', `invalid node id ${JSON.stringify(text)} (only [a-z0-9.-], 1 to 63 chars)`);
}

/** `HOST:PORT` or `[IPv6]:PORT`, port 1–65535. Returned unchanged. */
export function parseNodeAddress(text: string): Result<string, NodeError> {
  const bad = (why: string) =>
    err('E_FLEET_NODE_ADDRESS', `invalid node address ${JSON.stringify(text)}: ${why} (HOST:PORT)`);
  const match = /^(\[[0-9a-fA-F:.]+\]|[^\s:[\]]+):(\d{1,5})$/u.exec(text);
  if (match === null) return bad('expected HOST:PORT');
  const port = Number(match[2]);
  if (port < 1 || port > 65_535) return bad(`port ${port} out of range`);
  return ok(text);
}

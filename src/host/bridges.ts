// Host bridges: Petrel only uses bridges that already exist (it never creates one), so it
// lists them and checks a configuration's bridges against the list before any tap is made.

import { err, ok, type PetrelError, type Result } from '../resources/errors.js';
import { listLinks, type NetError, type NetOptions } from './ip.js';

/** Names of the bridges on the host (or in `options.netns`), sorted. */
export async function listBridges(options: NetOptions = {}): Promise<Result<readonly string[], NetError>> {
  const links = await listLinks(['type', 'bridge'], options);
  if (!links.ok) return links;
  return ok(links.value.map((link) => link.name).sort());
}

/**
 * Every name in `bridges` must be an existing bridge; the first that is not gives Albatross'
 * text `interface <name> does not exist` (semantics §5.3).
 */
export async function checkBridges(
  bridges: readonly string[],
  options: NetOptions = {},
): Promise<Result<void, NetError | PetrelError<'E_HOST_NO_BRIDGE'>>> {
  if (bridges.length === 0) return ok(undefined);
  const present = await listBridges(options);
  if (!present.ok) return present;
  const known = new Set(present.value);
  for (const bridge of bridges) {
    if (!known.has(bridge)) {
      return err('E_HOST_NO_BRIDGE', `interface ${bridge} does not exist`, { bridge });
    }
  }
  return ok(undefined);
}

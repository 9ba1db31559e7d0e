// What a unikernel's configuration takes from the resource tree (src/resources): its memory,
// CPU ids, host bridges and block devices. The engine admits a create with it, and a node admits
// a fleet deployment's signed create with the same (src/tls/deployment-proof.ts).

import { err, ok, type PetrelError, type Result, unwrap } from '../resources/errors.js';
import { type Label, parseLabel } from '../resources/name.js';
import type { Allocation } from '../resources/tree.js';
import type { BlockSpec, NetSpec, UnikernelConfig } from './types.js';

/** The host bridge a network interface attaches to: its own name when none is given. */
export const hostBridge = (net: Pick<NetSpec, 'netif' | 'bridge'>): string => net.bridge ?? net.netif;

/** The host block device a unikernel's device is: its own name when none is given. */
export const hostBlock = (block: Pick<BlockSpec, 'device' | 'hostDevice'>): string =>
  block.hostDevice ?? block.device;

/** The label of a block device's host name (checked by `allocationOf` before any use). */
export function blockLabel(block: Pick<BlockSpec, 'device' | 'hostDevice'>): Label {
  return unwrap(parseLabel(hostBlock(block)));
}

/** What the unikernel takes from the resource tree; block names must be labels. */
export function allocationOf(
  config: Pick<UnikernelConfig, 'memory' | 'cpuids' | 'bridges' | 'blocks'>,
): Result<Allocation, PetrelError> {
  const blocks: Label[] = [];
  for (const block of config.blocks) {
    const label = parseLabel(hostBlock(block));
    if (!label.ok) {
      return err('E_BLOCK_NAME', `invalid block device name ${JSON.stringify(hostBlock(block))}`);
    }
    blocks.push(label.value);
  }
  return ok({
    memory: config.memory,
    cpuids: config.cpuids,
    bridges: config.bridges.map(hostBridge),
    blocks,
  });
}

// Unikernel info entries (albatross-semantics.md §5.1) in the 2.7 shape; src/wire turns them into
// the shape the request's tag expects.

import { childName } from '../resources/name.js';
import { findBlock, type Tree } from '../resources/tree.js';
import type { UnikernelInfo } from '../wire/types.js';
import type { RunningVm } from './launch.js';
import { blockLabel } from './prepare.js';

/** Default sector size reported for blocks configured without one. */
const DEFAULT_SECTOR = 512;

export function unikernelInfo(vm: RunningVm, tree: Tree): UnikernelInfo {
  const { config } = vm;
  return {
    typ: config.typ,
    startup: config.startup,
    failBehaviour: config.failBehaviour,
    cpuids: config.cpuids,
    memory: config.memory,
    digest: Buffer.from(vm.image.digest, 'hex'),
    // Petrel looks the size up under the unikernel's own path, not the relative name (§3.4).
    blocks: config.blocks.map((block) => ({
      device: block.device,
      hostDevice: block.hostDevice ?? block.device,
      sectorSize: block.sectorSize ?? DEFAULT_SECTOR,
      blockSize: findBlock(tree, childName(vm.name.path, blockLabel(block)))?.size ?? 0,
    })),
    bridges: vm.nets.map((net) => ({ netif: net.netif, bridge: net.bridge, mac: net.mac })),
    arguments: config.arguments,
    started: vm.tender.startedAt,
    cpus: config.cpus,
    linuxBootPartition: config.linuxBootPartition,
  };
}

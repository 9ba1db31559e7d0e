// unikernel-info (albatross-semantics.md §5.1): the running unikernels at or below a name, each
// entry in the 2.7 shape; src/wire turns them into the shape the request's tag expects.

import { childName, type Name, printName } from '../resources/name.js';
import { findBlock, foldUnikernels, type Tree } from '../resources/tree.js';
import { infoReply } from '../wire/shapes.js';
import type { InfoRelease, UnikernelInfo } from '../wire/types.js';
import { type RunningVm, vmKey } from './launch.js';
import { blockLabel } from './prepare.js';
import { type EngineResponse, reply } from './replies.js';
import type { RunningSet } from './running.js';
import type { VmName } from './types.js';

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

/** The reply to unikernel-info for `name`: the running unikernel it names, or those below its path. */
export function infoResponse(
  tree: Tree,
  running: RunningSet,
  name: Name,
  release: InfoRelease,
): EngineResponse {
  const entries =
    name.label === null
      ? foldUnikernels(tree, name.path).flatMap(([relative]) => {
          const full = { path: [...name.path, ...relative.path], label: relative.label } as VmName;
          const run = running.get(vmKey(full));
          return run === undefined ? [] : [{ name: relative, info: unikernelInfo(run.vm, tree) }];
        })
      : [running.get(printName(name))].flatMap((run) =>
          run === undefined ? [] : [{ name, info: unikernelInfo(run.vm, tree) }],
        );
  return reply(infoReply(release, entries));
}

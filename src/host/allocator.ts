// petreld's say over glibc's allocator: native/build/allocator.node (native/allocator/allocator.c
// says why). Loading it fixes malloc's mmap threshold, so a buffer above 128 KiB (an image frame)
// goes back to the kernel when freed; trimAllocator() gives back the free pages inside malloc's
// heap once a collection has freed what a transfer left there. Without the addon (not built, or
// a libc other than glibc) petreld works the same and keeps more memory after transfers.

import { createRequire } from 'node:module';
import { bundledNativePath } from './native.js';

interface Addon {
  trim(): boolean;
}

let addon: Addon | null = null;

/**
 * Loads the addon once; later calls return the first answer. Returns null when it is loaded,
 * else why not (petreld logs that and goes on).
 */
export function loadAllocator(file = bundledNativePath('allocator.node')): string | null {
  if (addon !== null) return null;
  if (file === null) return 'allocator.node: no package root found';
  try {
    addon = createRequire(import.meta.url)(file) as Addon;
    return null;
  } catch (cause) {
    return `allocator.node not loaded from ${file} (run \`make -C native\`): ${(cause as Error).message}`;
  }
}

/** Returns malloc's free pages to the kernel; false when the addon is not loaded or none were. */
export function trimAllocator(): boolean {
  return addon?.trim() ?? false;
}

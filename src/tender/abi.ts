// The ABI versions Petrel's tenders and canaries speak, per solo5 target. hvt is solo5's own
// ABI 2; spt is Petrel's own boot ABI 1001 (native/spt/ABI.md), numbered apart from solo5-spt's
// ABI 2 so that each tender refuses the other's images instead of crashing them.

import type { TenderKind } from './elf.js';

export const ABI_VERSION: Readonly<Record<TenderKind, number>> = Object.freeze({ hvt: 2, spt: 1001 });

/** solo5-spt's own ABI version: what real spt unikernels need (Petrel launches it, never ships it). */
export const SOLO5_SPT_ABI = 2;

/** Whether only Petrel's bundled tender speaks this ABI (no solo5 release does). */
export function onlyBundledSpeaks(kind: TenderKind, abiVersion: number): boolean {
  return kind === 'spt' && abiVersion === ABI_VERSION.spt;
}

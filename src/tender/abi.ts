// The ABI versions Petrel's tenders and canaries speak, per solo5 target: solo5's own, version 2
// for both hvt and spt (solo5 v0.12.1). petrel-hvt and petrel-spt are drop-ins for solo5-hvt and
// solo5-spt, so a tender is found by Albatross' lookup whichever of the two is installed.

import type { TenderKind } from './elf.js';

export const ABI_VERSION: Readonly<Record<TenderKind, number>> = Object.freeze({ hvt: 2, spt: 2 });

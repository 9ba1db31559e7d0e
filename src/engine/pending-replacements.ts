// Pure: what a start does with the replacements a crash left pending (Petrel (m)). A passed
// check keeps the new unikernel; any other brings back the one it replaced; a replacement whose
// unikernel the state no longer holds (destroyed, or dropped when nothing could start) is moot.

import { printName } from '../resources/name.js';
import type { PetrelState, UnikernelRecord } from '../wire/petrel-state.js';

export type ReplacementOutcome = 'kept' | 'rolled-back' | 'moot';

export interface ResolvedReplacements {
  /** The state without pending replacements, rolled-back unikernels as they were before. */
  readonly state: PetrelState;
  readonly outcomes: readonly { readonly name: string; readonly outcome: ReplacementOutcome }[];
}

export function resolveReplacements(state: PetrelState): ResolvedReplacements {
  const pending = state.replacements ?? [];
  if (pending.length === 0) return { state, outcomes: [] };
  const byName = new Map(pending.map((r) => [printName(r.name), r] as const));
  const outcomes: { name: string; outcome: ReplacementOutcome }[] = [];
  const present = new Set(state.unikernels.map((u) => printName(u.name)));
  for (const key of byName.keys()) if (!present.has(key)) outcomes.push({ name: key, outcome: 'moot' });
  const unikernels = state.unikernels.map((u): UnikernelRecord => {
    const replacement = byName.get(printName(u.name));
    if (replacement === undefined) return u;
    if (replacement.passed) {
      outcomes.push({ name: printName(u.name), outcome: 'kept' });
      return u;
    }
    outcomes.push({ name: printName(u.name), outcome: 'rolled-back' });
    return { name: u.name, config: replacement.previous.config, image: replacement.previous.image };
  });
  const { replacements: _, ...rest } = state;
  return { state: { ...rest, unikernels }, outcomes };
}

// How many cases the wire property tests run: FUZZ_RUNS in total (default 100,000), shared out by
// fraction; FUZZ_SEED replays a failure (fast-check prints the seed and path when one fails).

import type fc from 'fast-check';

const total = Number(process.env.FUZZ_RUNS ?? 100_000);
const seed = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED);

export const runs = (share: number): number => Math.max(1, Math.round(total * share));

export function settings(numRuns: number): fc.Parameters<unknown> {
  return seed === undefined ? { numRuns } : { numRuns, seed };
}

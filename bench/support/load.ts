// The load average every benchmark prints beside its figures: shared machines are noisy, and a
// figure means little without it.

import { loadavg } from 'node:os';

/** The 1, 5 and 15 minute load averages, two decimals each. */
export const loadAverage = (): string =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

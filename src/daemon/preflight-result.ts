// One preflight check's result, and the outcome a check computes before the configuration
// decides whether its failure is fatal (FAIL) or not (WARN).

import type { ProbeProblem } from '../tender/probe.js';

export type CheckStatus = 'PASS' | 'FAIL' | 'WARN';

export interface CheckResult {
  /** The capability or setting checked: `kvm`, `tenders.hvt`, `bridges.br0`, `runDir`, `sockets`, `tls`, … */
  readonly name: string;
  /** PASS; FAIL only for a required check; WARN for anything else that is missing or odd. */
  readonly status: CheckStatus;
  readonly detail: string;
  /** What to do about a FAIL or WARN; null on PASS. */
  readonly fix: string | null;
  /** Required by the configuration: failing it aborts start-up. */
  readonly fatal: boolean;
}

export type Outcome =
  | { readonly ok: true; readonly detail: string }
  | ({ readonly ok: false } & ProbeProblem);
export const passed = (detail: string): Outcome => ({ ok: true, detail });
export const failed = (detail: string, hint: string): Outcome => ({ ok: false, detail, hint });

export function result(name: string, outcome: Outcome, fatal: boolean, warnOnly = false): CheckResult {
  if (outcome.ok) return { name, status: 'PASS', detail: outcome.detail, fix: null, fatal };
  const status = fatal && !warnOnly ? 'FAIL' : 'WARN';
  return { name, status, detail: outcome.detail, fix: outcome.hint, fatal };
}

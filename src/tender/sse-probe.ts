// Whether an hvt guest may use SSE on this host, found by booting one that does: on a nested
// software KVM (kvm-pvm, solo5.md §5.5) any SSE instruction kills the guest, and with it every
// unikernel that uses floating point (all of MirageOS); nothing short of running one tells.

import { lstat } from 'node:fs/promises';
import path from 'node:path';
import { runCommand } from '../host/command.js';

/** The guest (`native/build/sse.hvt`: adds 1.5 to itself in XMM0, halts 0 if that gave 3) and its tender. */
export interface SseGuest {
  readonly tender: string;
  readonly image: string;
}

/**
 * What the run showed: true (the sum was right), false with why and what to do, or null when it
 * ended in a way that says nothing about SSE (no image, KVM would not open, a timeout, ...).
 */
export interface SseFinding {
  readonly value: boolean | null;
  readonly problem?: { readonly detail: string; readonly hint: string };
}

/** What the tender prints when KVM stops the guest at an instruction it cannot run (§3.17, §5.5). */
const INTERNAL_ERROR = /KVM: internal error exit: suberror=0x[0-9a-f]+/u;
/** Where the kernel shows that /dev/kvm is kvm-pvm's (solo5.md §5.1). */
const KVM_PVM_MODULE = '/sys/module/kvm_pvm';

export const SSE_HINT =
  'run unikernels that use floating point under spt (--runtimes spt); under hvt they need hardware KVM';

/** The bundled tender's guest: `sse.hvt` beside it. */
export function bundledSseGuest(tender: string): SseGuest {
  return { tender, image: path.join(path.dirname(tender), 'sse.hvt') };
}

async function exists(file: string): Promise<boolean> {
  return lstat(file).then(
    () => true,
    () => false,
  );
}

/** Boots the guest once (2 MiB, a few milliseconds) and judges how it ended. Never rejects. */
export async function probeSse(guest: SseGuest, timeoutMs: number): Promise<SseFinding> {
  if (!(await exists(guest.image))) return { value: null };
  const run = await runCommand(guest.tender, ['--mem=2', '--', guest.image], { timeoutMs });
  if (run.ok) return { value: true };
  const { exitCode, stderr } = run.error.details ?? {};
  const killed = typeof stderr === 'string' ? INTERNAL_ERROR.exec(stderr)?.[0] : undefined;
  if (exitCode === 2) {
    const detail =
      'an SSE addition in an hvt guest gave a wrong sum: hvt unikernels that use floating point compute wrong results on this host';
    return { value: false, problem: { detail, hint: SSE_HINT } };
  }
  if (exitCode !== 1 || killed === undefined) return { value: null };
  const pvm = (await exists(KVM_PVM_MODULE)) ? ' (/dev/kvm is kvm-pvm, a nested software KVM)' : '';
  const detail = `an SSE instruction kills hvt guests on this host${pvm}: ${killed}. hvt unikernels that use floating point (every MirageOS unikernel) die at their first SSE instruction`;
  return { value: false, problem: { detail, hint: SSE_HINT } };
}

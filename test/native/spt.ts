// petrel-spt and the spt canary images, and what every spt test file checks the same way. The
// process helpers (running, waiting, killing) are native.ts's; the images come from
// `npm run build:native` (make -C native). Where SOLO5_SPT names a real solo5-spt (v0.12.1; CI
// has none, so these comparisons are skipped there), the same runs are repeated under it and must
// end the same way: petrel-spt is a drop-in for it (../shared/spec/solo5-spt.md).
import { existsSync } from 'node:fs';
import { basename, join } from 'node:path';
import { expect } from 'vitest';
import { build, type Outcome, runSync, tapPeer } from './native.js';

export const spt = join(build, 'petrel-spt');
export const sptCanary = join(build, 'canary.spt');
export const sptCanaryBlk = join(build, 'canary-blk.spt');
export const sptCanaryNet = join(build, 'canary-net.spt');
/** The conformance unikernels (native/conform): no device, block "storage", net "service". */
export const conform = join(build, 'conform.spt');
export const conformBlk = join(build, 'conform-blk.spt');
export const conformNet = join(build, 'conform-net.spt');

/** solo5's spt ABI (solo5-spt.md §2, native/spt/abi.h). */
export const SPT_ABI_VERSION = 2;
export const SPT_BOOT_INFO = 0x11000;
export const SPT_BOOT_INFO_SIZE = 40;

/** A real solo5-spt to compare with, or null. */
export const solo5Spt: string | null = process.env.SOLO5_SPT || null;

/** The tenders a guest-side test runs under: petrel-spt, and solo5-spt where there is one. */
export const sptTenders: readonly string[] = solo5Spt === null ? [spt] : [spt, solo5Spt];

export function requireSptBuilt(): void {
  for (const f of [spt, sptCanary, sptCanaryBlk, sptCanaryNet, conform, conformBlk, conformNet, tapPeer]) {
    if (!existsSync(f)) throw new Error(`${f} is missing: run \`npm run build:native\` first`);
  }
  if (solo5Spt !== null && !existsSync(solo5Spt)) throw new Error(`SOLO5_SPT=${solo5Spt} does not exist`);
}

export function runSpt(args: readonly string[], timeoutMs?: number): Outcome {
  return runSync(spt, args, timeoutMs);
}

/** What two tenders must agree on: how the process ended and what the guest wrote. */
function ending(r: Outcome): Pick<Outcome, 'status' | 'signal' | 'stdout'> {
  return { status: r.status, signal: r.signal, stdout: r.stdout };
}

/** stderr with the tender's own name made neutral, so two tenders' messages compare. */
export function neutralStderr(r: Outcome, tender: string): string {
  const name = basename(tender);
  return r.stderr.replaceAll(`${name}: `, 'TENDER: ').replaceAll(`usage: ${name} `, 'usage: TENDER ');
}

/**
 * Runs args under petrel-spt and, with SOLO5_SPT set, under solo5-spt too: both must end the same
 * way (status or signal) with the same stdout (solo5-spt.md §6 compares stdout with the NUL of a
 * stack-protector message removed; so does this). With `sameStderr`, the tenders' own messages
 * must be the same too, but for the program name. Returns petrel-spt's outcome for the test's
 * own assertions, which make the test fail by themselves where there is no solo5-spt.
 */
export function runBoth(
  args: readonly string[],
  options: {
    timeoutMs?: number;
    sameStderr?: boolean;
    run?: (cmd: string) => Outcome;
    /** What of stdout must be the same (default all of it): for output that carries timings. */
    compared?: (stdout: string) => string;
  } = {},
): Outcome {
  const run = options.run ?? ((cmd: string) => runSync(cmd, args, options.timeoutMs));
  const compared = options.compared ?? ((stdout: string) => stdout);
  const ours = run(spt);
  if (solo5Spt !== null) {
    const theirs = run(solo5Spt);
    const clean = (r: Outcome) => ({ ...ending(r), stdout: compared(r.stdout.replaceAll('\0', '')) });
    expect(clean(ours), `petrel-spt vs solo5-spt: ${args.join(' ')}`).toEqual(clean(theirs));
    if (options.sameStderr) expect(neutralStderr(ours, spt)).toBe(neutralStderr(theirs, solo5Spt));
  }
  return ours;
}

/** A tender-side failure: exit 1 and the message on a line of its own, after the program prefix. */
export function expectSptFailure(r: Outcome, message: string): void {
  expect(r.stderr.split('\n')).toContain(`petrel-spt: ${message}`);
  expect(r.status).toBe(1);
  expect(r.stdout).toBe('');
}

/** "Invalid option" for word (after the reason, if given), then the usage, exit 1. */
export function expectInvalidOption(r: Outcome, word: string, before?: string): void {
  const lines = r.stderr.split('\n');
  const at = lines.indexOf(`petrel-spt: Invalid option: \`${word}'`);
  expect(at, r.stderr).toBeGreaterThanOrEqual(0);
  if (before !== undefined) expect(lines[at - 1]).toBe(`petrel-spt: ${before}`);
  expect(lines[at + 1]).toMatch(/^usage: petrel-spt /);
  expect(r.status).toBe(1);
}

/** The guest was killed by a signal; the tender printed nothing of its own. */
export function expectKilled(r: Outcome, signal: NodeJS.Signals): void {
  expect(r.signal, `status ${r.status}, stderr ${r.stderr}`).toBe(signal);
  expect(r.status).toBeNull();
  expect(r.stderr).toBe('');
}

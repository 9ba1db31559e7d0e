// petrel-spt and the spt canary images, and what every spt test file checks the same way. The
// process helpers (running, waiting, killing) are native.ts's; the images come from
// `npm run build:native` (make -C native).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { build, type Outcome, runSync, tapPeer } from './native.js';

export const spt = join(build, 'petrel-spt');
export const sptCanary = join(build, 'canary.spt');
export const sptCanaryBlk = join(build, 'canary-blk.spt');
export const sptCanaryNet = join(build, 'canary-net.spt');

/** Petrel's spt ABI (native/spt/ABI.md, native/spt/abi.h). */
export const SPT_ABI_VERSION = 1001;
export const SPT_BOOT_INFO = 0x11000;
export const SPT_BOOT_INFO_SIZE = 48;

export function requireSptBuilt(): void {
  for (const f of [spt, sptCanary, sptCanaryBlk, sptCanaryNet, tapPeer]) {
    if (!existsSync(f)) throw new Error(`${f} is missing: run \`npm run build:native\` first`);
  }
}

export function runSpt(args: readonly string[], timeoutMs?: number): Outcome {
  return runSync(spt, args, timeoutMs);
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

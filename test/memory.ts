// The one rule for memory assertions in tests: memory is sampled after full collections and a
// malloc trim (what is kept, not garbage a busy machine has not collected yet) and compared with
// the size of the transfer, never with an absolute figure (those belong in bench/).
import { readFile, writeFile } from 'node:fs/promises';
import v8 from 'node:v8';
import vm from 'node:vm';
import type { DaemonProcess } from './daemon/process.js';

/**
 * What a test may see a transfer cost: at most this share of its size. Whatever holds the
 * transfer whole costs at least all of it, so a test at this share still fails on that; what is
 * streamed costs a window of a few MiB, and the rest of the share is the margin a busy machine
 * keeps (collections that come late while the CPU is taken by others). Measured on a shared
 * 2-core machine, 50 MB images: 6-24 MB peaks, the highest a get through the TLS endpoint.
 */
export const TRANSFER_SHARE = 0.75;

/** The most memory a transfer of `bytes` may cost under the rule above. */
export function transferAllowance(bytes: number): number {
  return Math.floor(bytes * TRANSFER_SHARE);
}

const status = async (pid: number, field: 'VmRSS' | 'VmHWM') =>
  Number(new RegExp(`${field}:\\s+(\\d+)`).exec(await readFile(`/proc/${pid}/status`, 'utf8'))?.[1]) * 1024;

/** petreld's resident memory after full collections and a trim: what it keeps. */
export async function keptResident(daemon: DaemonProcess): Promise<number> {
  await daemon.collect();
  return status(daemon.pid, 'VmRSS');
}

/**
 * How far petreld's resident memory peaked (VmHWM) above where it was after a collection and
 * trim (`before`), while `during` ran.
 */
export async function peakRise<T>(
  daemon: DaemonProcess,
  during: () => Promise<T>,
): Promise<{ value: T; bytes: number; before: number }> {
  const before = await keptResident(daemon);
  await writeFile(`/proc/${daemon.pid}/clear_refs`, '5'); // the peak starts again from now
  const value = await during();
  return { value, bytes: (await status(daemon.pid, 'VmHWM')) - before, before };
}

let gc: (() => void) | null = null;

/**
 * This process's JS heap plus Buffer memory after full collections: what it keeps (for tests
 * that measure code running in the test process). Buffer memory is freed on a background thread
 * after a collection, which a busy machine runs late: collections go on, 20 ms apart, until
 * Buffer memory stops falling (at least 3, at most 2 s).
 */
export async function keptHere(): Promise<number> {
  if (gc === null) {
    v8.setFlagsFromString('--expose-gc');
    gc = vm.runInNewContext('gc') as () => void;
  }
  let last = Number.POSITIVE_INFINITY;
  const deadline = Date.now() + 2000;
  for (let round = 0; ; round++) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 20));
    const buffers = process.memoryUsage().arrayBuffers;
    if ((round >= 2 && buffers >= last) || Date.now() > deadline) break;
    last = buffers;
  }
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.arrayBuffers;
}

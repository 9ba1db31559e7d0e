// What a petreld process runs, seen from outside it: tender pids from /proc and the names
// `unikernel-info` lists. Shared by the daemon tests that kill and restart petreld.

import { readFileSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { request } from './client.js';

/** Each unikernel's tender pid, keyed by the image link it was given (`:name`), as the kernel sees them. */
export async function tenderPids(run: string): Promise<Record<string, number>> {
  const found: Record<string, number> = {};
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/u.test(pid)) continue;
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    const file = argv.find((a) => a.startsWith(`${run}/`) && a.endsWith('.img'));
    if (file) found[path.basename(file, '.img')] = Number(pid);
  }
  return found;
}

/** The labels of the unikernels petreld lists at the root, sorted (`a`, not `:a`). */
export async function unikernelLabels(socket: string): Promise<string[]> {
  const replies = await request(socket, ':', { type: 'unikernel-info', release: '2.7' });
  const payload = replies[0]?.payload;
  if (payload?.kind !== 'reply' || payload.reply.type !== 'unikernel-info') return [];
  return payload.reply.entries.map((e) => e.name.label as string).sort();
}

// Host-wide claims on jail ids: `/run/petrel-ids/<id>` holds the pid and start time of the
// holder whose tender runs under that id. The holder outlives petreld and every tender dies with
// it, so a claim is live exactly while its tender may run. Two petrelds on one host (fleet nodes
// sharing a machine, the tests) never hand out the same id; a claim whose holder is gone is
// stale and taken over; a start releases its own holder's claims that no adopted tender holds.
// Synchronous: a few bytes on tmpfs.

import { closeSync, linkSync, mkdirSync, openSync, readdirSync, readFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { temporaryName, unlinkIfPresentSync } from './files.js';
import { checkPidRecord, processStartTime } from './pidrecord.js';

/** Where claims live unless configured otherwise (one directory for the whole host). */
export const DEFAULT_CLAIMS_DIR = '/run/petrel-ids';

function read(file: string): { pid: number; startTime: string } | null {
  try {
    const match = /^(\d{1,10}) (\d{1,20})\n?$/u.exec(readFileSync(file, 'utf8'));
    return match === null ? null : { pid: Number(match[1]), startTime: match[2] as string };
  } catch {
    return null;
  }
}

/** Whether a live process holds the claim on `id`, and which. */
export function claimHolder(dir: string, id: number): number | null {
  const claim = read(path.join(dir, String(id)));
  if (claim === null) return null;
  const now = checkPidRecord(claim);
  return now.ok && now.value === 'alive' ? claim.pid : null;
}

/**
 * Creates `file` holding `pid` and its start time, or false when it exists. Written to a
 * temporary file and linked into place, so no reader ever sees a claim without its content
 * (which it would take for a stale one).
 */
function write(file: string, pid: number): boolean {
  const start = processStartTime(pid);
  if (!start.ok) return false;
  const temp = temporaryName(file);
  const fd = openSync(temp, 'wx', 0o600);
  try {
    writeSync(fd, `${pid} ${start.value}\n`);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(temp, file);
    return true;
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw cause;
  } finally {
    unlinkIfPresentSync(temp);
  }
}

/** Claims `id` for the tenders of `holder`: false when a live holder has it; a stale claim is taken over. */
export function claimId(dir: string, id: number, holder: number): boolean {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = path.join(dir, String(id));
  for (let attempt = 0; attempt < 2; attempt++) {
    if (write(file, holder)) return true;
    const now = claimHolder(dir, id);
    if (now === holder) return true; // ours already (an adopted tender's)
    if (now !== null) return false;
    unlinkIfPresentSync(file); // its holder is gone, and with it every tender it had
  }
  return false;
}

export function releaseClaim(dir: string, id: number): void {
  unlinkIfPresentSync(path.join(dir, String(id)));
}

/** Every claim: its id and its live holder's pid, or null when stale. */
export function listClaims(dir: string): { id: number; holder: number | null }[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names
    .filter((n) => /^\d+$/u.test(n))
    .map((n) => ({ id: Number(n), holder: claimHolder(dir, Number(n)) }));
}

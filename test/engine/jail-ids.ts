// A block of jail ids of its own for each test process: the tests start many petrelds at once
// (vitest workers, and other checkouts on the same machine), and two that hand out the same id
// would put two tenders under one uid (RLIMIT_NPROC refuses the second; petreld's preflight
// refuses to start beside a stranger's tenders). A block is claimed by creating
// /tmp/petrel-test-jail-ids/<block> (O_EXCL) with the claiming pid; a block whose pid is gone
// is claimed again.

import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';
import { DEFAULT_ID_RANGE } from '../../src/resources/jail.js';

const DIR = '/tmp/petrel-test-jail-ids';
const BLOCK = 64;
let mine: string | null = null;

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (cause) {
    return (cause as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** `FIRST-LAST`: this process' block of the default range, the same for every call. */
export function testJailIds(): string {
  if (mine !== null) return mine;
  mkdirSync(DIR, { recursive: true, mode: 0o700 });
  const blocks = Math.floor((DEFAULT_ID_RANGE.last - DEFAULT_ID_RANGE.first + 1) / BLOCK);
  const start = process.pid % blocks;
  for (let k = 0; k < 2 * blocks; k++) {
    const block = (start + k) % blocks;
    const file = path.join(DIR, String(block));
    try {
      const fd = openSync(file, 'wx', 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
    } catch {
      let owner = 0;
      try {
        owner = Number(readFileSync(file, 'utf8').trim() || '0');
      } catch {
        continue; // released meanwhile: another turn finds it
      }
      if (owner > 0 && alive(owner)) continue;
      rmSync(file, { force: true }); // its process is gone: the next turn over the blocks takes it
      continue;
    }
    const first = DEFAULT_ID_RANGE.first + block * BLOCK;
    mine = `${first}-${first + BLOCK - 1}`;
    return mine;
  }
  throw new Error(`no free block of ${BLOCK} jail ids in ${DIR}`);
}

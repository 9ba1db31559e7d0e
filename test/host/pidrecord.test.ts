import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  checkPidRecord,
  processStartTime,
  readPidRecords,
  stopRecordedProcess,
  writePidRecord,
} from '../../src/host/pidrecord.js';
import { failure, name, tempDir, value } from './helpers.js';

let dir: string;
let cleanup: () => Promise<void>;
const children: ChildProcess[] = [];

function start(command: string): ChildProcess {
  const child = spawn('sh', ['-c', command], { stdio: 'ignore' });
  children.push(child);
  return child;
}

async function started(child: ChildProcess): Promise<number> {
  await once(child, 'spawn');
  return child.pid ?? -1;
}

beforeEach(async () => {
  ({ dir, cleanup } = await tempDir());
});
afterEach(async () => {
  // Only the processes this file started, by their own handle.
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
  }
  await cleanup();
});

describe('tender PID records', () => {
  it('records pid and start time under <run-dir>/tenders/<name> and reads them back', async () => {
    const pid = await started(start('exec sleep 30'));
    const written = value(writePidRecord(dir, name('user:web'), pid));
    const startTime = value(processStartTime(pid));
    expect(await readFile(path.join(dir, 'tenders', 'user:web'), 'utf8')).toBe(`${pid} ${startTime}\n`);
    const listing = value(readPidRecords(dir));
    expect(listing.records).toEqual([written.value]);
    expect(value(checkPidRecord(written.value))).toBe('alive');
    await written.undo();
    expect(value(readPidRecords(dir)).records).toEqual([]);
  });

  it('tells a dead process and a recycled pid from the recorded process', async () => {
    const child = start('exec sleep 30');
    const pid = await started(child);
    const record = value(writePidRecord(dir, name(':a'), pid)).value;
    // Same pid, another start time: what a pid reused by a new process looks like.
    const recycled = { ...record, startTime: String(BigInt(record.startTime) + 1n) };
    expect(value(checkPidRecord(recycled))).toBe('recycled');
    child.kill('SIGKILL');
    await once(child, 'exit');
    expect(value(checkPidRecord(record))).toBe('gone');
  });

  it('never signals a recycled pid', async () => {
    const child = start('exec sleep 30');
    const pid = await started(child);
    const record = value(writePidRecord(dir, name(':a'), pid)).value;
    const result = value(await stopRecordedProcess({ ...record, startTime: '1' }, { graceMs: 100 }));
    expect(result).toBe('recycled');
    expect(value(checkPidRecord(record))).toBe('alive');
  });

  it('stops a leftover that ignores SIGTERM with SIGKILL after the grace period', async () => {
    const child = start('trap "" TERM; exec sleep 30');
    const pid = await started(child);
    await new Promise((resolve) => setTimeout(resolve, 100)); // let the trap be installed
    const record = value(writePidRecord(dir, name(':a'), pid)).value;
    const before = Date.now();
    expect(value(await stopRecordedProcess(record, { graceMs: 300 }))).toBe('stopped');
    expect(Date.now() - before).toBeGreaterThanOrEqual(300);
    const [, signal] =
      child.exitCode === null && child.signalCode === null
        ? await once(child, 'exit')
        : [null, child.signalCode];
    expect(signal).toBe('SIGKILL');
  });

  it('lists malformed records apart, and refuses a path-only name', async () => {
    const pid = await started(start('exec sleep 30'));
    value(writePidRecord(dir, name(':ok'), pid));
    await writeFile(path.join(dir, 'tenders', ':bad'), 'not a record');
    await writeFile(path.join(dir, 'tenders', 'x::y'), `${pid} 1\n`);
    const listing = value(readPidRecords(dir));
    expect(listing.records.map((r) => r.path)).toEqual([path.join(dir, 'tenders', ':ok')]);
    expect(listing.invalid.map((i) => path.basename(i.path))).toEqual([':bad', 'x::y']);
    expect(failure(writePidRecord(dir, name('user:'), pid)).code).toBe('E_HOST_PATH');
  });
});

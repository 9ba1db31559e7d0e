import { constants, existsSync, openSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeFifo } from '../../src/host/fifo.js';
import { checkPidRecord, readPidRecords } from '../../src/host/pidrecord.js';
import { spawnTender, type TenderProcess } from '../../src/tender/process.js';
import { failure, name, tempDir, value } from '../host/helpers.js';

let dir: string;
let cleanup: () => Promise<void>;
const started: TenderProcess[] = [];

beforeEach(async () => {
  ({ dir, cleanup } = await tempDir());
});
afterEach(async () => {
  // Only the processes these tests started, through their own handles.
  for (const tender of started.splice(0)) await tender.stop(0);
  await cleanup();
});

async function spawnOk(argv: string[], withRecord = false): Promise<TenderProcess> {
  const tender = value(
    await spawnTender({
      argv,
      console: { file: '/dev/null' },
      ...(withRecord ? { record: { runDir: dir, name: name('user:web') } } : {}),
    }),
  );
  started.push(tender);
  return tender;
}

/** Resolves once `file` exists: the child has set up its signal handling by then. */
async function ready(file: string): Promise<void> {
  while (!existsSync(file)) await new Promise((resolve) => setTimeout(resolve, 10));
}

/** A one-process stand-in for solo5-hvt's signal handling: exit 1 on SIGTERM (solo5.md §1.11). */
function hvtLike(readyFile: string): string[] {
  const code =
    "process.on('SIGTERM', () => process.exit(1)); require('fs').writeFileSync(process.argv[1], '');" +
    ' setInterval(() => {}, 1000)';
  return [process.execPath, '-e', code, readyFile];
}

describe('tender process', () => {
  it('reports a natural exit with no signal sent', async () => {
    const tender = await spawnOk(['sh', '-c', 'exit 7']);
    expect(await tender.shutdown).toEqual({ code: 7, signal: null, sentSignal: null });
  });

  it('stop sends SIGTERM and remembers it, so exit 1 after our SIGTERM is told apart', async () => {
    const flag = path.join(dir, 'ready');
    const tender = await spawnOk(hvtLike(flag));
    await ready(flag);
    expect(await tender.stop(5_000)).toEqual({ code: 1, signal: null, sentSignal: 'SIGTERM' });
  });

  it('stop escalates to SIGKILL after the grace period for a tender that ignores SIGTERM', async () => {
    const flag = path.join(dir, 'ready');
    const tender = await spawnOk(['sh', '-c', `trap "" TERM; : > '${flag}'; exec sleep 30`]);
    await ready(flag);
    const before = Date.now();
    const exit = await tender.stop(400);
    expect(exit).toEqual({ code: null, signal: 'SIGKILL', sentSignal: 'SIGKILL' });
    expect(Date.now() - before).toBeGreaterThanOrEqual(400);
    expect(tender.exited).toBe(true);
  });

  it('concurrent stops share one escalation and one result', async () => {
    const tender = await spawnOk(['sleep', '30']);
    const [a, b] = await Promise.all([tender.stop(5_000), tender.stop(5_000)]);
    expect(a).toEqual({ code: null, signal: 'SIGTERM', sentSignal: 'SIGTERM' });
    expect(b).toBe(a);
  });

  it('records the tender under <run-dir>/tenders/<name> while it runs and drops the record at exit', async () => {
    const tender = await spawnOk(['sleep', '30'], true);
    const listing = value(readPidRecords(dir));
    expect(listing.records.map((r) => [r.pid, r.startTime])).toEqual([[tender.pid, tender.startTime]]);
    const record = listing.records[0];
    if (record === undefined) throw new Error('no record');
    expect(value(checkPidRecord(record))).toBe('alive');
    await tender.stop(5_000);
    expect(await readdir(path.join(dir, 'tenders'))).toEqual([]);
    expect(value(checkPidRecord(record))).toBe('gone');
  });

  it('writes stdout and stderr to the console FIFO', async () => {
    const fifo = value(await makeFifo(dir, name('user:web'))).value;
    // The console opens the read end first, non-blocking, as semantics §8.3 says.
    const reader = new net.Socket({
      fd: openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK),
      readable: true,
    });
    const chunks: Buffer[] = [];
    reader.on('data', (chunk: Buffer) => chunks.push(chunk));
    const ended = new Promise((resolve) => reader.once('end', resolve));
    const tender = value(
      await spawnTender({
        argv: ['sh', '-c', 'echo guest output; echo tender error >&2'],
        console: { fifo },
      }),
    );
    started.push(tender);
    expect((await tender.shutdown).code).toBe(0);
    await ended;
    reader.destroy();
    expect(Buffer.concat(chunks).toString()).toBe('guest output\ntender error\n');
  });

  it('refuses to start without a console reader instead of blocking', async () => {
    const fifo = value(await makeFifo(dir, name('user:web'))).value;
    const error = failure(await spawnTender({ argv: ['sleep', '30'], console: { fifo } }));
    expect(error).toMatchObject({
      code: 'E_TENDER_CONSOLE',
      message: `nobody reads the console fifo ${fifo}`,
    });
    const missing = path.join(dir, 'missing');
    expect(failure(await spawnTender({ argv: ['true'], console: { fifo: missing } })).code).toBe('E_HOST_IO');
  });

  it('refuses a console that is not a FIFO, or a symlink to one', async () => {
    const file = path.join(dir, 'plain');
    writeFileSync(file, '');
    expect(failure(await spawnTender({ argv: ['true'], console: { fifo: file } }))).toMatchObject({
      code: 'E_TENDER_CONSOLE',
      message: `console ${file} is not a fifo`,
    });
    const fifo = value(await makeFifo(dir, name('user:web'))).value;
    const link = path.join(dir, 'link');
    symlinkSync(fifo, link);
    expect(failure(await spawnTender({ argv: ['true'], console: { fifo: link } })).code).toBe(
      'E_HOST_SYMLINK',
    );
  });

  it('reports a program that cannot start', async () => {
    const missing = path.join(dir, 'no-such-tender');
    const error = failure(await spawnTender({ argv: [missing], console: { file: '/dev/null' } }));
    expect(error.code).toBe('E_TENDER_SPAWN');
    expect(error.message).toBe(`could not start ${missing}: ENOENT`);
  });

  it('gives the tender only the environment it is given, and finds the program on that PATH', async () => {
    const out = path.join(dir, 'env');
    const tender = value(
      await spawnTender({
        argv: ['sh', '-c', `env > '${out}'`],
        console: { file: '/dev/null' },
        env: { PATH: '/usr/bin:/bin', ONLY: 'this' },
      }),
    );
    expect((await tender.shutdown).code).toBe(0);
    const lines = readFileSync(out, 'utf8')
      .split('\n')
      .filter((l) => l !== '' && !l.startsWith('PWD=') && !l.startsWith('SHLVL=') && !l.startsWith('_='));
    expect(lines.sort()).toEqual(['ONLY=this', 'PATH=/usr/bin:/bin']);
  });
});

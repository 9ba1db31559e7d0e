import { existsSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeFifo } from '../../src/host/fifo.js';
import { Holder } from '../../src/host/holder.js';
import { checkPidRecord, readPidRecords } from '../../src/host/pidrecord.js';
import { adoptTender, type SpawnOptions, spawnTender, type TenderProcess } from '../../src/tender/process.js';
import { failure, name, tempDir, value } from '../host/helpers.js';

let dir: string;
let cleanup: () => Promise<void>;
let holder: Holder;
const started: TenderProcess[] = [];

beforeEach(async () => {
  ({ dir, cleanup } = await tempDir());
  holder = value(await Holder.connect(path.join(dir, 'holder')));
});
afterEach(async () => {
  // Only the processes these tests started, through their own handles; the holder ends with
  // its directory.
  for (const tender of started.splice(0)) await tender.stop(0);
  holder.close();
  await cleanup();
});

const spawn = (options: Omit<SpawnOptions, 'holder'>) => spawnTender({ holder, ...options });

async function spawnOk(argv: string[], withRecord = false): Promise<TenderProcess> {
  const tender = value(
    await spawn({
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

  it('writes stdout and stderr to the console FIFO, which the holder reads', async () => {
    const fifo = value(await makeFifo(dir, name('user:web'))).value;
    const tender = value(
      await spawn({ argv: ['sh', '-c', 'echo guest output; echo tender error >&2'], console: { fifo } }),
    );
    started.push(tender);
    const chunks: Buffer[] = [];
    tender.console?.onConsole((chunk) => chunks.push(chunk.bytes));
    expect((await tender.shutdown).code).toBe(0);
    expect(Buffer.concat(chunks).toString()).toBe('guest output\ntender error\n');
    const missing = path.join(dir, 'missing');
    expect(failure(await spawn({ argv: ['true'], console: { fifo: missing } })).code).toBe('E_HOST_IO');
  });

  it('is taken over by a later connection with its record, its console and its exit', async () => {
    const fifo = value(await makeFifo(dir, name('user:web'))).value;
    const tender = value(
      await spawn({
        argv: ['sh', '-c', 'echo before; sleep 0.6; echo after; exit 4'],
        console: { fifo },
        record: { runDir: dir, name: name('user:web') },
        tag: 'user:web',
      }),
    );
    const record = tender.record;
    await new Promise((r) => setTimeout(r, 200));
    holder.close();
    holder = value(await Holder.connect(path.join(dir, 'holder')));
    const listed = value(await holder.list());
    expect(listed.map((c) => [c.pid, c.tag, c.exit])).toEqual([[tender.pid, 'user:web', null]]);
    const adopted = await adoptTender(holder, listed[0] as never, record);
    if (adopted === null) throw new Error('not adopted');
    expect(adopted.tender.pid).toBe(tender.pid);
    expect(adopted.tender.startTime).toBe(tender.startTime);
    expect(adopted.console).toEqual({ first: 0, end: 7, acked: 0 });
    const chunks: Buffer[] = [];
    adopted.tender.console?.onConsole((chunk) => chunks.push(chunk.bytes));
    expect(await adopted.tender.shutdown).toEqual({ code: 4, signal: null, sentSignal: null });
    expect(Buffer.concat(chunks).toString()).toBe('before\nafter\n');
    expect(await readdir(path.join(dir, 'tenders'))).toEqual([]);
  });

  it('ends with its holder: the exit says so once the process is gone, and the record is dropped', async () => {
    const tender = await spawnOk(['sleep', '30'], true);
    process.kill(holder.pid, 'SIGKILL');
    expect(await tender.shutdown).toEqual({
      code: null,
      signal: 'SIGKILL',
      sentSignal: null,
      holderLost: true,
    });
    expect(
      existsSync(`/proc/${tender.pid}/cmdline`) && readFileSync(`/proc/${tender.pid}/cmdline`, 'utf8') !== '',
    ).toBe(false);
    expect(await readdir(path.join(dir, 'tenders'))).toEqual([]);
    holder = value(await Holder.connect(path.join(dir, 'holder')));
  });

  it('refuses a console that is not a FIFO, or a symlink to one', async () => {
    const file = path.join(dir, 'plain');
    writeFileSync(file, '');
    expect(failure(await spawn({ argv: ['true'], console: { fifo: file } }))).toMatchObject({
      code: 'E_TENDER_CONSOLE',
      message: `console ${file} is not a fifo`,
    });
    const fifo = value(await makeFifo(dir, name('user:web'))).value;
    const link = path.join(dir, 'link');
    symlinkSync(fifo, link);
    expect(failure(await spawn({ argv: ['true'], console: { fifo: link } })).code).toBe('E_HOST_SYMLINK');
  });

  it('reports a program that cannot start', async () => {
    const missing = path.join(dir, 'no-such-tender');
    const error = failure(await spawn({ argv: [missing], console: { file: '/dev/null' } }));
    expect(error.code).toBe('E_TENDER_SPAWN');
    expect(error.message).toBe(`could not start ${missing}: ENOENT`);
  });

  it('gives the tender only the environment it is given, and finds the program on that PATH', async () => {
    const out = path.join(dir, 'env');
    const tender = value(
      await spawn({
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

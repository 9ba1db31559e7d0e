// Issue 23: a full disk (ENOSPC) or quota (EDQUOT) at every write site of the file layer —
// image staging and its fsync, the move into the store, the journal's write and fdatasync, a
// snapshot's write, fsync and rename on the file thread, a block file's creation and extension,
// a PID record, node.json — injected with its errno in petreld (a separate process,
// PETREL_TEST_WRITE_FAULT, src/host/faults.ts). Each is a clean refusal that changes nothing
// (or, for what petreld only tries, no refusal at all); petreld is then killed (SIGKILL) at once,
// and the next start converges as the crash-point tests (crash.test.ts) check: the state, the
// tenders, the store and the run directory agree, and a create works.
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Command } from '../../src/wire/types.js';
import { request, said } from '../daemon/client.js';
import type { DaemonProcess } from '../daemon/process.js';
import { processTests } from '../daemon/process-tests.js';
import { canaryImage } from './guest.js';
import { canaryConfig, createCommand, makeNetns, storedState } from './harness.js';

const suite = processTests('nospace');
const netns = makeNetns();

afterAll(() => {
  netns.destroy();
});

const startDaemon = (dir: string, fault?: string, extra: readonly string[] = []): Promise<DaemonProcess> =>
  suite.launch(dir, netns.name, {
    flags: ['--runtimes', 'hvt', '--canary-deadline', '10s', ...extra],
    env: fault === undefined ? {} : { PETREL_TEST_WRITE_FAULT: fault },
  });

const create = async (socket: string, vm: string, variant: string): Promise<string> => {
  const image = Buffer.concat([await readFile(canaryImage), Buffer.from(variant)]);
  const command: Command = createCommand(await canaryConfig(canaryImage, ['wait', vm], { image }));
  return said((await request(socket, `:${vm}`, command))[0]);
};

/** What runs and what lies around: tenders, image links, FIFOs, records, state, store, blocks. */
async function observe(dir: string) {
  const run = `${dir}/run`;
  const tenders: string[] = [];
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/u.test(pid)) continue;
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    const image = cmdline.split('\0').find((a) => a.startsWith(`${run}/`) && a.endsWith('.img'));
    if (image) tenders.push(path.basename(image, '.img'));
  }
  const state = await storedState(`${dir}/state`);
  const list = async (d: string) => (await readdir(d).catch(() => [])).sort();
  return {
    tenders: tenders.sort(),
    links: (await list(run)).filter((f) => f.endsWith('.img')).map((f) => path.basename(f, '.img')),
    fifos: (await list(`${run}/fifo`)).filter((f) => !f.startsWith('.spare-')),
    records: await list(`${run}/tenders`),
    stored: state.unikernels.map((u) => `:${u.name.label}`).sort(),
    referenced: [...new Set(state.unikernels.map((u) => u.image.digest))].sort(),
    store: await list(`${dir}/state/images`),
    blocks: await list(`${dir}/state/block`),
  };
}

type Scenario = {
  what: string;
  fault: string;
  /** Runs the command that meets the fault; returns its reply. */
  act: (socket: string) => Promise<string>;
  /** The reply: a refusal naming the errno, or (for what petreld only tries) success. */
  reply: RegExp;
  /** Unikernels committed once it is over (those created before the fault stay). */
  after: readonly string[];
  /** Block device files there once it is over. */
  blocks?: readonly string[];
  flags?: readonly string[];
};

const refused = /ENOSPC|EDQUOT|no space/u;
const createOne = (s: string) => create(s, 'vm', 'one');
/** Creates `:vm` (which must succeed) and destroys it: the destroy's reply. */
const createThenDestroy = async (s: string) => {
  expect(await createOne(s)).toBe('created unikernel');
  return said((await request(s, ':vm', { type: 'unikernel-destroy' }))[0]);
};
const blockAdd = async (s: string) =>
  said((await request(s, ':disk', { type: 'block-add', size: 1 } as Command))[0]);

const scenarios: Scenario[] = [
  { what: 'image staging, a write', fault: 'stage', act: createOne, reply: refused, after: [] },
  { what: 'image staging, its fsync', fault: 'stage-sync=EDQUOT', act: createOne, reply: refused, after: [] },
  { what: 'the move into the store', fault: 'store', act: createOne, reply: refused, after: [] },
  {
    what: 'the journal entry of a create, its write (a torn entry, cut back)',
    fault: 'append:write@/petrel.journal$',
    act: createOne,
    reply: refused,
    after: [],
  },
  {
    what: 'the journal entry of a create, its fdatasync',
    fault: 'append:fdatasync@/petrel.journal$=EDQUOT',
    act: createOne,
    reply: refused,
    after: [],
  },
  ...(['write', 'fsync', 'rename'] as const).map(
    (step): Scenario => ({
      what: `a snapshot of a create on the file thread, its ${step}`,
      fault: `replace:${step}@/petrel.state$`,
      act: createOne,
      reply: refused,
      after: [],
      flags: ['--state-journal-max', '1'],
    }),
  ),
  {
    what: 'a destroy whose journal entry meets a full disk: the reserve gives it room',
    fault: 'append:write@/petrel.journal$#2',
    act: createThenDestroy,
    reply: /^destroyed unikernel$/u,
    after: [],
  },
  {
    what: 'a destroy whose snapshot meets a full disk: the reserve gives it room',
    fault: 'replace:write@/petrel.state$#2',
    act: createThenDestroy,
    reply: /^destroyed unikernel$/u,
    after: [],
    flags: ['--state-journal-max', '1'],
  },
  { what: 'a block file, its creation', fault: 'block-create', act: blockAdd, reply: refused, after: [] },
  { what: 'a block file, its extension', fault: 'block-extend', act: blockAdd, reply: refused, after: [] },
  {
    what: "a block device's new content",
    fault: 'block-data',
    act: async (s) => {
      expect(await blockAdd(s)).toBe('added block device');
      const data = Buffer.alloc(64 * 1024, 7);
      const reply = said(
        (await request(s, ':disk', { type: 'block-set-old', compressed: false, data } as Command))[0],
      );
      // The device keeps its old content (zeros), whole.
      const device = await readFile(path.join(path.dirname(s), '..', '..', 'state', 'block', ':disk'));
      expect(device.length).toBe(1024 * 1024);
      expect(device.every((b) => b === 0)).toBe(true);
      return reply;
    },
    reply: /error writing to file descriptor \(ENOSPC\)$/u,
    after: [],
    blocks: [':disk'],
  },
  {
    what: "a tender's PID record in the run directory",
    fault: 'run-file@tenders/:vm',
    act: createOne,
    // Refused with Albatross' text for a tender that could not be started; its tender killed.
    reply: /^(?!created unikernel$).+/u,
    after: [],
  },
];

describe('ENOSPC and EDQUOT at every write site', () => {
  it.each(scenarios)('$what: a clean refusal, and a SIGKILL after it converges', async (scenario) => {
    const dir = await mkdtemp(path.join(suite.base, 'case-'));
    // A first start writes the state once (the root policy): the fault counts from a later one.
    await (await startDaemon(dir, undefined, scenario.flags)).stop('SIGTERM');
    const first = await startDaemon(dir, scenario.fault, scenario.flags);
    const socket = `${dir}/run/util/vmmd.sock`;
    let second: DaemonProcess | null = null;
    try {
      const reply = await scenario.act(socket);
      expect(reply).toMatch(scenario.reply);
      const before = await observe(dir);
      const created = reply === 'created unikernel' ? [':vm'] : [];
      // A refusal changed nothing: the state, what runs and what lies around agree.
      expect(before.stored).toEqual([...scenario.after, ...created].sort());
      expect(before.tenders).toEqual(before.stored);
      expect(before.links).toEqual(before.stored);
      expect(before.fifos).toEqual(before.stored);
      expect(before.store).toEqual(before.referenced);
      expect(before.blocks).toEqual(scenario.blocks ?? []);
      first.child.kill('SIGKILL');
      await first.exited;

      second = await startDaemon(dir);
      const seen = await observe(dir);
      expect(seen.stored).toEqual(before.stored);
      expect(seen.tenders).toEqual(seen.stored);
      expect(seen.links).toEqual(seen.stored);
      expect(seen.fifos).toEqual(seen.stored);
      expect(seen.records).toEqual(seen.stored);
      expect(seen.store).toEqual(seen.referenced);
      expect(seen.blocks).toEqual(scenario.blocks ?? []);
      expect(await create(socket, 'next', 'next')).toBe('created unikernel');
    } finally {
      await second?.stop();
      await first.stop();
    }
  });

  it('node.json in a full run directory: logged, and petreld starts and serves', async () => {
    const dir = await mkdtemp(path.join(suite.base, 'case-'));
    const d = await startDaemon(dir, 'replace:write@node.json');
    try {
      // The log is written asynchronously: it may arrive just after READY.
      for (let i = 0; i < 100 && !d.stderr().includes('could not write node.json'); i++)
        await new Promise((r) => setTimeout(r, 50));
      expect(d.stderr()).toContain('could not write node.json');
      expect(existsSync(`${dir}/run/node.json`)).toBe(false);
      expect(await create(`${dir}/run/util/vmmd.sock`, 'vm', 'one')).toBe('created unikernel');
    } finally {
      await d.stop();
    }
  });
});

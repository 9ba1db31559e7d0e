import { appendFile, mkdtemp, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { commandFrame, open, request, said, subscribeCommand } from '../daemon/client.js';
import type { DaemonProcess } from '../daemon/process.js';
import { processTests } from '../daemon/process-tests.js';
import { canaryImage, canaryNetImage } from './guest.js';
import { canaryConfig, makeNetns, storedState } from './harness.js';

const suite = processTests('crash');

const startDaemon = (
  dir: string,
  netns: string,
  crashAt?: string,
  extra: readonly string[] = [],
): Promise<DaemonProcess> =>
  suite.launch(dir, netns, {
    flags: ['--canary-deadline', '5s', ...extra],
    env: crashAt ? { PETREL_CRASH_AT: crashAt } : {},
  });

/** What runs and what lies around, from the outside. */
async function observe(dir: string, netns: ReturnType<typeof makeNetns>) {
  const run = `${dir}/run`;
  const tenders: string[] = [];
  const pids = new Map<string, number>();
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    const image = cmdline.split('\0').find((a) => a.startsWith(`${run}/`) && a.endsWith('.img'));
    if (image) {
      tenders.push(path.basename(image, '.img'));
      pids.set(path.basename(image, '.img'), Number(pid));
    }
  }
  const images = (await readdir(run).catch(() => []))
    .filter((f) => f.endsWith('.img'))
    .map((f) => path.basename(f, '.img'));
  const fifos = (await readdir(`${run}/fifo`).catch(() => [])).filter((f) => !f.startsWith('.spare-'));
  const taps = netns
    .links()
    .split(' ')
    .filter((l) => l.startsWith('ptap'));
  const state = await storedState(`${dir}/state`);
  const stored = state.unikernels.map((u) => `:${u.name.label}`);
  // The store holds exactly the images the state names: no orphan, no dangling reference.
  const referenced = [...new Set(state.unikernels.map((u) => u.image.digest))].sort();
  const store = (await readdir(`${dir}/state/images`).catch(() => [])).sort();
  const records = (await readdir(`${run}/tenders`).catch(() => [])).sort();
  return {
    tenders: tenders.sort(),
    pids,
    images: images.sort(),
    fifos: fifos.sort(),
    records,
    taps,
    stored: stored.sort(),
    referenced,
    store,
  };
}

/** A create of the net canary; `variant` appends bytes the tender ignores: another image. */
const create = async (socket: string, vm: string, word: string, force = false, variant = '') =>
  request(socket, vm, {
    type: 'unikernel-create',
    force,
    release: '2.7',
    config: await canaryConfig(canaryNetImage, ['wait', word], {
      bridges: [{ netif: 'service', bridge: 'br0', mac: null }],
      image: Buffer.concat([await readFile(canaryNetImage), Buffer.from(variant)]),
    }),
  });

type Scenario = {
  what: string;
  crashAt: string;
  act: (socket: string) => Promise<unknown>;
  expectRunning: boolean;
  /** A committed tender ran at the crash: the next start takes it over, same process (Petrel (k)). */
  adopted?: boolean;
  /** Flags of the daemon that crashes. */
  flags?: readonly string[];
};

const scenarios: Scenario[] = [
  ...(
    [
      'planned',
      'validated',
      'image-stored',
      'image-linked',
      'fifo-made',
      'jail-taken',
      'tap-created',
      'console-opened',
      'tender-spawned',
      'committed',
    ] as const
  ).map(
    (step): Scenario => ({
      what: `create, at ${step}`,
      crashAt: `:vm@${step}`,
      act: (s) => create(s, ':vm', 'one'),
      expectRunning: false,
    }),
  ),
  {
    what: 'create, after the state file was written',
    crashAt: ':vm@state-written',
    act: (s) => create(s, ':vm', 'one'),
    expectRunning: true,
    adopted: true,
  },
  ...(['old-stopping', 'old-released'] as const).map(
    (step): Scenario => ({
      what: `force-create, at ${step}`,
      crashAt: `:vm@${step}`,
      act: async (s) => {
        await create(s, ':vm', 'one');
        await create(s, ':vm', 'two', true);
      },
      expectRunning: true,
      adopted: step === 'old-stopping',
    }),
  ),
  {
    what: 'force-create, the new tender spawned but not committed',
    crashAt: ':vm@tender-spawned#2',
    act: async (s) => {
      await create(s, ':vm', 'one');
      await create(s, ':vm', 'two', true);
    },
    expectRunning: true,
  },
  {
    what: 'force-create with another image, stored but not committed',
    crashAt: ':vm@image-stored#2',
    act: async (s) => {
      await create(s, ':vm', 'one');
      await create(s, ':vm', 'two', true, 'another image');
    },
    expectRunning: true,
  },
  {
    what: 'force-create with another image, the old one stopped',
    crashAt: ':vm@old-released',
    act: async (s) => {
      await create(s, ':vm', 'one');
      await create(s, ':vm', 'two', true, 'another image');
    },
    expectRunning: true,
  },
  {
    what: 'create, the state compacted into a snapshot, the journal not yet emptied',
    crashAt: ':@compacted#2',
    act: (s) => create(s, ':vm', 'one'),
    expectRunning: true,
    adopted: true,
    flags: ['--state-journal-max', '1'],
  },
  {
    what: 'force-create, the state compacted into a snapshot, the journal not yet emptied',
    // The new record is longer than the whole snapshot, so this commit compacts.
    crashAt: ':@compacted#3',
    act: async (s) => {
      await create(s, ':vm', 'one');
      await create(s, ':vm', `two-${'x'.repeat(300)}`, true);
    },
    expectRunning: true,
    adopted: true,
    flags: ['--state-journal-max', '1'],
  },
  ...(['stopped', 'state-written#2'] as const).map(
    (step): Scenario => ({
      what: `destroy, at ${step}`,
      crashAt: `:vm@${step}`,
      act: async (s) => {
        await create(s, ':vm', 'one');
        await request(s, ':vm', { type: 'unikernel-destroy' });
      },
      expectRunning: step === 'stopped',
    }),
  ),
];

describe('a crash at any step converges to the last committed state', () => {
  it.each(scenarios)('$what', async ({ crashAt, act, expectRunning, adopted, flags }) => {
    const dir = await mkdtemp(path.join(suite.base, 'case-'));
    const netns = makeNetns();
    try {
      const first = await startDaemon(dir, netns.name, crashAt, flags);
      const socket = `${dir}/run/util/vmmd.sock`;
      await act(socket).catch(() => undefined);
      expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' });
      // A tender the holder reported is exec'd, but for a moment of its execve (the jailer's
      // exec of the tender) its cmdline reads empty: wait until every PID record's tender shows.
      let atCrash = await observe(dir, netns);
      for (let tries = 0; tries < 100 && atCrash.tenders.length < atCrash.records.length; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        atCrash = await observe(dir, netns);
      }

      const second = await startDaemon(dir, netns.name);
      try {
        const seen = await observe(dir, netns);
        const expected = expectRunning ? [':vm'] : [];
        expect(seen.stored).toEqual(expected);
        expect(seen.tenders).toEqual(expected);
        expect(seen.images).toEqual(expected);
        expect(seen.fifos).toEqual(expected);
        expect(seen.records).toEqual(expected);
        expect(seen.taps).toHaveLength(expected.length);
        // A committed guest is never restarted by the daemon's crash; anything else is new.
        if (adopted) {
          expect(seen.pids.get(':vm')).toBe(atCrash.pids.get(':vm'));
          expect(seen.taps).toEqual(atCrash.taps);
        } else if (expectRunning) {
          expect(seen.pids.get(':vm')).not.toBe(atCrash.pids.get(':vm'));
        }
        expect(seen.store).toEqual(seen.referenced);
        expect(seen.store).toHaveLength(expected.length);
        const info = await request(socket, ':', { type: 'unikernel-info', release: '2.7' });
        const listed =
          info[0]?.payload.kind === 'reply' && info[0].payload.reply.type === 'unikernel-info'
            ? info[0].payload.reply.entries.length
            : -1;
        expect(listed).toBe(expected.length);
      } finally {
        await second.stop();
      }
      const after = await observe(dir, netns);
      expect(after.tenders).toEqual([]);
      expect(after.taps).toEqual([]);
    } finally {
      netns.destroy();
    }
  });

  it('a crash while start-up compacts the state: the next start has the same state', async () => {
    const dir = await mkdtemp(path.join(suite.base, 'case-'));
    const netns = makeNetns();
    try {
      const socket = `${dir}/run/util/vmmd.sock`;
      const first = await startDaemon(dir, netns.name);
      expect((await create(socket, ':vm', 'one')).map(said)).toEqual(['created unikernel']);
      await first.stop();
      // A start writes the state only when it must (issue 23): a torn journal tail makes it.
      await appendFile(`${dir}/state/petrel.journal`, Buffer.from([0x00, 0x00, 0x01]));
      await expect(startDaemon(dir, netns.name, ':@compacted')).rejects.toThrow(/exited/);
      const third = await startDaemon(dir, netns.name);
      try {
        const seen = await observe(dir, netns);
        expect(seen.stored).toEqual([':vm']);
        expect(seen.tenders).toEqual([':vm']);
        expect(seen.store).toEqual(seen.referenced);
        expect(seen.store).toHaveLength(1);
      } finally {
        await third.stop();
      }
    } finally {
      netns.destroy();
    }
  });

  it('the canary line is served while a session is open (sanity of the harness)', async () => {
    const dir = await mkdtemp(path.join(suite.base, 'case-'));
    const netns = makeNetns();
    try {
      const d = await startDaemon(dir, netns.name);
      const socket = `${dir}/run/util/vmmd.sock`;
      expect((await create(socket, ':vm', 'x')).map(said)).toEqual(['created unikernel']);
      const watch = open(
        `${dir}/run/util/console.sock`,
        commandFrame(':vm', subscribeCommand({ kind: 'count', count: 5 })),
      );
      await watch.waitFor(2);
      watch.close();
      await d.stop();
      void canaryImage;
    } finally {
      netns.destroy();
    }
  });
});

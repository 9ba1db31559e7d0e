// Issue 23, the run directory: petreld (a separate process) with its run directory on a tmpfs of
// 1 MiB the test mounts (ENOSPC is the kernel's own). Two guests run; petreld is killed and the
// run directory filled; petreld starts on it all the same (a WARN names the run directory and
// its bytes free, the boot canary is not run, and says so), adopts both with their pids, serves
// info, console and destroy; a create is refused naming the space, leaving nothing behind; once
// there is room a create works. A first start on a full run directory (no holder running, as
// after a reboot: the holder starts with a log it cannot write) serves the same. ENOSPC is
// injected where a tmpfs would not meet it (a FIFO is an inode, no data): at the FIFO's creation (petreld's call site of mkfifo) and the PID record,
// each a clean refusal naming the space; a canary that meets it is a WARN, while a canary that
// fails for another reason (EIO injected at its FIFO) still stops the start.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, open, readdir, rm, statfs } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { canaryImage } from '../engine/guest.js';
import { canaryConfig, createCommand, makeNetns, storedState } from '../engine/harness.js';
import { commandFrame, open as openSession, request, said, subscribeCommand } from './client.js';
import { tenderPids, unikernelLabels } from './guests.js';
import type { DaemonProcess } from './process.js';
import { processTests } from './process-tests.js';

const suite = processTests('runfull');
const netns = makeNetns();

// Daemons still running when a test ended, stopped with their guests.
afterEach(() => suite.stopRunning());
afterAll(() => {
  netns.destroy();
});

const start = (dir: string, env: NodeJS.ProcessEnv = {}): Promise<DaemonProcess> =>
  suite.launch(dir, netns.name, {
    flags: ['--runtimes', 'hvt', '--canary-deadline', '10s'],
    env,
    readyMs: 60_000,
  });

/** Writes a file until the file system says ENOSPC: the run directory is then really full. */
async function fill(file: string): Promise<void> {
  const handle = await open(file, 'w');
  try {
    for (;;) await handle.write(Buffer.alloc(4096, 1));
  } catch (cause) {
    expect((cause as NodeJS.ErrnoException).code).toBe('ENOSPC');
  } finally {
    await handle.close();
  }
}

const create = async (socket: string, vm: string) =>
  said((await request(socket, `:${vm}`, createCommand(await canaryConfig(canaryImage, ['wait', vm]))))[0]);

/** petreld's log once it holds `text` (pino writes it asynchronously: it may come after READY). */
async function logged(daemon: DaemonProcess, text: string): Promise<string> {
  for (let i = 0; i < 100 && !daemon.stderr().includes(text); i++)
    await new Promise((r) => setTimeout(r, 50));
  return daemon.stderr();
}

/** Pids of processes whose command line names `file` (the holder of a run directory). */
function processesOn(file: string): number[] {
  const found: number[] = [];
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/u.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes(file)) found.push(Number(pid));
    } catch {
      // gone
    }
  }
  return found;
}

/** What a unikernel leaves in the run and state directories: links, FIFOs, PID records, images. */
async function leftBehind(dir: string) {
  const names = async (at: string) =>
    (await readdir(at).catch(() => [] as string[])).filter((f) => !f.startsWith('.')).sort();
  return {
    links: (await names(`${dir}/run`)).filter((f) => f.endsWith('.img')),
    fifos: await names(`${dir}/run/fifo`),
    records: await names(`${dir}/run/tenders`),
    images: await names(`${dir}/state/images`),
    stored: (await storedState(`${dir}/state`)).unikernels.map((u) => u.name.label).sort(),
  };
}

/** A console line of `vm` carrying `word`, through a console subscription. */
async function prints(run: string, vm: string, word: string): Promise<void> {
  const watch = openSession(
    `${run}/util/console.sock`,
    commandFrame(`:${vm}`, subscribeCommand({ kind: 'count', count: 100 })),
  );
  try {
    const deadline = Date.now() + 10_000;
    const text = () =>
      watch.messages
        .flatMap((m) =>
          m.payload.kind === 'data' && m.payload.data.type === 'console'
            ? [Buffer.from(m.payload.data.line).toString()]
            : [],
        )
        .join('\n');
    while (!text().includes(word) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(text(), `${vm}'s console`).toContain(word);
  } finally {
    watch.close();
  }
}

const NOSPACE = (run: string) =>
  new RegExp(
    `could not create unikernel: no space in the run directory ${run}: \\d+ bytes free, 16384 needed`,
  );

describe('a full run directory', () => {
  it('petreld starts on it, adopts and serves its guests, refuses a create by the space, and creates once there is room', async () => {
    const { dir, mount: run } = await suite.caseOnTmpfs('run', '1m');
    const socket = `${run}/util/vmmd.sock`;
    const filler = `${run}/filler`;
    let daemon: DaemonProcess | null = null;
    try {
      daemon = await start(dir);
      for (const vm of ['a', 'b']) expect(await create(socket, vm)).toBe('created unikernel');
      const pids = await tenderPids(run);
      expect(Object.keys(pids).sort()).toEqual([':a', ':b']);
      daemon.child.kill('SIGKILL');
      await daemon.exited;
      await fill(filler);
      expect(Number((await statfs(run)).bavail)).toBe(0);

      daemon = await start(dir);
      // What may fail is said, naming the run directory and its bytes free.
      const log = await logged(daemon, 'boot canary not run');
      expect(log).toMatch(
        new RegExp(`"check":"runFree","status":"WARN","detail":"0 bytes free in the run directory ${run}`),
      );
      expect(log).toContain('boot canary not run: no space in the run directory');
      expect(await unikernelLabels(socket)).toEqual(['a', 'b']);
      expect(await tenderPids(run)).toEqual(pids);
      await prints(run, 'a', 'petrel-canary a');

      const before = await leftBehind(dir);
      expect(await create(socket, 'c')).toMatch(NOSPACE(run));
      expect(await leftBehind(dir)).toEqual(before);
      expect(await unikernelLabels(socket)).toEqual(['a', 'b']);

      expect(said((await request(socket, ':a', { type: 'unikernel-destroy' }))[0])).toBe(
        'destroyed unikernel',
      );
      expect(await unikernelLabels(socket)).toEqual(['b']);
      await rm(filler);
      expect(await create(socket, 'c')).toBe('created unikernel');
      expect(await unikernelLabels(socket)).toEqual(['b', 'c']);
      await prints(run, 'c', 'petrel-canary c');
    } finally {
      // Its guests stopped (a petreld on the emptied directory stops them), then unmounted.
      await rm(filler, { force: true });
      if (daemon === null || daemon.child.exitCode !== null || daemon.child.signalCode !== null)
        daemon = await start(dir).catch(() => null);
      await daemon?.stop('SIGUSR2');
      // The holder (this test's petreld started it) leaves once its last tender is gone.
      for (let i = 0; i < 100 && processesOn(`${run}/holder`).length > 0; i++)
        await new Promise((r) => setTimeout(r, 50));
      execFileSync('umount', [run]);
    }
  }, 120_000);

  it('a first start on a full run directory (no holder yet: its log cannot be written) serves and refuses creates by the space', async () => {
    const { dir, mount: run } = await suite.caseOnTmpfs('run', '1m');
    const socket = `${run}/util/vmmd.sock`;
    let daemon: DaemonProcess | null = null;
    try {
      // As after a host reboot: the directories exist, no holder runs, the disk is full.
      await (await start(dir)).stop('SIGUSR2');
      for (let i = 0; i < 100 && processesOn(`${run}/holder`).length > 0; i++)
        await new Promise((r) => setTimeout(r, 50));
      expect(processesOn(`${run}/holder`)).toEqual([]);
      await fill(`${run}/filler`);
      daemon = await start(dir);
      expect(await logged(daemon, 'boot canary not run')).toContain('no space in the run directory');
      expect(processesOn(`${run}/holder`)).toHaveLength(1);
      expect(await unikernelLabels(socket)).toEqual([]);
      expect(await create(socket, 'vm')).toMatch(NOSPACE(run));
      expect(await leftBehind(dir)).toMatchObject({ links: [], fifos: [], records: [], stored: [] });
    } finally {
      await daemon?.stop('SIGUSR2');
      for (let i = 0; i < 100 && processesOn(`${run}/holder`).length > 0; i++)
        await new Promise((r) => setTimeout(r, 50));
      execFileSync('umount', [run]);
    }
  }, 120_000);

  it.each([
    ['the FIFO (mkfifo through petrel-spawner: injected at its call site)', 'fifo@fifo/:vm$'],
    ["the tender's PID record", 'run-file@tenders/:vm$'],
  ])(
    'ENOSPC at %s: the create is refused naming the space, nothing left behind',
    async (_what, fault) => {
      const dir = await mkdtemp(path.join(suite.base, 'case-'));
      // The fault counts from the first create of that name: the canary's FIFO is another name.
      const daemon = await start(dir, { PETREL_TEST_WRITE_FAULT: fault });
      const socket = `${dir}/run/util/vmmd.sock`;
      const before = await leftBehind(dir);
      expect(await create(socket, 'vm')).toMatch(NOSPACE(`${dir}/run`));
      expect(await leftBehind(dir)).toEqual(before);
      expect(await tenderPids(`${dir}/run`)).toEqual({});
      expect(await unikernelLabels(socket)).toEqual([]);
      // The next one (the fault was the first only) is created.
      expect(await create(socket, 'vm')).toBe('created unikernel');
      await daemon.stop('SIGUSR2');
    },
    60_000,
  );

  it("the canary's ENOSPC in the run directory is a WARN and petreld serves; any other canary failure refuses the start", async () => {
    const dir = await mkdtemp(path.join(suite.base, 'case-'));
    const socket = `${dir}/run/util/vmmd.sock`;
    const daemon = await start(dir, { PETREL_TEST_WRITE_FAULT: 'fifo@.petrel-canary=ENOSPC' });
    expect(await logged(daemon, 'boot canary not run')).toContain(
      'boot canary not run: no space in the run directory',
    );
    expect(await create(socket, 'vm')).toBe('created unikernel');
    await daemon.stop('SIGUSR2');
    await expect(start(dir, { PETREL_TEST_WRITE_FAULT: 'fifo@.petrel-canary=EIO' })).rejects.toThrow(
      /boot canary failed/,
    );
  }, 60_000);
});

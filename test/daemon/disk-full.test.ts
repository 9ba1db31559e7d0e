// Issue 23 from the outside: petreld (a separate process) with its state directory on a tmpfs of
// 16 MiB the test mounts (ENOSPC is the kernel's own). Creates fill it until one is refused with
// a message naming the space; the test fills what is left; petreld is killed (SIGKILL) and
// started again on the full disk: it starts, lists every unikernel it said it created, their
// tenders keep their pids; two destroys commit (the reserve), and a create fits again; the store
// holds exactly the images the state names (the first destroy's journal entry meets ENOSPC by
// injection, since on tmpfs an entry that fits the file's last page needs no space). EDQUOT (tmpfs quotas need a newer kernel than
// bookworm's) is injected at the journal's write with its errno and refused the same way.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, open, readdir, readFile, stat, statfs } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { chunkFrames } from '../../src/wire/framing.js';
import { canaryImage } from '../engine/guest.js';
import { canaryConfig, createCommand, makeNetns, storedState } from '../engine/harness.js';
import { commandFrame, open as openSession, request, said } from './client.js';
import { tenderPids, unikernelLabels } from './guests.js';
import type { DaemonProcess } from './process.js';
import { processTests } from './process-tests.js';

const MIB = 1024 * 1024;
const IMAGE_BYTES = 2 * MIB;
const suite = processTests('diskfull');
let canary: Buffer;
const netns = makeNetns();

beforeAll(async () => {
  canary = await readFile(canaryImage);
});
/** Mounted tmpfs directories, unmounted after each test. */
const mounted: string[] = [];
afterEach(async () => {
  // Daemons still running when a test ended (a timeout), stopped with their guests.
  await suite.stopRunning();
  for (const dir of mounted.splice(0)) execFileSync('umount', [dir]);
});
afterAll(() => {
  netns.destroy();
});

const reserve = ['--state-reserve', String(MIB), '--state-min-free', String(MIB / 2)];
const start = (dir: string, env: NodeJS.ProcessEnv = {}): Promise<DaemonProcess> =>
  suite.launch(dir, netns.name, {
    flags: ['--runtimes', 'hvt', '--canary-deadline', '10s', ...reserve],
    env,
    readyMs: 60_000,
  });

/** The canary followed by bytes that differ for every `seed` (the tender ignores them). */
function imageOf(seed: string): Buffer {
  const tail = Buffer.alloc(IMAGE_BYTES - canary.length);
  let block = createHash('sha256').update(seed).digest();
  for (let at = 0; at < tail.length; at += block.length) {
    block.copy(tail, at);
    block = createHash('sha256').update(block).digest();
  }
  return Buffer.concat([canary, tail]);
}

/** Writes a file until the file system says ENOSPC: the disk is then really full. */
async function fill(file: string): Promise<void> {
  const handle = await open(file, 'w');
  const piece = Buffer.alloc(64 * 1024, 1);
  try {
    for (;;) await handle.write(piece);
  } catch (cause) {
    expect((cause as NodeJS.ErrnoException).code).toBe('ENOSPC');
  } finally {
    await handle.close();
  }
  // What is left is less than a page or so: fill that too, a byte at a time.
  const tail = await open(file, 'a');
  try {
    for (let i = 0; i < 8192; i++) await tail.write(Buffer.alloc(512, 1));
  } catch {
    // full
  } finally {
    await tail.close();
  }
}

const create = async (socket: string, vm: string, seed: string) =>
  request(
    socket,
    `:${vm}`,
    createCommand(await canaryConfig(canaryImage, ['wait', vm], { image: imageOf(seed) })),
  );

/** The digests the committed state names, and the files of the store, sorted. */
async function storeAndState(state: string): Promise<{ store: string[]; named: string[] }> {
  const store = (await readdir(`${state}/images`)).sort();
  const named = [...new Set((await storedState(state)).unikernels.map((u) => u.image.digest))].sort();
  return { store, named };
}

describe('a full state directory', () => {
  it('refuses creates by name, and after a SIGKILL petreld starts on the full disk, adopts, destroys and creates again', async () => {
    const { dir, mount: state } = await suite.caseOnTmpfs('state', '16m');
    // Undone even when the test times out (a finally block would not run then).
    mounted.push(state);
    const socket = `${dir}/run/util/vmmd.sock`;
    let daemon: DaemonProcess | null = null;
    try {
      daemon = await start(dir);
      const created: string[] = [];
      let refusal = '';
      for (let i = 0; i < 16 && refusal === ''; i++) {
        const answer = await create(socket, `vm${i}`, `image ${i}`);
        if (said(answer[0]) === 'created unikernel') created.push(`vm${i}`);
        else refusal = said(answer[0]);
      }
      expect(created.length).toBeGreaterThanOrEqual(4);
      // The refusal names the directory, what is free and what was needed.
      expect(refusal).toMatch(
        new RegExp(`no space in the state directory ${state}: \\d+ bytes free, ${IMAGE_BYTES} needed`),
      );
      const refusedAt = await storeAndState(state);
      expect(refusedAt.store).toEqual(refusedAt.named);
      expect(refusedAt.named).toHaveLength(created.length);
      expect((await readdir(`${state}/images`)).filter((f) => f.startsWith('.'))).toEqual([]);
      // An image that streams in (its size unknown) is refused once the floor would be reached.
      const streamed = await canaryConfig(canaryImage, ['wait', 's'], { image: imageOf('streamed') });
      const exchange = openSession(
        socket,
        commandFrame(':streamed', createCommand({ ...streamed, image: new Uint8Array(0) })),
      );
      for (const chunk of chunkFrames(streamed.image)) exchange.write(chunk);
      await exchange.waitFor(1, 30_000);
      await exchange.closed;
      expect(said(exchange.messages[0])).toMatch(
        new RegExp(`image stream does not fit: no space in the state directory ${state}: \\d+ bytes free`),
      );
      expect(await unikernelLabels(socket)).toEqual([...created].sort());
      expect((await readdir(`${state}/images`)).filter((f) => f.startsWith('.'))).toEqual([]);
      // A block device of known size that cannot fit is refused before a file is made.
      const block = said((await request(socket, ':disk', { type: 'block-add', size: 8 }))[0]);
      expect(block).toMatch(
        new RegExp(`no space in the state directory ${state}: \\d+ bytes free, ${8 * MIB} needed`),
      );
      expect(await readdir(`${state}/block`)).toEqual([]);

      // Nothing is left of it, and the disk is now full for real.
      await fill(`${state}/filler`);
      expect(Number((await statfs(state)).bavail)).toBe(0);
      const pids = await tenderPids(`${dir}/run`);
      expect(Object.keys(pids).sort()).toEqual(created.map((n) => `:${n}`).sort());
      const stateFiles = async () =>
        Promise.all(
          ['petrel.state', 'petrel.journal'].map(async (f) => {
            const st = await stat(`${state}/${f}`).catch(() => null);
            return st === null ? null : { f, size: st.size, mtime: st.mtimeMs };
          }),
        );
      const filesBefore = await stateFiles();
      daemon.child.kill('SIGKILL');
      await daemon.exited;

      // On tmpfs a journal entry that fits the last page of the file needs no new page: the
      // first append of this start meets ENOSPC by injection, so the reserve is used for sure.
      daemon = await start(dir, { PETREL_TEST_WRITE_FAULT: 'append:write@petrel.journal=ENOSPC#1' });
      expect(await unikernelLabels(socket)).toEqual([...created].sort());
      expect(await tenderPids(`${dir}/run`)).toEqual(pids);
      // A start that adopts every guest leaves the state files as they were.
      expect(await stateFiles()).toEqual(filesBefore);

      // Two destroys commit on the full disk (the reserve), and free their images.
      for (const vm of created.slice(0, 2)) {
        expect(said((await request(socket, `:${vm}`, { type: 'unikernel-destroy' }))[0])).toBe(
          'destroyed unikernel',
        );
      }
      // The first destroy's journal entry met ENOSPC and was written once the reserve went.
      for (let i = 0; i < 100 && !daemon.stderr().includes('the reserve is given up'); i++)
        await new Promise((r) => setTimeout(r, 50));
      expect(daemon.stderr()).toContain('the reserve is given up for a freeing command');
      const kept = created.slice(2);
      expect(await unikernelLabels(socket)).toEqual([...kept].sort());
      const answer = await create(socket, 'again', 'image again');
      expect(said(answer[0])).toBe('created unikernel');
      const { store, named } = await storeAndState(state);
      expect(store).toEqual(named);
      expect(named).toHaveLength(kept.length + 1);

      // The state as stored says the same after one more SIGKILL and start.
      daemon.child.kill('SIGKILL');
      await daemon.exited;
      daemon = await start(dir);
      expect(await unikernelLabels(socket)).toEqual([...kept, 'again'].sort());
    } finally {
      await daemon?.stop('SIGUSR2');
    }
  }, 300_000);

  it('EDQUOT at the journal is a refusal that changes nothing, and a SIGKILL after it converges', async () => {
    const dir = await mkdtemp(path.join(suite.base, 'case-'));
    const socket = `${dir}/run/util/vmmd.sock`;
    let daemon: DaemonProcess | null = null;
    try {
      daemon = await start(dir, { PETREL_TEST_WRITE_FAULT: 'append:write@petrel.journal=EDQUOT#1' });
      const refused = await create(socket, 'quota', 'image quota');
      expect(said(refused[0])).toMatch(/EDQUOT/u);
      expect(await unikernelLabels(socket)).toEqual([]);
      expect((await storedState(`${dir}/state`)).unikernels).toEqual([]);
      daemon.child.kill('SIGKILL');
      await daemon.exited;
      daemon = await start(dir);
      expect(await unikernelLabels(socket)).toEqual([]);
      expect(await tenderPids(`${dir}/run`)).toEqual({});
      expect(await readdir(`${dir}/state/images`)).toEqual([]);
      expect(said((await create(socket, 'quota', 'image quota'))[0])).toBe('created unikernel');
    } finally {
      await daemon?.stop('SIGUSR2');
    }
  }, 120_000);
});

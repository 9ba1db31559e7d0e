// petrel-holder and its client: tenders that outlive the connection, their consoles kept with
// running offsets, exits remembered until forgotten, and tenders that die with the holder.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { connect } from 'node:net';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeFifo } from '../../src/host/fifo.js';
import { type ConsoleChunk, type HeldChild, type HeldSpawnRequest, Holder } from '../../src/host/holder.js';
import { frame } from '../../src/host/spawner.js';
import { name, tempDir, value } from './helpers.js';

let dir: string;
let cleanup: () => Promise<void>;
const holders: Holder[] = [];
const pids: number[] = [];

beforeEach(async () => {
  ({ dir, cleanup } = await tempDir());
});
afterEach(async () => {
  // The holders these tests started end with their directory (their watchdog), taking their
  // tenders: removing it is the whole cleanup. Wait for it, so nothing outlives the test.
  for (const holder of holders.splice(0)) holder.close();
  await cleanup();
  for (const pid of pids.splice(0)) await gone(pid, 5_000);
});

const env = { PATH: '/usr/bin:/bin' };
const holderDir = () => path.join(dir, 'holder');

async function attach(options: { idleExitMs?: number } = {}): Promise<Holder> {
  const holder = value(await Holder.connect(holderDir(), options));
  holders.push(holder);
  if (!pids.includes(holder.pid)) pids.push(holder.pid);
  return holder;
}

async function fifo(label: string): Promise<string> {
  return value(await makeFifo(dir, name(`:${label}`))).value;
}

async function start(
  holder: Holder,
  script: string,
  options: { bufferBytes?: number; tag?: string; meta?: string; label?: string } = {},
): Promise<HeldChild> {
  const request: HeldSpawnRequest = {
    argv: ['sh', '-c', script],
    env,
    console: {
      kind: 'fifo',
      path: await fifo(options.label ?? `c${pids.length}`),
      ...(options.bufferBytes === undefined ? {} : { bufferBytes: options.bufferBytes }),
    },
    tag: options.tag ?? ':vm',
    ...(options.meta === undefined ? {} : { meta: options.meta }),
  };
  const spawned = await holder.spawn(request);
  if (!spawned.ok) throw new Error(JSON.stringify(spawned.error));
  pids.push(spawned.value.pid);
  return spawned.value;
}

/** Everything a console delivered, checked to be contiguous from `from`. */
function collect(child: HeldChild, from = 0, each?: (chunk: ConsoleChunk) => void) {
  const chunks: ConsoleChunk[] = [];
  child.onConsole((chunk) => {
    each?.(chunk);
    chunks.push(chunk);
  });
  return {
    chunks,
    text(): string {
      let at = from;
      for (const chunk of chunks) {
        expect(chunk.offset).toBe(at);
        at += chunk.bytes.length;
      }
      return Buffer.concat(chunks.map((c) => c.bytes)).toString();
    },
  };
}

function alive(pid: number): boolean {
  try {
    const state = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0];
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

async function gone(pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (alive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
  return true;
}

async function until(check: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

const seq = (from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, i) => `${from + i}\n`).join('');

describe('petrel-holder', () => {
  it('is started on first use; a console arrives with running offsets, then the exit status', async () => {
    const holder = await attach();
    expect(alive(holder.pid)).toBe(true);
    const child = await start(holder, 'for i in 1 2 3; do echo line $i; done; echo oops >&2; exit 3');
    const console = collect(child);
    const exit = await child.exit;
    expect(exit).toMatchObject({ code: 3, signal: null, holderLost: false });
    expect(exit.at).toBeInstanceOf(Date);
    expect(console.text()).toBe('line 1\nline 2\nline 3\noops\n');
    expect(console.chunks.every((c) => Math.abs(c.time - Date.now()) < 60_000)).toBe(true);
  });

  it('has one petreld at a time: another connection is refused, naming the attached one', async () => {
    await attach();
    const second = await Holder.connect(holderDir(), { timeoutMs: 2_000 });
    expect(second.ok).toBe(false);
    if (!second.ok) expect(second.error.message).toContain(`another petreld (pid ${process.pid})`);
  });

  it('keeps tenders running without a connection; a new one lists them and replays their consoles', async () => {
    const first = await attach();
    const child = await start(first, 'i=0; while :; do i=$((i+1)); echo n$i; sleep 0.02; done', {
      tag: ':counter',
      meta: '{"taps":["ptap1"]}',
    });
    const before = collect(child);
    await until(() => before.text().includes('n5\n'));
    const handled = before.text().lastIndexOf('\n') + 1;
    child.ack(handled);
    first.close();
    await new Promise((r) => setTimeout(r, 300));
    expect(alive(child.pid)).toBe(true);

    const second = await attach();
    const listed = value(await second.list());
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({
      pid: child.pid,
      exit: null,
      exitedAt: null,
      tag: ':counter',
      meta: '{"taps":["ptap1"]}',
      console: { first: 0, acked: handled },
    });
    expect(listed[0]?.console.end).toBeGreaterThan(handled);
    const watched = await second.watch(child.pid);
    if (watched === null) throw new Error('not held');
    expect(watched.console).toMatchObject({ first: 0, acked: handled });
    const after = collect(watched.child);
    await until(() => after.text().includes('n40\n'));
    const numbers = after
      .text()
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => Number(l.slice(1)));
    expect(numbers.slice(0, 40)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    watched.child.kill('SIGTERM');
    expect(await watched.child.exit).toMatchObject({ code: null, signal: 'SIGTERM' });
  });

  it('with nobody attached keeps the last bytes of a console; the offsets show what was dropped', async () => {
    const first = await attach();
    const child = await start(first, 'sleep 0.3; seq 1 3000; exec sleep 30', { bufferBytes: 1024 });
    first.close();
    const total = seq(1, 3000).length;
    await new Promise((r) => setTimeout(r, 1_000));
    const second = await attach();
    const watched = await second.watch(child.pid);
    if (watched === null) throw new Error('not held');
    expect(watched.console).toEqual({ first: total - 1024, end: total, acked: 0 });
    const replay = collect(watched.child, total - 1024);
    await until(() => replay.chunks.length > 0 && replay.text().length === 1024);
    expect(replay.text()).toBe(seq(1, 3000).slice(total - 1024));
    watched.child.kill('SIGKILL');
    await watched.child.exit;
  });

  it('drops nothing while attached, however small its buffer: the tender waits', async () => {
    const holder = await attach();
    const child = await start(holder, 'seq 1 100000', { bufferBytes: 4096 });
    const console = collect(child);
    // petreld busy for a while: the socket fills, and the holder must not read over unsent bytes.
    const busyUntil = Date.now() + 500;
    while (Date.now() < busyUntil);
    expect((await child.exit).code).toBe(0);
    expect(console.text()).toBe(seq(1, 100000));
  });

  it('stops reading a paused console until it is resumed', async () => {
    const holder = await attach();
    const child = await start(holder, 'seq 1 300000', { bufferBytes: 4096 });
    const console = collect(child);
    child.pause();
    await new Promise((r) => setTimeout(r, 200));
    const seen = console.chunks.length;
    await new Promise((r) => setTimeout(r, 300));
    expect(console.chunks.length).toBe(seen);
    expect(child.exited).toBe(false);
    child.resume();
    expect((await child.exit).code).toBe(0);
    expect(console.text()).toBe(seq(1, 300000));
  });

  it('serves many consoles at once: only what is ready is read, nothing is lost or reordered', async () => {
    // The holder waits on the consoles that may be read and visits the children that have
    // something for petreld: a console left out of the wait after its ring filled, or after a
    // pause, would hang its tender; a child left out of the owner's queue would lose bytes or
    // its exit. 200 children: some write a lot through a small ring (reading stops and starts
    // as the ring is sent), some a little, some nothing, some are killed while others write;
    // one is paused before its first byte, one on its first chunk (flow control), and both are
    // resumed after all the others have ended.
    const holder = await attach();
    const flag = path.join(dir, 'go');
    const paused = await start(holder, `while [ ! -e ${flag} ]; do sleep 0.01; done; seq 1 60000; exit 77`, {
      bufferBytes: 4096,
      label: 'paused',
    });
    const pausedConsole = collect(paused);
    paused.pause();
    value(await holder.list()); // answered after the pause was handled
    writeFileSync(flag, '');
    const midway = await start(holder, 'seq 1 400000; exit 78', { bufferBytes: 4096, label: 'midway' });
    // A flag, not midwayConsole.chunks: the first chunk may already be here, and be handed
    // over inside collect(), before midwayConsole exists.
    let first = true;
    const midwayConsole = collect(midway, 0, () => {
      if (first) midway.pause();
      first = false;
    });

    const count = 200;
    const kinds = ['big', 'small', 'silent', 'killed'] as const;
    const spawned = await Promise.all(
      Array.from({ length: count }, async (_, i) => {
        const kind = kinds[i % kinds.length] as (typeof kinds)[number];
        const lines = kind === 'big' ? 3000 + 10 * i : kind === 'small' ? 1 + (i % 7) : 0;
        const body =
          kind === 'killed'
            ? 'exec sleep 30'
            : `sleep 0.0${i % 10}; ${lines > 0 ? `seq 1 ${lines}; ` : ''}exit ${i % 100}`;
        const fifoPath = await fifo(`many${i}`);
        const answer = await holder.spawn({
          argv: ['sh', '-c', body],
          env,
          console: { kind: 'fifo', path: fifoPath, ...(kind === 'big' ? { bufferBytes: 1024 } : {}) },
          tag: `:many${i}`,
        });
        if (!answer.ok) throw new Error(JSON.stringify(answer.error));
        pids.push(answer.value.pid);
        return { i, kind, lines, child: answer.value, console: collect(answer.value) };
      }),
    );
    for (const { kind, child } of spawned) if (kind === 'killed') child.kill('SIGTERM');
    for (const { i, kind, lines, child, console } of spawned) {
      const exit = await child.exit;
      if (kind === 'killed') {
        expect(exit).toMatchObject({ code: null, signal: 'SIGTERM' });
        expect(console.text()).toBe('');
      } else {
        expect(exit).toMatchObject({ code: i % 100, signal: null });
        expect(console.text()).toBe(lines > 0 ? seq(1, lines) : '');
      }
    }

    // All the others have ended; the paused tenders are stuck on their full FIFOs.
    expect(pausedConsole.chunks).toEqual([]);
    expect(midwayConsole.chunks.length).toBeGreaterThan(0);
    expect(midwayConsole.text().length).toBeLessThan(seq(1, 400000).length);
    for (const child of [paused, midway]) {
      expect(child.exited).toBe(false);
      expect(alive(child.pid)).toBe(true);
      child.resume();
    }
    expect(await paused.exit).toMatchObject({ code: 77, signal: null });
    expect(pausedConsole.text()).toBe(seq(1, 60000));
    expect(await midway.exit).toMatchObject({ code: 78, signal: null });
    expect(midwayConsole.text()).toBe(seq(1, 400000));
  }, 60_000);

  it('remembers an exit while nobody is attached, until it is forgotten', async () => {
    const first = await attach();
    const child = await start(first, 'sleep 0.2; echo bye; exit 5');
    first.close();
    await gone(child.pid, 5_000);
    await new Promise((r) => setTimeout(r, 100));
    const second = await attach();
    const listed = value(await second.list());
    expect(listed).toMatchObject([{ pid: child.pid, exit: { code: 5, signal: null } }]);
    expect(listed[0]?.exitedAt).toBeInstanceOf(Date);
    const watched = await second.watch(child.pid);
    if (watched === null) throw new Error('not held');
    const console = collect(watched.child);
    expect(await watched.child.exit).toMatchObject({ code: 5, holderLost: false });
    expect(console.text()).toBe('bye\n');
    watched.child.forget();
    expect(value(await second.list())).toEqual([]);
    expect(await second.watch(child.pid)).toBeNull();
  });

  it('reports a program that cannot start, and a console that is missing or not a FIFO', async () => {
    const holder = await attach();
    const fifoPath = await fifo('ok');
    const missing = path.join(dir, 'no-such-program');
    const spawn = (argv: string[], consolePath: string) =>
      holder.spawn({ argv, env, console: { kind: 'fifo', path: consolePath }, tag: ':x' });
    expect(await spawn([missing], fifoPath)).toEqual({
      ok: false,
      error: { stage: 'exec', errno: 'ENOENT' },
    });
    const plain = path.join(dir, 'plain');
    writeFileSync(plain, '');
    expect(await spawn(['true'], plain)).toEqual({
      ok: false,
      error: { stage: 'console', errno: 'ENOTSUP' },
    });
    expect(await spawn(['true'], path.join(dir, 'absent'))).toEqual({
      ok: false,
      error: { stage: 'console', errno: 'ENOENT' },
    });
    expect(value(await holder.list())).toEqual([]);
  });

  it('takes its tenders with it when it dies, also programs that do not ask for it', async () => {
    const holder = await attach();
    const child = await start(holder, 'exec sleep 30');
    process.kill(holder.pid, 'SIGKILL');
    expect(await child.exit).toMatchObject({ signal: 'SIGKILL', holderLost: true });
    expect(await gone(child.pid, 5_000)).toBe(true);
    // The next connection starts a new holder.
    const next = await attach();
    expect(next.pid).not.toBe(holder.pid);
  });

  it('ends, with its tenders, when its directory is removed: nobody could attach again', async () => {
    const holder = await attach();
    const child = await start(holder, 'exec sleep 30');
    holder.close();
    await rm(holderDir(), { recursive: true, force: true });
    expect(await gone(child.pid, 5_000)).toBe(true);
    expect(await gone(holder.pid, 5_000)).toBe(true);
  });

  it('exits when nobody is attached and it holds nothing', async () => {
    const holder = await attach({ idleExitMs: 200 });
    holder.close();
    expect(await gone(holder.pid, 5_000)).toBe(true);
    expect(existsSync(path.join(holderDir(), 'sock'))).toBe(false);
  });

  it('closes a connection that sends nonsense, and only that one', async () => {
    const holder = await attach();
    const child = await start(holder, 'exec sleep 30');
    holder.close();
    await new Promise((r) => setTimeout(r, 100));
    const closed = await new Promise<boolean>((resolve) => {
      const socket = connect(path.join(holderDir(), 'sock'));
      socket.on('error', () => resolve(false));
      socket.on('close', () => resolve(true));
      const hello = Buffer.from([0x48, 1, 0, 0, 0]);
      socket.write(Buffer.concat([frame(hello), frame(Buffer.from('Qjunk'))]));
      socket.resume();
    });
    expect(closed).toBe(true);
    expect(alive(holder.pid)).toBe(true);
    expect(alive(child.pid)).toBe(true);
    const again = await attach();
    expect(again.pid).toBe(holder.pid);
    expect(value(await again.list()).map((c) => c.pid)).toEqual([child.pid]);
  });
});

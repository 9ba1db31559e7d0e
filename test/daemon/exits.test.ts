// Last exits (Petrel (l)) against a real petreld: a unikernel restarted on failure shows the exit
// before its run while it waits and once it runs again, a dropped one stays visible until its
// name runs again, and petrel info shows them; against a server that does not know
// unikernel-exits (as Albatross) petrel info prints the plain listing and says so.

import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unwrap } from '../../src/resources/errors.js';
import { parseName } from '../../src/resources/name.js';
import { FrameReader, frame } from '../../src/wire/framing.js';
import { decodeWire, encodeWire } from '../../src/wire/message.js';
import type { Named, UnikernelExit, UnikernelInfo, Wire } from '../../src/wire/types.js';
import { petrel } from '../cli/io.js';
import { sptCanary } from '../engine/guest.js';
import { canaryConfig, waitFor } from '../engine/harness.js';
import { request, said } from './client.js';
import { type TestDaemon, testDaemon } from './start.js';

let node: TestDaemon;
let vmmd: string;
beforeAll(async () => {
  node = await testDaemon({ runtimes: 'spt', restartBackoffBase: '1s' });
  vmmd = path.join(node.runDir, 'util', 'vmmd.sock');
});
afterAll(() => node?.stop());

const create = async (name: string, args: string[], restart: boolean) =>
  (
    await request(vmmd, name, {
      type: 'unikernel-create',
      force: false,
      release: '2.7',
      config: await canaryConfig(sptCanary, args, {
        failBehaviour: restart ? { kind: 'restart', exitCodes: [] } : { kind: 'quit' },
      }),
    })
  ).map(said);

/** The unikernel-exits reply for `name`, over the wire. */
async function exitsOf(name: string): Promise<Named<UnikernelExit>[]> {
  const [answer] = await request(vmmd, name, { type: 'unikernel-exits' });
  if (answer?.payload.kind !== 'reply' || answer.payload.reply.type !== 'unikernel-exits')
    throw new Error(`unikernel-exits answered ${said(answer)}`);
  return [...answer.payload.reply.entries];
}

const info = async (...args: string[]) => {
  const run = await petrel(['info', ...args, '--run-dir', node.runDir]);
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
  return run.stdout;
};

describe('last exits', () => {
  it('a restart on failure: the exit while it waits, and once it runs again', {
    timeout: 60_000,
  }, async () => {
    const created = Date.now();
    expect(await create('tick', ['sleep', '3'], true)).toEqual(['created unikernel']);
    expect(await exitsOf('tick')).toEqual([]);
    // The canary ticks 3 s and halts 0: restart on failure, after the 1 s back-off.
    const waiting = await waitFor(async () => {
      const [entry] = await exitsOf('tick');
      return entry?.info.outcome.kind === 'restarting' ? entry : undefined;
    }, 'the restart to be scheduled');
    expect(waiting.info).toMatchObject({ exit: 'exit 0', limit: null, restarts: 1 });
    const at = waiting.info.at.getTime();
    expect(at).toBeGreaterThan(created + 2_000);
    expect(at).toBeLessThanOrEqual(Date.now());
    if (waiting.info.outcome.kind !== 'restarting') throw new Error('not restarting');
    expect(waiting.info.outcome.restartAt.getTime() - at).toBeGreaterThanOrEqual(1_000);
    // Info lists it no more (as Albatross), petrel info shows it waiting (or, on a machine slow
    // enough to miss the second it waits, running again after that very exit).
    const lastExit = { exit: 'exit 0', limit: null, at: waiting.info.at.toISOString(), restarts: 1 };
    const pending = JSON.parse(await info('tick', '--json'));
    if (pending[0]?.state === 'restarting')
      expect(pending).toEqual([
        {
          name: ':tick',
          state: 'restarting',
          restartAt: waiting.info.outcome.restartAt.toISOString(),
          lastExit,
        },
      ]);
    else expect(pending).toEqual([expect.objectContaining({ name: ':tick', state: 'running', lastExit })]);
    await waitFor(async () => {
      const [entry] = await exitsOf('tick');
      return entry?.info.outcome.kind === 'restarted' ? entry : undefined;
    }, 'the restart');
    const [running, ...others] = JSON.parse(await info('tick', '--json'));
    expect(others).toEqual([]);
    expect(running).toMatchObject({
      name: ':tick',
      state: 'running',
      arguments: ['sleep', '3'],
      lastExit: { exit: 'exit 0', limit: null, at: waiting.info.at.toISOString(), restarts: 1 },
    });
    expect(Date.parse(running.started)).toBeGreaterThan(at);
    expect(await info()).toMatch(
      /\nlast exits:\nNAME +STATE .*\n:tick +running +exit 0 +- +\S+Z +1 +restarted\n$/u,
    );
    expect((await request(vmmd, 'tick', { type: 'unikernel-destroy' })).map(said)).toEqual([
      'destroyed unikernel',
    ]);
  });

  it('a dropped one is shown until its name runs again', { timeout: 30_000 }, async () => {
    expect(await create('once', ['exit', '2'], false)).toEqual(['created unikernel']);
    const [gone] = await waitFor(async () => {
      const found = await exitsOf('once');
      return found.length > 0 ? found : undefined;
    }, 'the exit');
    expect(gone?.info).toMatchObject({
      exit: 'exit 2',
      limit: null,
      restarts: 0,
      outcome: { kind: 'dropped', reason: 'exit code 2 does not restart' },
    });
    expect(JSON.parse(await info('once', '--json'))).toEqual([
      {
        name: ':once',
        state: 'dropped',
        reason: 'exit code 2 does not restart',
        lastExit: { exit: 'exit 2', limit: null, at: gone?.info.at.toISOString(), restarts: 0 },
      },
    ]);
    // Under the whole tree too; a path elsewhere sees nothing.
    expect((await exitsOf(':')).map((e) => e.name)).toContainEqual({ path: [], label: 'once' });
    expect(await exitsOf('other:')).toEqual([]);
    // A new unikernel of the name: the old one's exit is not its story.
    expect(await create('once', ['wait', 'here'], false)).toEqual(['created unikernel']);
    expect(await exitsOf('once')).toEqual([]);
    const [again] = JSON.parse(await info('once', '--json'));
    expect(again).toMatchObject({ name: ':once', state: 'running', lastExit: null });
    expect((await request(vmmd, 'once', { type: 'unikernel-destroy' })).map(said)).toEqual([
      'destroyed unikernel',
    ]);
    // A destroy is not an exit of its own: nothing is recorded.
    expect(await exitsOf('once')).toEqual([]);
  });
});

/**
 * TEST DOUBLE for Albatross (or a petreld before unikernel-exits), which this machine does not
 * have: a vmmd.sock that answers unikernel-info and, as albatrossd does with a message it cannot
 * decode, closes the connection on anything else without a reply.
 */
describe('against a server without unikernel-exits', () => {
  let dir: string;
  let server: Server;
  const entry = (): Named<UnikernelInfo> => ({
    name: unwrap(parseName('old')),
    info: {
      typ: 'solo5',
      startup: null,
      failBehaviour: { kind: 'quit' },
      cpuids: [0],
      memory: 16,
      digest: new Uint8Array(32),
      blocks: [],
      bridges: [],
      arguments: null,
      started: new Date('2026-01-01T00:00:00Z'),
      cpus: 1,
      linuxBootPartition: null,
    },
  });
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'petrel-old-'));
    server = createServer((socket) => {
      const reader = new FrameReader();
      socket.on('data', (chunk: Buffer) => {
        const events = reader.push(chunk);
        if (!events.ok) return void socket.destroy();
        for (const event of events.value) {
          if (event.kind !== 'frame') continue;
          const wire = decodeWire(event.payload);
          if (!wire.ok || wire.value.payload.kind !== 'command') return void socket.destroy();
          if (wire.value.payload.command.type !== 'unikernel-info') return void socket.destroy();
          const answer: Wire = {
            header: wire.value.header,
            payload: { kind: 'reply', reply: { type: 'unikernel-info', release: '2.7', entries: [entry()] } },
          };
          socket.end(frame(unwrap(encodeWire(answer))));
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(path.join(dir, 'vmmd.sock'), resolve));
  });
  afterAll(async () => {
    server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('prints the plain listing, and says on stderr that nothing is known of exits', async () => {
    const socket = ['--socket', path.join(dir, 'vmmd.sock')];
    const json = await petrel(['info', '--json', ...socket]);
    expect(json.code).toBe(0);
    const [shown, ...more] = JSON.parse(json.stdout);
    expect(more).toEqual([]);
    expect(shown).toMatchObject({ name: ':old', memory: 16 });
    expect(shown).not.toHaveProperty('state');
    expect(shown).not.toHaveProperty('lastExit');
    expect(json.stderr).toMatch(
      /^petrel info: petreld does not report exits .*: last exits unknown \(.*closed the connection without answering\)\n$/u,
    );
    const text = await petrel(['info', ...socket]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^NAME .*\n:old +16 MiB .*\n$/u);
    expect(text.stderr).toContain('last exits unknown');
  });
});

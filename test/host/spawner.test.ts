import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { bundledNativePath } from '../../src/host/native.js';
import {
  decodeWaitStatus,
  type SpawnedChild,
  type SpawnRequest,
  spawnChild,
} from '../../src/host/spawner.js';

async function value(request: SpawnRequest): Promise<SpawnedChild> {
  const answer = await spawnChild(request);
  if (!answer.ok) throw new Error(JSON.stringify(answer.error));
  return answer.value;
}

const devNull = { kind: 'file', path: '/dev/null' } as const;
const env = { PATH: '/usr/bin:/bin' };

/** Our children named petrel-spawner (we started it, so ending it by pid is ours to do). */
function spawnerPids(): number[] {
  const pids: number[] = [];
  for (const task of readdirSync('/proc/self/task')) {
    const children = readFileSync(`/proc/self/task/${task}/children`, 'utf8').trim();
    for (const pid of children === '' ? [] : children.split(' ').map(Number)) {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'petrel-spawner') pids.push(pid);
    }
  }
  return pids;
}

describe('wait status', () => {
  it('decodes exit codes and signals as the kernel encodes them', () => {
    expect(decodeWaitStatus(0)).toEqual({ code: 0, signal: null });
    expect(decodeWaitStatus(42 << 8)).toEqual({ code: 42, signal: null });
    expect(decodeWaitStatus(9)).toEqual({ code: null, signal: 'SIGKILL' });
    expect(decodeWaitStatus(15 | 0x80)).toEqual({ code: null, signal: 'SIGTERM' }); // core dumped
  });
});

describe('petrel-spawner', () => {
  it('keeps requests and exits apart when many children start and end at once', async () => {
    const children = await Promise.all(
      Array.from(
        { length: 40 },
        async (_, i) => await value({ argv: ['sh', '-c', `exit ${i}`], env, console: devNull }),
      ),
    );
    expect(new Set(children.map((c) => c.pid)).size).toBe(40);
    const exits = await Promise.all(children.map((c) => c.exit));
    expect(exits.map((e) => e.code)).toEqual(Array.from({ length: 40 }, (_, i) => i));
  });

  it('delivers a signal to a running child and reports the signal', async () => {
    const child = await value({ argv: ['sleep', '30'], env, console: devNull });
    child.kill('SIGTERM');
    expect(await child.exit).toEqual({ code: null, signal: 'SIGTERM' });
    child.kill('SIGKILL'); // reaped: nothing is signalled, nothing throws
  });

  it('refuses arguments with a NUL byte before anything starts', async () => {
    const answer = await spawnChild({ argv: ['echo', 'a\0b'], env, console: devNull });
    expect(answer.ok).toBe(false);
    if (!answer.ok) expect(answer.error).toMatchObject({ code: 'E_SPAWNER' });
  });

  it('reports its children as killed if it dies, ends them, and is started again for the next spawn', async () => {
    const child = await value({ argv: ['sleep', '30'], env, console: devNull });
    const helpers = spawnerPids();
    expect(helpers).toHaveLength(1);
    process.kill(helpers[0] as number, 'SIGKILL');
    expect(await child.exit).toEqual({ code: null, signal: 'SIGKILL' });
    // SIGKILL takes effect asynchronously; then it is gone, or a zombie until reaped.
    const state = () => {
      const stat = `/proc/${child.pid}/stat`;
      return existsSync(stat) ? readFileSync(stat, 'utf8').split(') ')[1]?.[0] : 'gone';
    };
    for (let i = 0; i < 100 && !/^(gone|Z|X)$/u.test(state() ?? ''); i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(state()).toMatch(/^(gone|Z|X)$/u);
    const next = await value({ argv: ['true'], env, console: devNull });
    expect((await next.exit).code).toBe(0);
    expect(spawnerPids()).not.toContain(helpers[0]);
  });

  it('captures stdout and stderr apart, per child, all of it before the exit, with stdin given', async () => {
    const script =
      'read line; printf "out-%s-" "$line"; head -c 200000 /dev/zero | tr "\\0" x; printf "err-%s" "$line" >&2';
    const children = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        value({
          argv: ['sh', '-c', script],
          env,
          console: { kind: 'capture', input: `n${i}\n`, maxOutputBytes: 1e6 },
        }),
      ),
    );
    for (const [i, child] of children.entries()) {
      expect((await child.exit).code).toBe(0);
      const out = Buffer.concat(child.output?.stdout ?? []).toString();
      expect(out.startsWith(`out-n${i}-`)).toBe(true);
      expect(out.length).toBe(`out-n${i}-`.length + 200_000);
      expect(Buffer.concat(child.output?.stderr ?? []).toString()).toBe(`err-n${i}`);
    }
  });

  it('kills a captured child whose output exceeds the limit, and says so', async () => {
    const child = await value({
      argv: ['sh', '-c', 'exec cat /dev/zero'],
      env,
      console: { kind: 'capture', input: '', maxOutputBytes: 100_000 },
    });
    expect(await child.exit).toEqual({ code: null, signal: 'SIGKILL' });
    expect(child.output?.overflowed).toBe(true);
    expect(Buffer.concat(child.output?.stdout ?? []).length).toBeLessThanOrEqual(100_000);
  });

  it('exits with a protocol error, naming it, on a malformed frame', () => {
    const program = bundledNativePath('petrel-spawner') as string;
    const frame = (body: Buffer) => Buffer.concat([Buffer.from([body.length, 0, 0, 0]), body]);
    const cases: [Buffer, RegExp][] = [
      [Buffer.from([0, 0, 0, 0]), /frame length out of range/u],
      [Buffer.from([0xff, 0xff, 0xff, 0x7f]), /frame length out of range/u],
      [frame(Buffer.from('Q')), /unknown op/u],
      [frame(Buffer.from('K\x01\x00')), /kill request of wrong length/u],
      [frame(Buffer.from('S\x01\x00\x00\x00')), /short spawn request/u],
      [
        frame(
          Buffer.concat([
            Buffer.from('S'),
            Buffer.from([1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]),
            Buffer.from('Fx'),
          ]),
        ),
        /unterminated string/u,
      ],
      [
        frame(
          Buffer.concat([
            Buffer.from('S'),
            Buffer.from([1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
            Buffer.from('F\0'),
          ]),
        ),
        /bad spawn counts/u,
      ],
    ];
    for (const [input, message] of cases) {
      const run = spawnSync(program, [], { input, timeout: 5_000 });
      expect(run.status).toBe(2);
      expect(run.stderr.toString()).toMatch(message);
    }
  });
});

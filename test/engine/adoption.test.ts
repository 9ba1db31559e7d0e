// A daemon restart is not a guest restart (Petrel (k)): an engine started over tenders an
// earlier one left under the holder adopts those of committed unikernels (same process, console
// history, taps), decides restart on failure for those that exited meanwhile, stops the rest,
// and restores everything from the state when the holder itself died.
import { readdirSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { enginesClosedAfterEach } from './each.js';
import { canaryImage, canaryNetImage } from './guest.js';
import {
  canaryConfig,
  createCommand,
  makeEngine,
  name,
  replyText,
  type TestEngine,
  waitForLine,
} from './harness.js';

const engines = enginesClosedAfterEach();

/** A logger whose lines the test reads. */
function recorder() {
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s)) });
  return { log, lines, said: (msg: string) => lines.filter((l) => l.msg === msg) };
}

async function engine(log = recorder()) {
  const t = await makeEngine({ log: log.log, restart: { backoffBaseMs: 100 } });
  engines.push(t);
  return { t, log };
}

async function reopen(t: TestEngine, log = recorder()) {
  const second = await makeEngine(
    { log: log.log, restart: { backoffBaseMs: 100 } },
    { dir: t.runDir.slice(0, -'/run'.length), netns: t.netns },
  );
  engines.push(second);
  return { t: second, log };
}

function alive(pid: number | undefined): boolean {
  if (pid === undefined) return false;
  try {
    const state = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0];
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

async function until(check: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The holder of a run directory, found by its command line. */
function holderPid(runDir: string): number | undefined {
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/u.test(p))) {
    const argv = (() => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      } catch {
        return [];
      }
    })();
    if (argv[0]?.endsWith('petrel-holder') && argv.includes(`${runDir}/holder`)) return Number(pid);
  }
  return undefined;
}

const onBridge = { bridges: [{ netif: 'service', bridge: 'br0', mac: null }] };

describe('adoption at start-up', () => {
  it('takes over a committed guest as it runs: same process, taps, console history, supervision', async () => {
    const { t } = await engine();
    const config = await canaryConfig(canaryNetImage, ['wait', 'kept'], onBridge);
    expect(replyText(await t.run(':vm', createCommand(config)))).toBe('created unikernel');
    await waitForLine(t.hub, ':vm', 'petrel-canary kept');
    const pid = t.engine.pidOf(name(':vm'));
    const taps = t.engine.netsOf(name(':vm'));
    await t.crash();

    const { t: second, log } = await reopen(t);
    expect(second.engine.running).toEqual([':vm']);
    expect(second.engine.pidOf(name(':vm'))).toBe(pid);
    expect(second.engine.netsOf(name(':vm'))).toEqual(taps);
    expect(t.netns.links()).toContain(taps?.[0]?.tap);
    // The console history came from the holder's buffer.
    await waitForLine(second.hub, ':vm', 'petrel-canary kept');
    expect(log.said('unikernel adopted')).toMatchObject([{ name: ':vm', tenderPid: pid }]);
    const info = await second.run(':vm', { type: 'unikernel-info', release: '2.7' });
    expect(info.kind === 'reply' && info.reply.type === 'unikernel-info' && info.reply.entries.length).toBe(
      1,
    );
    // Supervised as its own: destroy stops it and releases its artefacts.
    expect(replyText(await second.run(':vm', { type: 'unikernel-destroy' }))).toBe('destroyed unikernel');
    expect(alive(pid)).toBe(false);
    expect(t.netns.links()).not.toContain(taps?.[0]?.tap);
  });

  it('keeps an adopted guest whose image file is gone, and says so', async () => {
    const { t } = await engine();
    await t.run(':vm', createCommand(await canaryConfig(canaryImage, ['wait', 'x'])));
    // Running: the tender has loaded its image (it reads it after it started).
    await waitForLine(t.hub, ':vm', 'petrel-canary x');
    const pid = t.engine.pidOf(name(':vm'));
    await t.crash();
    await rm(`${t.runDir}/:vm.img`);
    const { t: second, log } = await reopen(t);
    expect(second.engine.pidOf(name(':vm'))).toBe(pid);
    expect(alive(pid)).toBe(true);
    expect(log.said('adopted unikernel kept despite a missing file')).toMatchObject([
      { name: ':vm', problem: `${t.runDir}/:vm.img is missing` },
    ]);
  });

  it('keeps a guest whose PID record was lost, and writes the record again', async () => {
    const { t } = await engine();
    await t.run(':vm', createCommand(await canaryConfig(canaryImage, ['wait', 'x'])));
    const pid = t.engine.pidOf(name(':vm'));
    await t.crash();
    await rm(`${t.runDir}/tenders/:vm`);
    const { t: second, log } = await reopen(t);
    expect(second.engine.pidOf(name(':vm'))).toBe(pid);
    expect(readFileSync(`${t.runDir}/tenders/:vm`, 'utf8')).toMatch(new RegExp(`^${pid} \\d+\n$`, 'u'));
    expect(log.said('adopted unikernel kept despite a missing file')).toMatchObject([
      { name: ':vm', problem: 'its PID record was missing (written again)' },
    ]);
  });

  it('refuses a second engine on the same run directory while the first is attached', async () => {
    const { t } = await engine();
    await expect(reopen(t)).rejects.toThrow(/another petreld \(pid \d+\) is attached to the holder/u);
    expect(t.engine.running).toEqual([]);
  });

  it('decides restart on failure for a guest that exited while no petreld was attached', async () => {
    const { t } = await engine();
    const restart = { failBehaviour: { kind: 'restart' as const, exitCodes: [] } };
    // They exit (0) after 3 s: long after the engine is gone, however loaded the machine.
    await t.run(':again', createCommand(await canaryConfig(canaryImage, ['sleep', '3'], restart)));
    await t.run(':gone', createCommand(await canaryConfig(canaryImage, ['sleep', '3'])));
    const pids = [t.engine.pidOf(name(':again')), t.engine.pidOf(name(':gone'))];
    await t.crash();
    await until(() => pids.every((p) => !alive(p)));

    const { t: second, log } = await reopen(t);
    const away = log.said('unikernel exited while petreld was away');
    expect(away.map((l) => [l.name, l.exit]).sort()).toEqual([
      [':again', 'exit 0'],
      [':gone', 'exit 0'],
    ]);
    await until(() => second.engine.running.includes(':again'));
    expect(second.engine.pidOf(name(':again'))).not.toBe(pids[0]);
    expect(second.engine.running).not.toContain(':gone');
    await waitForLine(second.hub, ':again', 'petrel-canary tick 1', 15_000);
    // The decision is durable: a later start knows nothing of :gone, and :again runs.
    await second.engine.idle();
    await second.crash();
    const { t: third } = await reopen(second);
    await until(() => third.engine.running.includes(':again'));
    expect(third.engine.running).toEqual([':again']);
  });

  it('starts the unikernels again at once when its holder dies, under a new holder', async () => {
    const { t, log } = await engine();
    await t.run(':a', createCommand(await canaryConfig(canaryImage, ['wait', 'a'])));
    await t.run(':b', createCommand(await canaryConfig(canaryImage, ['wait', 'b'])));
    const before = [t.engine.pidOf(name(':a')), t.engine.pidOf(name(':b'))];
    const holder = holderPid(t.runDir);
    expect(holder).toBeDefined();
    process.kill(holder as number, 'SIGKILL');
    await until(() => before.every((p) => !alive(p)));
    await until(
      () =>
        t.engine.running.length === 2 && [':a', ':b'].every((n) => !before.includes(t.engine.pidOf(name(n)))),
    );
    expect(holderPid(t.runDir)).not.toBe(holder);
    expect(
      log
        .said('the holder ended and its tender with it; starting the unikernel again')
        .map((l) => l.name)
        .sort(),
    ).toEqual([':a', ':b']);
    await waitForLine(t.hub, ':a', 'petrel-canary a');
  });

  it('restores from the state at the next start when the holder died while no petreld ran', async () => {
    const { t } = await engine();
    await t.run(':a', createCommand(await canaryConfig(canaryImage, ['wait', 'a'])));
    const pid = t.engine.pidOf(name(':a'));
    await t.crash();
    process.kill(holderPid(t.runDir) as number, 'SIGKILL');
    await until(() => !alive(pid));
    const { t: second, log } = await reopen(t);
    expect(second.engine.running).toEqual([':a']);
    expect(second.engine.pidOf(name(':a'))).not.toBe(pid);
    expect(log.said('unikernel adopted')).toEqual([]);
  });
});

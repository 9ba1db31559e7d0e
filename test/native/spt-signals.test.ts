// How petrel-spt ends (solo5.md §1.9, §1.11, spt column; petrel-differences.md (e)): it installs
// no signal handler, so SIGTERM and SIGINT kill it by the signal at once, whatever the guest is
// doing; and the death of its parent ends it too (the parent-death signal, set first thing).
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { alive, gone, type Running, sleep, start, underShell } from './native.js';
import { requireSptBuilt, spt, sptCanary } from './spt.js';

const running: Running[] = [];
const orphans: number[] = [];

beforeAll(requireSptBuilt);
afterEach(() => {
  for (const r of running.splice(0)) r.stop();
  // Tenders whose parent the test killed are no longer our children: end them by PID.
  for (const pid of orphans.splice(0)) if (alive(pid)) process.kill(pid, 'SIGKILL');
});

describe('with a guest waiting in epoll_pwait', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)(
    '%s kills the tender by the signal within 100 ms, silently',
    async (signal) => {
      const t = start(spt, ['--mem=2', sptCanary, 'wait', 'ready']);
      running.push(t);
      await t.waitFor('petrel-canary ready\n');
      await sleep(50); // let the guest settle into its wait
      const sent = performance.now();
      process.kill(t.pid, signal);
      const end = await t.exited;
      console.log(`spt ${signal}: ended ${(end.at - sent).toFixed(2)} ms after the signal`);
      expect(end.at - sent).toBeLessThan(100);
      expect(end).toMatchObject({ status: null, signal });
      expect(t.stderr()).toBe('');
    },
  );

  it("SIGINT ends it even when the parent left SIGINT ignored (a shell's background job)", async () => {
    const t = start('sh', ['-c', 'trap "" INT; exec "$0" "$@"', spt, '--mem=2', sptCanary, 'wait', 'ready']);
    running.push(t);
    await t.waitFor('petrel-canary ready\n');
    process.kill(t.pid, 'SIGINT');
    expect(await t.exited).toMatchObject({ status: null, signal: 'SIGINT' });
  });

  it('the death of its parent ends a running tender', async () => {
    const { shell, tenderPid } = await underShell(['--mem=2', sptCanary, 'wait', 'ready'], process.env, spt);
    running.push(shell);
    orphans.push(tenderPid);
    await shell.waitFor('petrel-canary ready\n');
    expect(alive(tenderPid)).toBe(true);
    process.kill(shell.pid, 'SIGKILL');
    await shell.exited;
    expect(await gone(tenderPid, 1000)).toBe(true);
  });

  it('a guest busy sleeping in a loop is ended the same way (sleep mode)', async () => {
    const t = start(spt, ['--mem=2', sptCanary, 'sleep', '30']);
    running.push(t);
    await t.waitFor('petrel-canary tick 1\n', 5_000);
    process.kill(t.pid, 'SIGTERM');
    expect(await t.exited).toMatchObject({ status: null, signal: 'SIGTERM' });
  });
});

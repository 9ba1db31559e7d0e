// petrel-hvt's seccomp filter (native/tender/sandbox.c; solo5.md §1.12-§1.13): in place before
// the first KVM_RUN, anything outside it kills the whole tender with SIGSYS (159), and console
// writes stay best effort under it. Every test runs the shipped petrel-hvt twice: under real KVM
// where it works, and under fake-kvm.so (TEST DOUBLE for /dev/kvm) everywhere. The forbidden
// calls come from seccomp-probe.so (TEST TOOL, native/tools/seccomp-probe.c), preloaded to stand
// for a guest that has taken the tender over: it makes one call at the first KVM_RUN.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { kvmUsable } from './kvm.js';
import {
  canary,
  fakeKvm,
  type Outcome,
  type Running,
  requireBuilt,
  runSync,
  seccompProbe,
  start,
  tender,
} from './native.js';

beforeAll(() => requireBuilt());

const running: Running[] = [];
const children: ChildProcess[] = [];
afterEach(() => {
  for (const r of running.splice(0)) r.stop();
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

/** What one guest does, as a real canary under KVM or as a script under the fake. */
interface Guest {
  args: string[];
  script?: string;
  status: number;
  stdout: string;
}

interface Mode {
  name: string;
  real: boolean;
  /** Prints "petrel-canary x" and exits. */
  hello: Guest;
  /** Prints "petrel-canary w" and then waits forever. */
  waiting: Guest;
  /** Prints several lines, then exits: what is left once every write failed. */
  lines: Guest;
  /** Waits half a second or more, then prints and exits. */
  late: Guest;
}

const modes: Mode[] = [
  {
    name: 'fake-kvm.so',
    real: false,
    hello: {
      args: ['--mem=2', canary],
      script: 'puts,petrel-canary x\\n;halt,5',
      status: 5,
      stdout: 'petrel-canary x\n',
    },
    waiting: { args: ['--mem=2', canary], script: 'puts,petrel-canary w\\n;sleep', status: 1, stdout: '' },
    lines: {
      args: ['--mem=2', canary],
      script: 'puts,a\\n;puts,b\\n;puts,c\\n;halt,7',
      status: 7,
      stdout: '',
    },
    late: { args: ['--mem=2', canary], script: 'poll,500000000;puts,late\\n;halt,7', status: 7, stdout: '' },
  },
  {
    name: 'KVM',
    real: true,
    hello: { args: ['--mem=2', canary, 'hello', 'x'], status: 0, stdout: 'petrel-canary x\n' },
    waiting: { args: ['--mem=2', canary, 'wait', 'w'], status: 1, stdout: '' },
    lines: { args: ['--mem=2', canary, 'flood', '300'], status: 0, stdout: '' },
    late: { args: ['--mem=2', canary, 'sleep', '1'], status: 0, stdout: '' },
  },
];

function envFor(mode: Mode, guest: Guest, probe?: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    LD_PRELOAD: mode.real ? seccompProbe : `${seccompProbe}:${fakeKvm}`,
    ...(guest.script === undefined ? {} : { FAKEKVM_SCRIPT: guest.script }),
    ...(probe === undefined ? {} : { PETREL_SECCOMP_PROBE: probe }),
  };
}

function run(mode: Mode, guest: Guest, probe?: string): Outcome {
  return runSync(tender, guest.args, 20_000, envFor(mode, guest, probe));
}

/** A name for Seccomp/NoNewPrivs lines of /proc/PID/status. */
function statusFields(pid: number): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of readFileSync(`/proc/${pid}/status`, 'utf8').split('\n')) {
    const m = /^(Seccomp|Seccomp_filters|NoNewPrivs):\s+(\S+)$/.exec(line);
    if (m?.[1] && m[2] !== undefined) out[m[1]] = m[2];
  }
  return out;
}

/**
 * Runs the tender with its stdout on a pipe whose reader this test closes at once, under a shell
 * that first sets SIGPIPE to be ignored (or not); exec keeps an ignored disposition.
 */
function brokenPipe(
  mode: Mode,
  guest: Guest,
  ignorePipe: boolean,
): Promise<{ status: number | null; signal: NodeJS.Signals | null; stderr: string }> {
  const script = `${ignorePipe ? 'trap "" PIPE; ' : ''}exec "$0" "$@"`;
  const child = spawn('sh', ['-c', script, tender, ...guest.args], {
    env: envFor(mode, guest),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  child.stdout?.destroy();
  let stderr = '';
  child.stderr?.setEncoding('latin1').on('data', (d: string) => {
    stderr += d;
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the tender did not end within 20 s')), 20_000);
    child.on('error', reject);
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      resolve({ status, signal, stderr });
    });
  });
}

const forbidden: [string, string][] = [
  ['getpid', 'a call outside the list'],
  ['x32', 'an x32 system call number'],
  ['open', 'openat of a host file'],
  ['socket', 'a new socket'],
  ['kill', 'a signal to another process'],
  ['mmap', 'new memory'],
  ['mprotect', 'making memory executable'],
  ['futex', 'futex (allowed by solo5-hvt, not needed here)'],
  ['rt_sigreturn', 'rt_sigreturn (allowed by solo5-hvt; no handler of this tender returns)'],
  ['write-kvm', 'write to the /dev/kvm descriptor'],
  ['write-high', 'write to descriptor 1 + 2^32'],
  ['vm-ioctl', 'KVM_CREATE_VCPU on the VM descriptor'],
  ['vcpu-ioctl', 'KVM_SET_REGS on the vCPU'],
  ['run-high', 'KVM_RUN on the vCPU descriptor + 2^32'],
  ['run-kvm', 'KVM_RUN on the /dev/kvm descriptor'],
  ['clock', 'clock_gettime(CLOCK_BOOTTIME)'],
  ['ppoll-mask', 'ppoll with a signal mask'],
  ['ppoll-many', 'ppoll on more descriptors than the tender has taps'],
];

const allowed: [string, string][] = [
  ['stdout', 'write to 1 (PUTS)'],
  ['stderr', "write to 2 (the tender's messages)"],
  ['clock-ok', 'clock_gettime(CLOCK_MONOTONIC)'],
  ['regs', 'KVM_GET_REGS on the vCPU (the rip of a failure message)'],
  ['ppoll-ok', 'ppoll on no descriptor (POLL without taps)'],
];

for (const mode of modes) {
  describe.skipIf(mode.real && !kvmUsable)(`petrel-hvt's filter under ${mode.name}`, () => {
    it('the guest runs as without the probe: same output and status', () => {
      const r = run(mode, mode.hello);
      expect(r.stderr).toBe('');
      expect(r.signal).toBeNull();
      expect(r.status).toBe(mode.hello.status);
      expect(r.stdout.startsWith(mode.hello.stdout)).toBe(true);
    });

    it('is in force before the first KVM_RUN: Seccomp 2, one filter, no_new_privs; SIGTERM still exits 1', async () => {
      const t = start(tender, mode.waiting.args, { env: envFor(mode, mode.waiting) });
      running.push(t);
      await t.waitFor('petrel-canary w\n');
      expect(statusFields(t.pid)).toEqual({ NoNewPrivs: '1', Seccomp: '2', Seccomp_filters: '1' });
      // The handler's write and exit are inside the list.
      process.kill(t.pid, 'SIGTERM');
      expect(await t.exited).toMatchObject({ status: 1, signal: null });
      expect(t.stderr()).toBe('petrel-hvt: Exiting on signal 15\n');
    });

    it.each(forbidden)('%s (%s) kills the whole tender with SIGSYS at the first KVM_RUN', (probe) => {
      const r = run(mode, mode.hello, probe);
      expect(r.stderr).not.toContain('survived');
      expect(r).toMatchObject({ status: null, signal: 'SIGSYS', stdout: '' });
    });

    it.each(allowed)('%s (%s) is allowed, and the guest runs on', (probe) => {
      const r = run(mode, mode.hello, probe);
      expect(r.stderr).toContain(`seccomp-probe: ${probe} survived\n`);
      expect(r.signal).toBeNull();
      expect(r.status).toBe(mode.hello.status);
      expect(r.stdout).toContain(mode.hello.stdout);
    });

    it.each([
      ['/dev/full (ENOSPC)', '/dev/full', 'w'],
      ['a read-only descriptor (EBADF)', '/dev/null', 'r'],
    ])(
      'console on %s: writes are dropped, no abort, the guest ends with its status',
      (_what, path, flags) => {
        const fd = openSync(path, flags);
        try {
          const env = envFor(mode, mode.lines);
          const r = spawnSync(tender, mode.lines.args, {
            env,
            stdio: ['ignore', fd, 'pipe'],
            timeout: 20_000,
          });
          expect(r.stderr.toString('latin1')).toBe('');
          expect(r.signal).toBeNull();
          expect(r.status).toBe(mode.lines.status);
        } finally {
          closeSync(fd);
        }
      },
    );

    it('console reader gone with SIGPIPE ignored (EPIPE): no abort, the guest ends with its status', async () => {
      const r = await brokenPipe(mode, mode.late, true);
      expect(r).toEqual({ status: mode.late.status, signal: null, stderr: '' });
    });

    it('the same broken pipe with SIGPIPE at its default ends the tender by SIGPIPE (the setup is real)', async () => {
      const r = await brokenPipe(mode, mode.late, false);
      expect(r).toEqual({ status: null, signal: 'SIGPIPE', stderr: '' });
    });
  });
}

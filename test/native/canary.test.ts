// The canary under petrel-hvt on a host with KVM: console, exit statuses, the bounds checks of
// solo5.md §3.12, and the machine state of §3.2-§3.7 as the guest itself reads it (regs mode).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseElf } from './elf.js';
import { kvmUsable } from './kvm.js';
import { hex, initialState, keyValues, withoutCpuSetBits } from './layout.js';
import { canary, canaryBlk, EXIT_STATUSES, requireBuilt, runTender } from './native.js';
import { scratchDir } from './scratch.js';

const scratch = scratchDir('petrel-hvt-canary-', requireBuilt);

describe.skipIf(!kvmUsable)('the canary on petrel-hvt', () => {
  it('hello hi: "petrel-canary hi", a boot-time line, exit 0, nothing on stderr', () => {
    const before = BigInt(Date.now()) * 1_000_000n;
    const t0 = performance.now();
    const r = runTender(['--mem=4', canary, 'hello', 'hi']);
    const ranUs = (performance.now() - t0) * 1000;
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const [first, second, rest] = r.stdout.split('\n');
    expect(first).toBe('petrel-canary hi');
    const m = /^petrel-canary boot_us=(\d+) walltime_ns=(\d+)$/.exec(second ?? '');
    expect(m).not.toBeNull();
    // From the VM's creation to the guest's first instruction: inside the tender's whole run.
    // (The guest TSC does not start at 0 with the VM everywhere: on kvm-pvm it is the host's.)
    const bootUs = Number(m?.[1]);
    expect(bootUs).toBeGreaterThan(0);
    expect(bootUs).toBeLessThan(ranUs);
    const wall = BigInt(m?.[2] ?? '0');
    expect(wall).toBeGreaterThanOrEqual(before - 1_000_000_000n);
    expect(wall).toBeLessThanOrEqual(BigInt(Date.now()) * 1_000_000n + 1_000_000_000n);
    expect(rest).toBe('');
  });

  it('without arguments it says hello; launcher words are ignored', () => {
    expect(runTender(['--mem=2', canary]).stdout).toMatch(/^petrel-canary hello\n/);
    const r = runTender(['--mem=2', canary, '--name=vm1', '--solo5:quiet', 'hello', 'there']);
    expect(r.stdout).toMatch(/^petrel-canary there\n/);
  });

  it.each(EXIT_STATUSES)('exit %s: the tender exits with the status & 0xff (%i)', (n, status) => {
    const r = runTender(['--mem=2', canary, 'exit', n]);
    expect(r).toMatchObject({ status, stdout: '', stderr: '' });
  });

  it('an unknown mode halts with 2', () => {
    const r = runTender(['--mem=2', canary, 'no-such-mode']);
    expect(r).toMatchObject({ status: 2, stdout: 'petrel-canary unknown mode no-such-mode\n' });
  });

  it('flood: every numbered line arrives, in order', () => {
    const r = runTender(['--mem=2', canary, 'flood', '3000'], 120_000);
    expect(r.status).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines.pop()).toBe('');
    expect(lines).toEqual(Array.from({ length: 3000 }, (_, i) => `petrel-canary flood ${i + 1}`));
  }, 130_000);

  it('sleep 2: a tick a second (POLL as a sleep), then exit 0', () => {
    const t0 = performance.now();
    const r = runTender(['--mem=2', canary, 'sleep', '2']);
    const ms = performance.now() - t0;
    expect(r).toMatchObject({ status: 0, stdout: 'petrel-canary tick 1\npetrel-canary tick 2\n' });
    expect(ms).toBeGreaterThanOrEqual(1900);
    expect(ms).toBeLessThan(10_000);
  });

  it.each([
    ['puts', 'PUTS data: Invalid guest access: gpa=0x200000, sz=16', ''],
    ['struct', 'PUTS: Invalid guest access: gpa=0x1ffff8, sz=16', ''],
    ['halt', 'HALT cookie: Invalid guest access: gpa=0x1fff00, sz=512', ''],
    // 3 bytes ending one byte short of the top are printed; 4 ending on the last byte are not.
    ['edge', 'PUTS data: Invalid guest access: gpa=0x1ffffc, sz=4', '\0\0\0'],
  ])('oob %s: exit 1 with the bounds message, the tender intact', (what, message, extra) => {
    const r = runTender(['--mem=2', canary, 'oob', what]);
    expect(r.stdout).toBe(`petrel-canary ${what}\n${extra}`);
    expect(r.stderr).toBe(`petrel-hvt: ${message}\n`);
    expect(r.status).toBe(1);
    expect(r.signal).toBeNull();
  });
});

describe.skipIf(!kvmUsable)('regs: the initial state of solo5.md §3, read by the guest itself', () => {
  it.each([
    [8, canary, 1],
    [4096, canary, 1],
    [2, canaryBlk, 2],
  ])(
    '--mem=%i, %s',
    (mem, image, entries) => {
      const memSize = mem * 0x100000;
      const extra: string[] = [];
      if (entries === 2) {
        const disk = scratch.file('regs.img', 512);
        extra.push(`--block:storage=${disk}`);
      }
      const r = runTender([`--mem=${mem}`, ...extra, image, 'regs', 'a', '', 'b'], 60_000);
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      const got = keyValues(r.stdout);
      const mapped = memSize / 0x200000;
      const expected: Record<string, string> = {
        ...initialState(memSize, image, entries, 'regs a  b'),
        // What only the guest can see: MSRs and registers KVM keeps, and its own entry address.
        fs_base: '0x0',
        gs_base: '0x0',
        'fpu.cw': '0x37f',
        entry: hex(parseElf(readFileSync(image)).entry),
      };
      const tables: Record<string, string> = {
        'pml4[0]': '0x3003',
        'pdpt[0]': '0x4003',
        'pdpt[1]': '0x5003',
        'pdpt[2]': '0x6003',
        'pdpt[3]': '0x7003',
        'pdpt[4]': '0x0',
        'pd[0]': '0x8003',
        'pd[1]': mapped > 1 ? '0x200083' : '0x0',
        [`pd[${mapped - 1}]`]: mapped > 1 ? hex((mapped - 1) * 0x200000 + 0x83) : '0x8003',
        'pt[0]': '0x0',
        'pt[15]': '0x0',
        'pt[16]': '0x10001',
        'pt[255]': '0xff001',
        'pt[256]': '0x100003',
        'pt[511]': '0x1ff003',
      };
      if (mapped < 2048) tables[`pd[${mapped}]`] = '0x0';
      for (const [key, value] of Object.entries(expected)) expect([key, got.get(key)]).toEqual([key, value]);
      // The CPU's Accessed and Dirty bits are not the tender's (the canary's low.fnv1a leaves
      // them out too); everything else in each entry is.
      for (const [key, value] of Object.entries(tables)) {
        const entry = got.get(key);
        expect([key, entry === undefined ? entry : withoutCpuSetBits(key, entry)]).toEqual([key, value]);
      }
      const freq = BigInt(got.get('boot.cpu_cycle_freq') ?? '0');
      expect(freq).toBeGreaterThan(100_000_000n);
      expect(freq).toBeLessThan(20_000_000_000n);
    },
    70_000,
  );
});

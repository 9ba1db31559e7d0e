// petrel-hvt's command line is solo5-hvt's (solo5.md §1.1-§1.5): two passes, the same options,
// texts and exit statuses. Everything here is decided before /dev/kvm is opened, so it runs on
// any host; where a run gets that far, expectReachedKvm accepts either outcome of step 6.
import { symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { kvmUsable } from './kvm.js';
import {
  build,
  canary,
  expectFailure,
  expectLateFailure,
  expectReachedKvm,
  requireBuilt,
  runSync,
  runTender,
  tender,
} from './native.js';
import { scratchDir } from './scratch.js';

const usage = (prog: string) =>
  [
    `usage: ${prog} [ CORE OPTIONS ] [ MODULE OPTIONS ] [ -- ] KERNEL [ ARGS ]`,
    'KERNEL is the filename of the unikernel to run.',
    'ARGS are optional arguments passed to the unikernel.',
    'Core options:',
    '  [ --mem=512 ] (guest memory in MB)',
    '    --help (display this help)',
    '    --version (display version information)',
    'Compiled-in modules: core block net ',
    'Compiled-in module options:',
    '    --block:NAME=PATH (attach block device/file at PATH as block storage NAME)',
    '  [ --block-sector-size:NAME=SECTORSIZE ] (set sector size for block device NAME; must be a power of two greater than or equal 512)',
    '    --net:NAME=IFACE | @NN (attach tap at IFACE or at fd @NN as network NAME)',
    '  [ --net-mac:NAME=HWADDR ] (set HWADDR for network NAME)',
    '',
  ].join('\n');

const version = /^petrel-hvt tender, version v\S+\nABI version 2\n$/;

const scratch = scratchDir('petrel-hvt-cli-', requireBuilt);

describe('pass 1: --help, --version, KERNEL', () => {
  it('--version prints two lines on stderr, the second exactly "ABI version 2", and exits 0', () => {
    const r = runTender(['--version']);
    expect(r).toMatchObject({ status: 0, stdout: '' });
    expect(r.stderr).toMatch(version);
  });

  it('--version wins wherever it stands before KERNEL, even after an invalid option', () => {
    expect(runTender(['--bogus', '--mem=abc', '--version', canary]).stderr).toMatch(version);
    expect(runTender(['--version', '--help']).status).toBe(0);
  });

  it('--help prints solo5-hvt usage on stderr and exits 1; the first of --help/--version wins', () => {
    for (const args of [['--help'], ['--help', '--version'], ['--mem=4', '--help', canary]]) {
      const r = runTender(args);
      expect(r).toMatchObject({ status: 1, stdout: '', stderr: usage('petrel-hvt') });
    }
  });

  it('names itself after argv[0]', () => {
    const link = scratch.path('mytender');
    symlinkSync(tender, link);
    const r = runSync(link, ['--version']);
    expect(r.stderr).toMatch(/^mytender tender, version /);
    expect(runSync(link, ['--help']).stderr).toBe(usage('mytender'));
  });

  it('without KERNEL: "Missing KERNEL operand", the usage, exit 1', () => {
    for (const args of [[], ['--mem=4'], ['--mem=4', '--']]) {
      const r = runTender(args);
      expect(r.status).toBe(1);
      expect(r.stderr).toBe(`petrel-hvt: Missing KERNEL operand\n${usage('petrel-hvt')}`);
    }
  });

  it('"--" ends the options: after it, --version is the kernel file name', () => {
    expectFailure(runTender(['--', '--version']), '--version: Could not open: No such file or directory');
  });

  it('words after KERNEL go to the guest, even when they look like options', () => {
    // The canary reads "--mem=8" as an unknown mode and halts with 2.
    const r = runTender(['--mem=4', canary, '--mem=8', '--block:x=y']);
    expect(r.stderr).not.toContain('Invalid option');
    expectReachedKvm(r, 2);
  });
});

describe('pass 2: options before KERNEL', () => {
  it('an unknown word: "Invalid option" with the word quoted, the usage, exit 1', () => {
    for (const word of ['--bogus', '-x', '--mem', '--block', '--net:service', '--gdb', '--x-exec-heap']) {
      const r = runTender([word, canary]);
      expect(r.status).toBe(1);
      expect(r.stderr).toBe(`petrel-hvt: Invalid option: \`${word}'\n${usage('petrel-hvt')}`);
    }
  });

  it('--mem=0 and --mem=abc are malformed', () => {
    for (const mem of ['--mem=0', '--mem=abc', '--mem=']) {
      const r = runTender([mem, canary]);
      expect(r.stderr).toBe('petrel-hvt: Malformed argument to --mem\n');
      expect(r.status).toBe(1);
    }
  });

  it('--mem is rounded down to 2 MiB with a warning, at least 2 MiB, and the run goes on', () => {
    for (const [mem, bytes] of [
      ['1', 2097152],
      ['3', 2097152],
      ['5', 4194304],
      ['4097', 4294967296],
    ] as const) {
      const r = runTender([`--mem=${mem}`, canary, 'exit', '0']);
      expect(r.stderr).toContain(`petrel-hvt: adjusting memory to ${bytes} bytes\n`);
      expectReachedKvm(r, 0);
    }
  });

  it('--mem reads a leading number (4MB is 4), the last one wins, even sizes need no warning', () => {
    const r = runTender(['--mem=4098', '--mem=4MB', '--mem= 2', canary, 'exit', '0']);
    expect(r.stderr).not.toContain('adjusting');
    expectReachedKvm(r, 0);
  });

  it('more than 4 GiB is refused before KVM is opened', () => {
    const r = runTender(['--mem=4098', canary]);
    expect(r.stderr).toBe(
      'petrel-hvt: guest memory size 4297064448 bytes exceeds the max size 4294967296 bytes\n',
    );
    expect(r.status).toBe(1);
  });

  it('a negative --mem wraps to a huge size, as in solo5, and is refused', () => {
    const r = runTender(['--mem=-5', canary]);
    expect(r.stderr).toBe(
      'petrel-hvt: adjusting memory to 18446744073703260160 bytes\n' +
        'petrel-hvt: guest memory size 18446744073703260160 bytes exceeds the max size 4294967296 bytes\n',
    );
    expect(r.status).toBe(1);
  });
});

describe('guest arguments (§1.7)', () => {
  it('are joined with single spaces; 8191 characters fit, 8192 do not (checked after KVM is open)', () => {
    const fits = ['exit', '0', 'x'.repeat(8191 - 'exit 0 '.length)];
    expectReachedKvm(runTender(['--mem=2', canary, ...fits]), 0);
    expectLateFailure(
      ['--mem=2', canary, ...fits.slice(0, 2), `${fits[2]}x`],
      'Guest command line too long (max=8191 characters)',
    );
  });
});

describe.runIf(!kvmUsable)('on a host where /dev/kvm cannot be opened', () => {
  it('fails at step 6 with solo5\'s "Could not open: /dev/kvm: ..." and status 1', () => {
    const r = runTender(['--mem=2', canary, 'hello']);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^petrel-hvt: Could not open: \/dev\/kvm: .+\n$/);
    expect(r.status).toBe(1);
  });
});

// Each kind of host without KVM, made on any host by scripts/kvm-host.sh (a /dev of its own).
describe('on hosts without KVM, whatever this one is (scripts/kvm-host.sh)', () => {
  const kvmHost = join(build, '..', '..', 'scripts', 'kvm-host.sh');
  it.each([
    ['no-node', 'No such file or directory'],
    ['broken-node', 'No such device'],
  ])('%s: step 6 fails with "Could not open: /dev/kvm: %s" and status 1', (kind, reason) => {
    // The namespace is the host without KVM here: PETREL_TEST_NO_KVM's preload, which would fail
    // every open of /dev/kvm with ENOENT, is left out so the node's own answer shows.
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'LD_PRELOAD'));
    const r = runSync('bash', [kvmHost, kind, '--', tender, '--mem=2', canary, 'hello'], undefined, env);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`petrel-hvt: Could not open: /dev/kvm: ${reason}\n`);
    expect(r.status).toBe(1);
  });
});

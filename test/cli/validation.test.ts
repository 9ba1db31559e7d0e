import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SUBCOMMANDS } from '../../src/cli/dispatch.js';
import { canaryImage, repo } from '../engine/guest.js';
import { petrel } from './io.js';

let dir: string;
/** A run directory with nothing in it: a command that got as far as connecting would exit 3. */
let nowhere: string[];

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'petrel-cli-'));
  nowhere = ['--run-dir', path.join(dir, 'run')];
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const refused = async (args: string[], text: string) => {
  const run = await petrel([...args, ...nowhere]);
  expect(run.stderr).toContain(text);
  expect(run.code).toBe(124);
  expect(run.stdout).toBe('');
};

describe('petrel refuses bad input before connecting (exit 2)', () => {
  it('bad names and paths', async () => {
    await refused(['create', 'no_such!', canaryImage], 'invalid name "no_such!"');
    await refused(['create', 'user:', canaryImage], 'path used instead of name: "user:"');
    await refused(['destroy', 'a::b'], 'invalid name "a::b": empty label at position 2');
    await refused(['console', 'user:'], 'path used instead of name');
    await refused(['block', 'add', 'my_disk', '10'], 'invalid name "my_disk"');
    await refused(['policy', 'info', 'a:b!'], 'invalid path "a:b!"');
  });

  it('block devices: sector sizes, duplicates, syntax (albatross-client texts)', async () => {
    const create = ['create', 'vm', canaryImage];
    for (const sector of ['256', '1000', '0', 'big']) {
      await refused(
        [...create, '--block', `disk@${sector}`],
        `--block disk@${sector}: sector size must be a power of two greater than or equal 512`,
      );
    }
    await refused([...create, '--block', 'disk', '--block', 'disk:other'], 'Block devices must be a set');
    await refused([...create, '--block', 'a:b:c'], 'expected NAME[:DEVICE][@SECTOR]');
    await refused([...create, '--block', 'disk:Bad_Device'], 'invalid label "Bad_Device"');
  });

  it('networks: duplicates, MACs, syntax', async () => {
    const create = ['create', 'vm', canaryImage];
    await refused([...create, '--net', 'br0', '--net', 'br0:service'], 'Bridge names must be a set');
    await refused([...create, '--net', 'service:br0@00:11:22'], 'bad mac address "00:11:22"');
    await refused([...create, '--net', ':br0'], 'expected [NETIF:]BRIDGE[@MAC]');
  });

  it('the image: its manifest must list exactly the configured devices', async () => {
    await refused(
      ['create', 'vm', canaryImage, '--net', 'service'],
      'specified bridge(s) does not match with the manifest. Devices present in manifest: ',
    );
    await refused(
      ['create', 'vm', canaryImage, '--block', 'storage'],
      'specified block device(s) does not match with manifest.',
    );
    await refused(['create', 'vm', path.join(repo, 'package.json')], 'package.json');
  });

  it('numbers and combinations of flags', async () => {
    await refused(
      ['create', 'vm', canaryImage, '--mem', '0'],
      '--mem must be a whole number, at least 1 (got "0")',
    );
    await refused(
      ['create', 'vm', canaryImage, '--cpu=-1'],
      '--cpu must be a whole number, at least 0 (got "-1")',
    );
    await refused(['create', 'vm', canaryImage, '--cpu', '-1'], "Option '--cpu' argument is ambiguous");
    await refused(['create', 'vm', canaryImage, '--exit-code', '3'], '--exit-code needs --restart-on-fail');
    await refused(['restart', 'vm', '--mem', 'lots'], '--mem must be a whole number');
    await refused(['get', 'vm', '--level', '10'], '--level must be a whole number, 0 to 9 (got "10")');
    await refused(['block', 'dump', 'disk', '--level=-1'], '--level must be a whole number, 0 to 9');
    await refused(['block', 'add', 'disk', '0'], 'SIZE (MiB) must be a whole number, at least 1 (got "0")');
    await refused(['block', 'info', '--compress'], '--compress is for block set');
    await refused(['console', 'vm', '--count', '5', '--since', '5m'], 'give --count or --since, not both');
    await refused(['console', 'vm', '--count', '2000'], '--count must be a whole number, 0 to 1024');
    await refused(['console', 'vm', '--since', 'yesterday'], '--since yesterday: expected an ISO 8601 time');
    await refused(['create', 'vm'], 'missing IMAGE');
    await refused(['destroy', 'a', 'b'], "unexpected argument 'b'");
    await refused(['policy', 'frobnicate', 'x'], "unknown action 'frobnicate'");
    await refused(['create', 'vm', canaryImage, '--bogus'], "Unknown option '--bogus'");
  });

  it('policies must be usable (Albatross texts)', async () => {
    await refused(['policy', 'add', 'alice', '--vms', '0'], 'Unusable policy with no unikernels');
    await refused(
      ['policy', 'add', 'alice', '--vms', '1', '--mem', '16'],
      'Unusable policy with memory 16 MB <= 16 MB',
    );
    await refused(['policy', 'add', 'alice', '--vms', '1', '--cpus', ','], 'Unusable policy with no CPUids');
    await refused(['policy', 'add', 'alice'], 'policy add needs --vms N');
    await refused(['policy', 'remove', 'alice', '--vms', '2'], '--vms is for policy add');
  });

  it('connection flags', async () => {
    await refused(['info', '--ca', 'ca.pem'], '--ca is for --remote');
    const remote = await petrel(['info', '--remote', 'example.org:1025']);
    expect(remote.stderr).toContain('--remote needs --ca FILE, --cert FILE and --key FILE');
    expect(remote.code).toBe(124);
    const both = await petrel([
      'info',
      '--remote',
      'h',
      '--socket',
      's',
      '--ca',
      'a',
      '--cert',
      'b',
      '--key',
      'c',
    ]);
    expect(both.stderr).toContain('--remote cannot be combined with --socket or --run-dir');
    const port = await petrel(['info', '--remote', 'h:99999', '--ca', 'a', '--cert', 'b', '--key', 'c']);
    expect(port.stderr).toContain('--remote h:99999: expected HOST:PORT');
  });

  it('remote mode loads the TLS client only when asked, and it reports what it cannot read', async () => {
    const run = await petrel(['info', '--remote', '[::1]:1025', '--ca', 'a', '--cert', 'b', '--key', 'c']);
    expect(run.stderr).not.toContain('remote mode needs');
    expect(run.stderr).toContain('a');
    expect(run.code).not.toBe(0);
  });
});

describe('options before the command', () => {
  /** The same command line with the options moved before the command: the same outcome. */
  const bothOrders = async (command: string[], options: string[]) => {
    const before = await petrel([...options, ...command]);
    const after = await petrel([...command, ...options]);
    expect(before).toEqual(after);
    return before;
  };

  it('connection flags and --json are checked as when they follow the command', async () => {
    const remote = await bothOrders(['info'], ['--remote', 'example.org:1025']);
    expect(remote).toMatchObject({ code: 124, stdout: '' });
    expect(remote.stderr).toContain('--remote needs --ca FILE, --cert FILE and --key FILE');
    const both = await bothOrders(
      ['info'],
      ['--remote=h', '--socket', 's', '--ca', 'a', '--cert=b', '--key', 'c'],
    );
    expect(both.stderr).toContain('--remote cannot be combined with --socket or --run-dir');
    expect((await bothOrders(['info'], ['--ca', 'ca.pem'])).stderr).toContain('--ca is for --remote');
    const gone = await bothOrders(['policy', 'info', '--json'], [...nowhere]);
    expect(gone.code).toBe(122);
    expect(gone.stderr).toContain(path.join(dir, 'run', 'util', 'vmmd.sock'));
    // A subcommand that takes no connection flag refuses them wherever they stand.
    const wire = await bothOrders(['wire', 'decode', 'f'], ['--socket', 's']);
    expect(wire.code).toBe(2);
    expect(wire.stderr).toContain("Unknown option '--socket'");
    // petrel fleet (its own module) gets them through the same dispatch.
    const fleet = await bothOrders(['fleet', 'nodes'], ['--json']);
    expect(fleet.code).not.toBe(0);
    expect(fleet.stderr).toContain('--db');
  });

  it('a value is never taken for an option, nor an option for a value', async () => {
    const at = path.join(dir, 'run');
    const inline = await petrel([`--run-dir=${at}`, '--json', 'info']);
    expect(inline).toEqual(await petrel(['info', '--run-dir', at, '--json']));
    const dashed = await petrel(['--socket=-odd', 'info']);
    expect(dashed.stderr).toContain('cannot connect to -odd');
  });

  it('mistakes before the command are usage errors naming the option, and nothing runs', async () => {
    const cases: [string[], string][] = [
      [['--run-dir'], "petrel: option '--run-dir' needs a value"],
      [['--run-dir', '--json', 'info'], "petrel: option '--run-dir' needs a value"],
      [['--socket', '-x', 'info'], "write --socket=VALUE for one that starts with '-'"],
      [['--json=yes', 'info'], "petrel: option '--json' takes no value"],
      [['--mem', '64', 'create'], "petrel: unknown option '--mem' before the command"],
      [['-v', 'info'], "petrel: unknown command '-v'"],
    ];
    for (const [args, text] of cases) {
      const run = await petrel(args);
      expect(run.stderr).toContain(text);
      expect(run.stderr).toContain('usage: petrel [connection options] [--json] <command>');
      expect(run.code).toBe(2);
      expect(run.stdout).toBe('');
    }
    // Help still works with options before it.
    const help = await petrel(['--run-dir', 'x', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('before or after the command');
    expect((await petrel(['--json', 'help', 'info'])).stdout).toMatch(/^usage: petrel info/);
  });
});

describe('petrel when petreld is not there (exit 3)', () => {
  it('names the socket it tried and suggests --run-dir', async () => {
    const run = await petrel(['info', ...nowhere]);
    expect(run.code).toBe(122);
    expect(run.stderr).toBe(
      `petrel info: cannot connect to ${path.join(dir, 'run', 'util', 'vmmd.sock')}: no such socket; ` +
        "give petreld's run directory with --run-dir DIR, or a socket with --socket PATH\n",
    );
    // Each command goes to its own socket.
    expect((await petrel(['console', 'vm', ...nowhere])).stderr).toContain(path.join('util', 'console.sock'));
    expect((await petrel(['stats', 'vm', ...nowhere])).stderr).toContain(path.join('util', 'stat.sock'));
    const socket = path.join(dir, 'other.sock');
    const single = await petrel(['policy', 'info', '--socket', socket]);
    expect(single.code).toBe(122);
    expect(single.stderr).toContain(`cannot connect to ${socket}`);
  });

  it('node info without a node.json', async () => {
    const run = await petrel(['node', 'info', ...nowhere]);
    expect(run.code).toBe(124);
    expect(run.stderr).toContain(`cannot read ${path.join(dir, 'run', 'node.json')}`);
    expect(run.stderr).toContain('--run-dir');
  });
});

describe('petrel --help', () => {
  const ours = [
    'create',
    'destroy',
    'restart',
    'info',
    'get',
    'policy',
    'block',
    'console',
    'consoles',
    'stats',
    'node',
  ];
  it.each(ours)('%s documents examples and exit codes', async (name) => {
    expect(Object.keys(SUBCOMMANDS)).toContain(name);
    const run = await petrel([name, '--help']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(new RegExp(`^usage:[\\s\\S]*petrel ${name}`));
    expect(run.stdout).toContain('examples:');
    expect(run.stdout).toContain('122  cannot connect');
    expect(run.stdout).toContain('117  petreld refused the command');
    expect(run.stdout).toContain('124  usage error');
  });
});

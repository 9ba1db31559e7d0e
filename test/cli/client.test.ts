// The petrel subcommands against a real petreld started in-process on temporary directories
// (its canary VMs run under the fake-kvm tender on hosts without KVM, see test/engine/guest.ts).
import { createHash, randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runPetrel } from '../../src/cli/dispatch.js';
import { request, said } from '../daemon/client.js';
import { type TestDaemon, testDaemon } from '../daemon/start.js';
import { canaryImage } from '../engine/guest.js';
import { canaryConfig, createCommand } from '../engine/harness.js';
import { capture, petrel, progressDraws, streamingFiles, until } from './io.js';

let node: TestDaemon;
let at: string[];

beforeAll(async () => {
  node = await testDaemon({ statsInterval: '200ms' });
  at = ['--run-dir', node.runDir];
});
afterAll(() => node?.stop());

const run = (...args: string[]) => petrel([...args, ...at]);

describe('unikernels', () => {
  it('create, info (table and JSON), console, get, destroy, consoles', async () => {
    const created = await run('create', 'cli-vm', canaryImage, '--mem', '16', '--arg', 'wait', '--arg', 'hi');
    expect(created).toMatchObject({ code: 0, stdout: 'created unikernel\n', stderr: '' });

    const table = await run('info');
    expect(table.code).toBe(0);
    const [header, row, ...more] = table.stdout.trimEnd().split('\n');
    expect(header).toMatch(
      /^NAME\s+MEMORY\s+CPUS\s+NETWORKS\s+BLOCKS\s+ON FAILURE\s+STARTED\s+DIGEST\s+ARGUMENTS$/,
    );
    expect(row).toMatch(
      /^:cli-vm\s+16 MiB\s+1@0\s+-\s+-\s+quit\s+\d{4}-\d\d-\d\dT[\d:]+Z\s+[0-9a-f]{12}\s+wait hi$/,
    );
    expect(more).toEqual([]);

    const json = await run('info', 'cli-vm', '--json');
    const [entry, ...others] = JSON.parse(json.stdout);
    expect(others).toEqual([]);
    expect(entry).toMatchObject({
      name: ':cli-vm',
      typ: 'solo5',
      memory: 16,
      cpuids: [0],
      arguments: ['wait', 'hi'],
    });
    const image = await readFile(canaryImage);
    expect(entry.digest).toBe(createHash('sha256').update(image).digest('hex'));
    expect((await run('info', 'other:')).stdout).toBe('no unikernels\n');

    // The console follows until interrupted, then ends cleanly.
    const watch = capture();
    const following = runPetrel(['console', 'cli-vm', '--count', '5', ...at], watch.io);
    await until(() => watch.stdout().includes('petrel-canary hi'), 'the canary line');
    watch.interrupt();
    expect(await following).toBe(0);
    expect(watch.stderr()).toBe('petrel console: subscribed\n');
    expect(watch.stdout()).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z petrel-canary hi$/m);

    const lines = capture();
    const jsonFollowing = runPetrel(['console', ':cli-vm', '--since', '1h', '--json', ...at], lines.io);
    await until(() => lines.stdout().includes('\n'), 'a JSON line');
    lines.interrupt();
    expect(await jsonFollowing).toBe(0);
    expect(JSON.parse(lines.stdout().split('\n')[0] as string)).toMatchObject({
      name: ':cli-vm',
      line: 'petrel-canary hi',
    });

    // get writes the image petreld stores, decompressed whatever the level it travelled at.
    for (const level of ['0', '9']) {
      const out = path.join(node.dir, `image-${level}.hvt`);
      const got = await run('get', 'cli-vm', '--level', level, '--out', out);
      expect(got).toMatchObject({ code: 0, stdout: '', stderr: '' });
      expect((await readFile(out)).equals(image)).toBe(true);
    }
    const toStdout = await run('get', 'cli-vm');
    expect(toStdout.bytes.equals(image)).toBe(true);

    expect(await run('destroy', 'cli-vm')).toMatchObject({ code: 0, stdout: 'destroyed unikernel\n' });
    expect((await run('consoles')).stdout.split('\n')).toContain(':cli-vm');
    expect(JSON.parse((await run('consoles', '--json')).stdout)).toContain(':cli-vm');
    const again = await run('destroy', 'cli-vm');
    expect(again).toMatchObject({ code: 117, stdout: '', stderr: 'petrel destroy: destroy: not found\n' });
  });

  it('create --compress and --force, restart with a new configuration', async () => {
    expect(
      (await run('create', 'zvm', canaryImage, '--compress', '--arg', 'wait', '--arg', 'z')).stdout,
    ).toBe('created unikernel\n');
    const twice = await run('create', 'zvm', canaryImage);
    expect(twice).toMatchObject({
      code: 117,
      stderr: 'petrel create: Unikernel with same name is already running\n',
    });
    const forced = await run('create', 'zvm', canaryImage, '--force', '--arg', 'wait', '--arg', 'y');
    expect(forced).toMatchObject({ code: 0, stdout: 'created unikernel\n' });
    const restarted = await run('restart', 'zvm', '--mem', '24', '--arg', 'wait', '--arg', 'x', '--json');
    expect(JSON.parse(restarted.stdout)).toEqual({ name: ':zvm', reply: 'created unikernel' });
    const [entry] = JSON.parse((await run('info', 'zvm', '--json')).stdout);
    expect(entry).toMatchObject({ memory: 24, arguments: ['wait', 'x'] });
    expect((await run('restart', 'zvm')).stdout).toBe('created unikernel\n');
    expect((await run('destroy', 'zvm')).code).toBe(0);
  });
});

describe('connection options and --json before or after the command', () => {
  it('the same answers either way', async () => {
    const engine = path.join(node.runDir, 'util', 'vmmd.sock');
    const created = await petrel([
      '--run-dir',
      node.runDir,
      'create',
      'order-vm',
      canaryImage,
      '--arg',
      'wait',
      '--arg',
      'o',
    ]);
    expect(created).toMatchObject({ code: 0, stdout: 'created unikernel\n', stderr: '' });
    const pairs: [string[], string[]][] = [
      [
        ['--run-dir', node.runDir, 'info'],
        ['info', '--run-dir', node.runDir],
      ],
      [
        [`--run-dir=${node.runDir}`, '--json', 'info', 'order-vm'],
        ['info', 'order-vm', '--json', ...at],
      ],
      [
        ['--socket', engine, '--json', 'policy', 'info'],
        ['policy', 'info', '--json', '--socket', engine],
      ],
      [
        ['--json', ...at, 'block', 'info'],
        ['block', 'info', ...at, '--json'],
      ],
      [
        [...at, 'node', 'info', '--json'],
        ['node', 'info', '--json', ...at],
      ],
    ];
    for (const [before, after] of pairs) {
      const first = await petrel(before);
      expect(first.code).toBe(0);
      expect(first.stdout).not.toBe('');
      expect(first).toEqual(await petrel(after));
    }
    const listed = JSON.parse((await petrel(['--json', ...at, 'info'])).stdout);
    expect(listed.map((entry: { name: string }) => entry.name)).toContain(':order-vm');
    const destroyed = await petrel(['--json', '--socket', engine, 'destroy', 'order-vm']);
    expect(JSON.parse(destroyed.stdout)).toEqual({ name: ':order-vm', reply: 'destroyed unikernel' });
  });
});

describe('statistics', () => {
  it('stats follows samples of a running unikernel until interrupted', async () => {
    expect((await run('create', 'st-vm', canaryImage, '--arg', 'wait', '--arg', 'st')).code).toBe(0);
    for (const json of [false, true]) {
      const watch = capture();
      const following = runPetrel(['stats', 'st-vm', ...(json ? ['--json'] : []), ...at], watch.io);
      await until(() => watch.stdout().includes('\n'), 'a statistics sample');
      watch.interrupt();
      expect(await following).toBe(0);
      expect(watch.stderr()).toBe('petrel stats: subscribed\n');
      const first = watch.stdout().split('\n')[0] as string;
      if (json) {
        expect(JSON.parse(first)).toMatchObject({
          name: ':st-vm',
          rusage: { utime: { seconds: expect.any(String) } },
        });
      } else {
        expect(first).toMatch(
          /^\d{4}-\d\d-\d\dT[\d:]+Z {2}:st-vm {2}user \d+\.\d{3}s {2}sys \d+\.\d{3}s {2}rss \d+ pages/,
        );
      }
    }
    expect((await run('destroy', 'st-vm')).code).toBe(0);
  });
});

describe('policies', () => {
  it('add, info, a command they refuse (exit 117 with petreld’s text), remove', async () => {
    expect(await run('policy', 'add', 'alice', '--vms', '1', '--mem', '64', '--cpus', '0')).toMatchObject({
      code: 0,
      stdout: 'added policy\n',
    });
    const table = await run('policy', 'info', 'alice');
    expect(table.stdout).toMatch(
      /^PATH\s+UNIKERNELS\s+MEMORY\s+CPUIDS\s+BLOCK\s+BRIDGES\n:\s+1\s+64 MiB\s+0\s+-\s+-\n$/,
    );
    expect(JSON.parse((await run('policy', 'info', 'alice', '--json')).stdout)).toEqual([
      { path: ':', vms: '1', memory: 64, cpuids: [0], block: null, bridges: [] },
    ]);
    const all = JSON.parse((await run('policy', 'info', '--json')).stdout) as { path: string }[];
    expect(all.map((p) => p.path)).toEqual([':', 'alice:']);

    expect((await run('create', 'alice:one', canaryImage, '--arg', 'wait', '--arg', '1')).code).toBe(0);
    const refused = await run('create', 'alice:two', canaryImage, '--arg', 'wait', '--arg', '2');
    // The same command straight on the socket: the client prints exactly petreld's text.
    const direct = await request(
      path.join(node.runDir, 'util', 'vmmd.sock'),
      'alice:two',
      createCommand(await canaryConfig(canaryImage, ['wait', '2'], { memory: 32 })),
    );
    expect(said(direct[0])).toMatch(/^Failure: .*unikernel/);
    expect(refused).toMatchObject({
      code: 117,
      stdout: '',
      stderr: `petrel create: ${said(direct[0]).slice(9)}\n`,
    });

    expect((await run('destroy', 'alice:one')).code).toBe(0);
    expect((await run('policy', 'remove', 'alice')).stdout).toBe('removed policy\n');
    expect((await run('policy', 'info', 'alice', '--json')).stdout).toBe('[]\n');
    expect(await run('policy', 'remove', 'alice')).toMatchObject({
      code: 117,
      stderr: 'petrel policy: unknown policy\n',
    });
  });
});

describe('block devices', () => {
  it('add, info, set and dump round-trip with and without compression, remove', async () => {
    expect((await run('block', 'add', 'disk', '2')).stdout).toBe('added block device\n');
    expect((await run('block', 'info')).stdout).toMatch(/^NAME\s+SIZE\s+STATE\n:disk\s+2 MiB\s+free\n$/);
    expect(JSON.parse((await run('block', 'info', 'disk', '--json')).stdout)).toEqual([
      { name: ':disk', size: 2, active: false },
    ]);

    const size = 2 * 1024 * 1024;
    const content = randomBytes(300_000);
    const file = path.join(node.dir, 'content.bin');
    await writeFile(file, content);
    const expected = Buffer.concat([content, Buffer.alloc(size - content.length)]);

    // Plain, streamed in pieces both ways (the process I/O), then compressed on the way.
    const streamed = await petrel(['block', 'set', 'disk', file, ...at], streamingFiles());
    expect(streamed).toMatchObject({ code: 0, stdout: 'set block device\n', stderr: '' });
    for (const level of [[], ['--level', '6']]) {
      const out = path.join(node.dir, `dump${level.length}.bin`);
      expect(
        (await petrel(['block', 'dump', 'disk', ...level, '--out', out, ...at], streamingFiles())).code,
      ).toBe(0);
      expect((await readFile(out)).equals(expected)).toBe(true);
    }
    // On a terminal, transfers above 1 MB draw progress on stderr, finished with a newline;
    // smaller ones, and any with --json, draw nothing (the real terminal: test/cli/terminal).
    const onTty = { isTty: { stdout: false, stderr: true } };
    const large = randomBytes(1_500_000);
    await writeFile(file, large);
    const drawn = await petrel(['block', 'set', 'disk', file, ...at], onTty);
    expect(drawn.stdout).toBe('set block device\n');
    const draws = progressDraws(drawn.stderr);
    for (const draw of draws) {
      expect(draw).toMatch(/^petrel block set :disk: \d+\.\d MiB of 1\.4 MiB \(\d+%\), \d+\.\d MiB\/s$/);
    }
    expect(draws.at(-1)).toMatch(/: 1\.4 MiB of 1\.4 MiB \(100%\), /);
    const dumping = await petrel(['block', 'dump', 'disk', ...at], onTty);
    expect(dumping.bytes.equals(Buffer.concat([large, Buffer.alloc(size - large.length)]))).toBe(true);
    expect(progressDraws(dumping.stderr).at(-1)).toMatch(
      /^petrel block dump :disk: 2\.0 MiB, \d+\.\d MiB\/s$/,
    );
    const quiet = await petrel(['block', 'set', 'disk', file, '--json', ...at], onTty);
    expect(quiet).toMatchObject({ code: 0, stderr: '' });
    const other = randomBytes(1000);
    await writeFile(file, other);
    const small = await petrel(['block', 'set', 'disk', file, '--compress', ...at], onTty);
    expect(small).toMatchObject({ code: 0, stdout: 'set block device\n', stderr: '' });
    const dumped = await run('block', 'dump', 'disk', '--level', '1');
    expect(dumped.bytes.equals(Buffer.concat([other, Buffer.alloc(size - other.length)]))).toBe(true);
    expect(dumped.stderr).toBe('');

    // Refusals from petreld: too much data, an unknown device (answered before the stream ends).
    await writeFile(file, randomBytes(size + 1));
    expect(await run('block', 'set', 'disk', file)).toMatchObject({
      code: 117,
      stderr: 'petrel block: stream exceeds size\n',
    });
    expect(await run('block', 'set', 'nodisk', file)).toMatchObject({
      code: 117,
      stderr: 'petrel block: set block: not found\n',
    });
    expect(await run('block', 'dump', 'nodisk')).toMatchObject({
      code: 117,
      stderr: 'petrel block: dump block: not found\n',
    });

    expect((await run('block', 'remove', 'disk')).stdout).toBe('removed block\n');
    expect((await run('block', 'info', '--json')).stdout).toBe('[]\n');
  });
});

describe('node info', () => {
  it('prints the capability report and the canary result, as a table or JSON', async () => {
    const table = await run('node', 'info');
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^probed at\s+\d{4}-/m);
    expect(table.stdout).toMatch(/^tun\s+yes$/m);
    expect(table.stdout).toMatch(/^canary( hvt)?\s+booted in \d+ ms at /m);
    const json = JSON.parse((await run('node', 'info', '--json')).stdout);
    expect(json.report.tun).toBe(true);
    expect(JSON.stringify(json)).toContain('"bootMs":');
  });
});

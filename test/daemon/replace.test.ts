// Replace with a liveness check (issue 24 item 5, Petrel (m)) against a real petreld process
// with real tenders (the fake-kvm tender where the host has no KVM, as the crash tests): a
// failing check brings back the old image, a passing one stays, the queue is not held during
// the check, a destroy during it gives the replacement up, bad input changes nothing, and a
// SIGKILL during the check (rolled back) or after the pass (kept) is resolved at the next start.

import { createHash } from 'node:crypto';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Wire } from '../../src/wire/types.js';
import { petrel } from '../cli/io.js';
import { commandFrame, open, request, said } from '../daemon/client.js';
import type { DaemonProcess } from '../daemon/process.js';
import { canaryImage } from '../engine/guest.js';
import { canaryConfig, createCommand, makeNetns, storedState, waitFor } from '../engine/harness.js';
import { processTests } from './process-tests.js';

const suite = processTests('replace');
let oldImage: Buffer;
let newFile: string;
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

beforeAll(async () => {
  oldImage = await readFile(canaryImage);
  // Bytes after the ELF that the tender ignores: another image, another digest.
  newFile = path.join(suite.base, 'canary-v2.hvt');
  await writeFile(newFile, Buffer.concat([oldImage, Buffer.from('replacement v2')]));
});

interface Node {
  readonly dir: string;
  readonly socket: string;
  readonly netns: ReturnType<typeof makeNetns>;
  daemon: DaemonProcess;
}

const launch = (node: Pick<Node, 'dir' | 'netns'>, crashAt?: string): Promise<DaemonProcess> =>
  suite.launch(node.dir, node.netns.name, {
    flags: ['--canary-deadline', '5s'],
    env: crashAt ? { PETREL_CRASH_AT: crashAt } : {},
  });

async function startNode(crashAt?: string): Promise<Node> {
  const dir = await mkdtemp(path.join(suite.base, 'node-'));
  const netns = makeNetns();
  const daemon = await launch({ dir, netns }, crashAt);
  return { dir, netns, daemon, socket: `${dir}/run/util/vmmd.sock` };
}

async function stopNode(node: Node | undefined): Promise<void> {
  if (node === undefined) return;
  await node.daemon.stop().catch(() => undefined);
  node.netns.destroy();
}

const createOld = async (node: Node, vm: string, word = 'old') =>
  (await request(node.socket, vm, createCommand(await canaryConfig(canaryImage, ['wait', word])))).map(said);

const cli = (node: Node, ...args: string[]) => petrel([...args, '--run-dir', `${node.dir}/run`]);

/** The running unikernel's image digest and arguments, from `petrel info --json`. */
async function infoOf(node: Node, vm: string): Promise<{ digest: string; args: string[] } | null> {
  const run = await cli(node, 'info', '--json');
  if (run.code !== 0) throw new Error(`info: ${run.stderr}`);
  const parsed = JSON.parse(run.stdout) as unknown;
  const list = (Array.isArray(parsed) ? parsed : [parsed]) as Record<string, unknown>[];
  const entry = list.find((e) => String(e.name).replace(/^:/u, '') === vm.replace(/^:/u, ''));
  if (entry === undefined) return null;
  const text = JSON.stringify(entry);
  const digest = /"(?:digest|sha256|image_sha256|imageSha256)":"([0-9a-f]{64})"/u.exec(text)?.[1] ?? '';
  const args = (entry.arguments ?? entry.args ?? []) as string[];
  return { digest, args };
}

/** Console lines of `vm` printed at or after `since`. */
async function consoleSince(node: Node, vm: string, since: Date): Promise<string[]> {
  const watch = open(
    `${node.dir}/run/util/console.sock`,
    commandFrame(vm, { type: 'console-subscribe', release: '2.1', select: { kind: 'since', since } }),
  );
  await new Promise((r) => setTimeout(r, 300));
  watch.close();
  return watch.messages.flatMap((m: Wire) =>
    m.payload.kind === 'data' && m.payload.data.type === 'console'
      ? [Buffer.from(m.payload.data.line).toString()]
      : [],
  );
}

/**
 * Starts replacing `vm` by the new image with a check that never passes, and waits until its
 * pending record is stored; `answer`: the replace's, still to come.
 */
async function replaceHeldInCheck(node: Node, vm: string): Promise<{ answer: Promise<Wire[]> }> {
  const replacing = request(node.socket, vm, {
    type: 'unikernel-create',
    force: true,
    release: '2.7',
    config: await canaryConfig(newFile, ['wait', 'v2']),
    check: { probe: { kind: 'console', regex: 'never' }, withinMs: 20_000, keepConfig: false },
  });
  await waitFor(async () => (await storedState(`${node.dir}/state`)).replacements?.[0], 'the pending record');
  return { answer: replacing };
}

describe('replace with a liveness check, one petreld', () => {
  let node: Node;
  beforeAll(async () => {
    node = await startNode();
  }, 60_000);
  afterAll(() => stopNode(node));

  it('a failing check is rolled back: the old image and configuration run again, and the queue was not held', {
    timeout: 60_000,
  }, async () => {
    expect(await createOld(node, ':web')).toEqual(['created unikernel']);
    const before = await infoOf(node, ':web');
    expect(before?.digest).toBe(sha(oldImage));
    const began = Date.now();
    const replacing = cli(
      node,
      'replace',
      'web',
      newFile,
      '--console-line',
      '^petrel-canary ready$',
      '--within',
      '6s',
      '--arg',
      'wait',
      '--arg',
      'broken',
    );
    // During the check the new image runs, and other commands complete.
    const during = await waitFor(async () => {
      const seen = await infoOf(node, ':web');
      return seen?.digest === sha(await readFile(newFile)) ? seen : undefined;
    }, 'the new image to run');
    expect(during.digest).not.toBe(before?.digest);
    let replaced = false;
    void replacing.then(() => {
      replaced = true;
    });
    expect(await createOld(node, ':other', 'other')).toEqual(['created unikernel']);
    expect((await cli(node, 'destroy', 'other')).code).toBe(0);
    // Both went through the queue while the check was still running.
    expect(replaced).toBe(false);
    const run = await replacing;
    const ended = Date.now();
    expect(run.code).toBe(117);
    expect(run.stderr).toMatch(/web failed its check \(console line \/\^petrel-canary ready\$\/\)/u);
    expect(run.stderr).toMatch(/no console line matching .* within 6 s/u);
    expect(run.stderr).toMatch(/the previous unikernel runs again/u);
    expect(ended - began).toBeGreaterThanOrEqual(6000);
    const after = await infoOf(node, ':web');
    expect(after?.digest).toBe(sha(oldImage));
    // Its console after the rollback: the old configuration's line, not the broken one's.
    const lines = await waitFor(async () => {
      const l = await consoleSince(node, ':web', new Date(began + 6000));
      return l.some((x) => x.includes('petrel-canary old')) ? l : undefined;
    }, 'the old line again');
    expect(lines.join('\n')).not.toMatch(/broken/u);
    const state = await storedState(`${node.dir}/state`);
    expect(state.replacements).toBeUndefined();
    expect(state.unikernels.find((u) => u.name.label === 'web')?.image.digest).toBe(sha(oldImage));
  });

  it('a passing check stays, with the old configuration when no configuration flag is given', {
    timeout: 60_000,
  }, async () => {
    const run = await cli(
      node,
      'replace',
      'web',
      newFile,
      '--console-line',
      '^petrel-canary old$',
      '--within',
      '10s',
    );
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(
      /^replaced unikernel :web: console line .* passed \(console line "petrel-canary old"\)/u,
    );
    const after = await infoOf(node, ':web');
    expect(after?.digest).toBe(sha(await readFile(newFile)));
    const state = await storedState(`${node.dir}/state`);
    expect(state.replacements).toBeUndefined();
    // The old image left the store once nothing named it.
    const store = await import('node:fs/promises').then((fs) => fs.readdir(`${node.dir}/state/images`));
    expect(store).not.toContain(sha(oldImage));
  });

  it('refuses bad input with a clear error and changes nothing', { timeout: 60_000 }, async () => {
    const digest = (await infoOf(node, ':web'))?.digest;
    const cases: [string[], RegExp][] = [
      [
        ['--console-line', 'x', '--tcp-check', '127.0.0.1:1'],
        /exactly one of --http-check, --tcp-check and --console-line \(2 given\)/u,
      ],
      [[], /exactly one of .* \(0 given\)/u],
      [['--console-line', '(a+)+$'], /a repeated group holding a repetition is not allowed/u],
      [['--console-line', '(unclosed'], /--console-line "\(unclosed": Invalid regular expression/u],
      [['--http-check', 'ftp://10.0.0.2/'], /only http:\/\/ and https:\/\/ URLs are checked/u],
      [['--http-check', 'not a url'], /is not a URL/u],
      [['--tcp-check', '10.0.0.2:99999'], /port must be 1 to 65535/u],
      [['--console-line', 'x', '--within', '20m'], /--within must be between 1s and 10m/u],
    ];
    for (const [flags, message] of cases) {
      const run = await cli(node, 'replace', 'web', newFile, ...flags);
      expect(run.code, flags.join(' ')).toBe(124);
      expect(run.stderr, flags.join(' ')).toMatch(message);
    }
    const unknown = await cli(node, 'replace', 'nobody', newFile, '--console-line', 'x');
    expect(unknown.code).toBe(117);
    expect(unknown.stderr).toMatch(/replace: unikernel :nobody not found/u);
    // Over the wire, past the CLI's checks: petreld checks again.
    const [answer] = await request(node.socket, ':web', {
      type: 'unikernel-create',
      force: true,
      release: '2.7',
      config: await canaryConfig(newFile, ['wait', 'x']),
      check: { probe: { kind: 'console', regex: '(x*)*' }, withinMs: 2000, keepConfig: false },
    });
    expect(said(answer)).toMatch(/^Failure: replace: --console-line "\(x\*\)\*": a repeated group/u);
    expect((await infoOf(node, ':web'))?.digest).toBe(digest);
    expect((await storedState(`${node.dir}/state`)).replacements).toBeUndefined();
  });

  it('a new unikernel that exits during the check fails it at once, and the old one runs again', {
    timeout: 60_000,
  }, async () => {
    expect(await createOld(node, ':quits')).toEqual(['created unikernel']);
    const began = Date.now();
    const run = await cli(
      node,
      'replace',
      'quits',
      newFile,
      '--console-line',
      'never',
      '--within',
      '30s',
      '--arg',
      'exit',
      '--arg',
      '3',
    );
    expect(run.code).toBe(117);
    expect(run.stderr).toMatch(
      /quits failed its check .*: the new unikernel exited \(exit 3\) before it passed; the previous unikernel runs again/u,
    );
    // Well before the 30 s deadline.
    expect(Date.now() - began).toBeLessThan(20_000);
    expect((await infoOf(node, ':quits'))?.digest).toBe(sha(oldImage));
    expect((await cli(node, 'destroy', 'quits')).code).toBe(0);
  });

  it('a force-create during the check gives the replacement up; the create stays', {
    timeout: 60_000,
  }, async () => {
    expect(await createOld(node, ':raced')).toEqual(['created unikernel']);
    const replacing = (await replaceHeldInCheck(node, ':raced')).answer;
    const created = await cli(
      node,
      'create',
      'raced',
      canaryImage,
      '--force',
      '--arg',
      'wait',
      '--arg',
      'third',
    );
    expect(created.code).toBe(0);
    const [answer] = await replacing;
    expect(said(answer)).toMatch(
      /raced was destroyed or created again during the check; the replacement was given up/u,
    );
    expect((await infoOf(node, ':raced'))?.args).toEqual(['wait', 'third']);
    expect((await storedState(`${node.dir}/state`)).replacements).toBeUndefined();
    expect((await cli(node, 'destroy', 'raced')).code).toBe(0);
  });

  it('petrel replace --help says what it does and lists the checks', async () => {
    const run = await petrel(['replace', '--help']);
    expect(run.code).toBe(0);
    for (const text of [
      '--http-check URL',
      '--tcp-check HOST:PORT',
      '--console-line REGEX',
      '--within',
      'brings back',
    ])
      expect(run.stdout).toContain(text);
  });

  it('a destroy during the check gives the replacement up', { timeout: 60_000 }, async () => {
    expect(await createOld(node, ':gone')).toEqual(['created unikernel']);
    const replacing = (await replaceHeldInCheck(node, ':gone')).answer;
    // One replacement of a name at a time.
    const second = await cli(node, 'replace', 'gone', newFile, '--console-line', 'x');
    expect(second.code).toBe(117);
    expect(second.stderr).toMatch(/replace: a replacement of :gone is being checked already/u);
    const started = Date.now();
    expect((await cli(node, 'destroy', 'gone')).code).toBe(0);
    const [answer] = await replacing;
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(said(answer)).toMatch(
      /was destroyed or created again during the check; the replacement was given up/u,
    );
    expect(await infoOf(node, ':gone')).toBeNull();
    const state = await storedState(`${node.dir}/state`);
    expect(state.replacements).toBeUndefined();
    expect(state.unikernels.map((u) => u.name.label)).not.toContain('gone');
  });
});

/** The daemon's exit, or what the replace answered if it did not crash (for the failure's message). */
async function crashed(node: Node, answer: Promise<Wire[]>) {
  // A connection the crash closed answered nothing: then the exit is the answer.
  const replied = answer.then((w): Promise<unknown> | string =>
    w.length === 0
      ? node.daemon.exited
      : `answered ${w.map(said).join(', ')}; stderr ${node.daemon.stderr()}`,
  );
  return Promise.race([node.daemon.exited, replied]);
}

/** Replaces :web by the new image with a console check, on a petreld set to crash in it. */
async function replaceUntilCrash(node: Node) {
  const answer = request(node.socket, ':web', {
    type: 'unikernel-create',
    force: true,
    release: '2.7',
    config: await canaryConfig(newFile, ['wait', 'v2']),
    check: { probe: { kind: 'console', regex: 'petrel-canary v2' }, withinMs: 10_000, keepConfig: false },
  });
  return crashed(node, answer);
}

describe('replace across a SIGKILL of petreld', () => {
  // Each kill point: whether the check had passed, and the image the next start then runs.
  it.each([
    {
      what: 'killed during the check: the next start brings the previous unikernel back',
      crashAt: ':web@replace-checking',
      passed: false,
      runs: async () => sha(oldImage),
    },
    {
      what: 'killed after the check passed: the next start keeps the new unikernel',
      crashAt: ':web@replace-passed',
      passed: true,
      runs: async () => sha(await readFile(newFile)),
    },
  ])('$what', { timeout: 90_000 }, async ({ crashAt, passed, runs }) => {
    const node = await startNode(crashAt);
    try {
      expect(await createOld(node, ':web')).toEqual(['created unikernel']);
      expect(await replaceUntilCrash(node)).toEqual({ code: null, signal: 'SIGKILL' });
      const atCrash = await storedState(`${node.dir}/state`);
      expect(atCrash.replacements?.map((r) => [r.name.label, r.passed, r.previous.image.digest])).toEqual([
        ['web', passed, sha(oldImage)],
      ]);
      node.daemon = await launch(node);
      const digest = await runs();
      const after = await infoOf(node, ':web');
      expect(after?.digest).toBe(digest);
      const state = await storedState(`${node.dir}/state`);
      expect(state.replacements).toBeUndefined();
      expect(state.unikernels.find((u) => u.name.label === 'web')?.image.digest).toBe(digest);
    } finally {
      await stopNode(node);
    }
  });
});

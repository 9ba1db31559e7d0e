// `petrel console --no-follow` (issue 25, item 4): the history and exit 0, against a real
// petreld started in-process (its canaries run under the fake-kvm tender on hosts without KVM).
// The end of the history is our unsubscribe (a zero frame): petreld sends what it queued, closes.
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { duplexPair } from '../../src/daemon/pair.js';
import { SocketSubscriber } from '../../src/daemon/sockets.js';
import { unwrap } from '../../src/resources/errors.js';
import { parseName } from '../../src/resources/name.js';
import { type Header, WIRE_VERSION } from '../../src/wire/types.js';
import { type TestDaemon, testDaemon } from '../daemon/start.js';
import { canaryImage } from '../engine/guest.js';
import { petrel } from './io.js';

let node: TestDaemon;
let at: string[];

beforeAll(async () => {
  node = await testDaemon();
  at = ['--run-dir', node.runDir];
});
afterAll(() => node?.stop());

const run = (...args: string[]) => petrel([...args, ...at]);
/** The text of `TIMESTAMP LINE` lines. */
const texts = (stdout: string): string[] =>
  stdout
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => {
      expect(l).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z /u);
      return l.slice(l.indexOf(' ') + 1);
    });
const flood = (from: number, to: number): string[] =>
  Array.from({ length: to - from + 1 }, (_, i) => `petrel-canary flood ${from + i}`);

/** Polls `petrel consoles` until NAME's unikernel has stopped and its history is kept. */
async function stopped(name: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await run('consoles')).stdout.split('\n').includes(`:${name}`)) {
    if (Date.now() > deadline) throw new Error(`${name} did not stop`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('petrel console --no-follow', () => {
  it('prints exactly the history of a stopped unikernel, --count lines of it, and exits 0', async () => {
    const created = await run(
      'create',
      'flood',
      canaryImage,
      '--mem',
      '16',
      '--arg',
      'flood',
      '--arg',
      '3000',
    );
    expect(created.code).toBe(0);
    await stopped('flood');
    // The ring keeps the last 1024 lines (semantics §11.2): 1977 to 3000.
    const all = await run('console', 'flood', '--count', '1024', '--no-follow');
    expect(all).toMatchObject({ code: 0, stderr: 'petrel console: subscribed\n' });
    expect(texts(all.stdout)).toEqual(flood(1977, 3000));
    const three = await run('console', 'flood', '--count', '3', '--no-follow');
    expect(three.code).toBe(0);
    expect(texts(three.stdout)).toEqual(flood(2998, 3000));
    const none = await run('console', 'flood', '--count', '0', '--no-follow');
    expect(none).toMatchObject({ code: 0, stdout: '' });
    const json = await run('console', 'flood', '--since', '1h', '--no-follow', '--json');
    expect(json.code).toBe(0);
    const lines = json.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as { name: string; line: string });
    expect(lines.map((l) => l.line)).toEqual(flood(1977, 3000));
    expect(new Set(lines.map((l) => l.name))).toEqual(new Set([':flood']));
  });

  it('of a unikernel still printing: the last --count lines, consecutive, then exit 0', async () => {
    // A line every 20 ms, forever.
    expect(
      (await run('create', 'ticker', canaryImage, '--mem', '16', '--arg', 'count', '--arg', '20')).code,
    ).toBe(0);
    let got: string[] = [];
    for (const deadline = Date.now() + 20_000; got.length < 10; ) {
      if (Date.now() > deadline) throw new Error(`ticker printed ${got.length} lines`);
      const once = await run('console', 'ticker', '--count', '10', '--no-follow');
      expect(once.code).toBe(0);
      got = texts(once.stdout).filter((l) => l.startsWith('petrel-canary count '));
    }
    expect(got).toHaveLength(10);
    const numbers = got.map((l) => Number(l.slice('petrel-canary count '.length)));
    expect(numbers).toEqual(numbers.map((_, i) => (numbers[0] as number) + i));
    expect((await run('destroy', 'ticker')).code).toBe(0);
  });

  it('for a name not running yet: nothing, exit 0', async () => {
    expect(await run('console', 'ghost', '--no-follow')).toMatchObject({
      code: 0,
      stdout: '',
      stderr: 'petrel console: waiting for VM\n',
    });
  });

  it('petreld sends the whole queued history after the client ends, even to a slow reader', async () => {
    // A reader that does not read yet: the pair's writer waits, and the subscriber queues.
    const [client, daemon] = duplexPair();
    client.pause();
    const header: Header = { version: WIRE_VERSION, sequence: 0n, name: unwrap(parseName('slow')) };
    const subscriber = new SocketSubscriber(daemon, header, '2.1', 4096, pino({ level: 'silent' }));
    const history = Array.from({ length: 1024 }, (_, i) => ({
      timestamp: 1_700_000_000_000 + i,
      line: Buffer.from(`history line ${String(i).padStart(4, '0')} ${'x'.repeat(200)}`),
    }));
    expect(subscriber.begin('subscribed', history)).toBe(true);
    expect(subscriber.backlog).toBeGreaterThan(0);
    subscriber.finish();
    const chunks: Buffer[] = [];
    client.on('data', (d: Buffer) => chunks.push(d));
    client.resume();
    await new Promise<void>((resolve) => client.once('end', () => resolve()));
    const text = Buffer.concat(chunks).toString('latin1');
    const seen = [...text.matchAll(/history line (\d{4})/gu)].map((m) => Number(m[1]));
    expect(seen).toEqual(history.map((_, i) => i));
  });
});

// `petrel console --no-follow` over mutual TLS (issue 25): the remote client unsubscribes by
// sending a zero frame with the connection open (§2.3), the endpoint passes that on to petreld,
// and every history line queued before still arrives through it, then the end. A real petreld
// with its TLS endpoint (test/tls/petreld.ts), the client petrel --remote uses.
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Transport } from '../../src/wire/exchange.js';
import { canaryImage } from '../engine/guest.js';
import { canaryConfig, createCommand } from '../engine/harness.js';
import { name } from './helpers.js';
import { consoleHistory, type Petreld, startPetreld } from './petreld.js';

let petreld: Petreld;
beforeAll(async () => {
  petreld = await startPetreld({ alice: ['--vms', '1', '--mem', '64'] });
});
afterAll(() => petreld?.stop());

/** The console history of NAME as --no-follow reads it: subscribe, finish, read to the end. */
const history = (client: Transport, vm: string): Promise<string[]> => consoleHistory(client, vm, 1024);

it('a history of 1024 lines comes whole through the TLS endpoint, then the stream ends', async () => {
  const alice = petreld.remote('alice');
  const created = await alice.request(
    name('flood'),
    createCommand(await canaryConfig(canaryImage, ['flood', '3000'], { memory: 16 })),
  );
  expect(created.ok && created.value.kind).toBe('reply');
  let lines: string[] = [];
  for (const deadline = Date.now() + 20_000; lines.at(-1) !== 'petrel-canary flood 3000'; ) {
    if (Date.now() > deadline)
      throw new Error(`the flood did not end: ${lines.length} lines, last ${lines.at(-1)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    lines = await history(alice, 'flood');
  }
  // The ring keeps the last 1024 lines: 1977 to 3000, every one of them.
  expect(lines).toEqual(Array.from({ length: 1024 }, (_, i) => `petrel-canary flood ${1977 + i}`));
});

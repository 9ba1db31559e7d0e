// Issue 23's floods (flood.test.ts) against `petreld tls-endpoint` as its own process in
// front of petreld's sockets: both processes hold up, and petreld's local sockets (every
// remote session arrives through them) are not shut either.

import { describe, it } from 'vitest';
import { floodRounds } from './flood-rounds.js';

describe('connection floods, the endpoint as its own process', () => {
  it('one window with the floods from 127.0.0.2 and from 200 addresses, then one from the client’s own address', async () => {
    await floodRounds('process');
  }, 240_000);
});

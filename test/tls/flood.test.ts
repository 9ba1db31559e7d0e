// Issue 23: no unauthenticated peer can shut a client out. Against petreld as its own process
// with its TLS endpoint inside (flood-endpoint.test.ts: the endpoint as its own process), the
// issue's floods on loopback (test/tls/flood.ts), each kept up (re-opened when closed) for
// 20 s while a delegated client on 127.0.0.1 runs `info` every 2 s: every request answered
// within 5 s, RSS within +64 MiB, every descriptor given back afterwards.

import { describe, it } from 'vitest';
import { floodRounds } from './flood-rounds.js';

describe('connection floods, the endpoint inside petreld', () => {
  it('one window with the floods from 127.0.0.2 and from 200 addresses, then one from the client’s own address', async () => {
    await floodRounds('inside');
  }, 240_000);
});

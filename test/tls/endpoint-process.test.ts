// `petreld tls-endpoint` as its own process (the compiled dist/src/cli/petreld.js; `npm test`
// builds dist/ first) in front of the sockets of a real petreld started without TLS: the
// endpoint needs nothing but the run directory's sockets and its key material.

import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { printName } from '../../src/resources/name.js';
import { request } from '../daemon/client.js';
import { canaryImage } from '../engine/guest.js';
import { canaryConfig, createCommand } from '../engine/harness.js';
import { endpointFlags, launchEndpoint } from './endpoint-process.js';
import { INFO, name } from './helpers.js';
import { type Petreld, startPetreld } from './petreld.js';

let petreld: Petreld | undefined;
afterEach(async () => {
  await petreld?.stop();
  petreld = undefined;
});

const launch = launchEndpoint;

async function until<T>(probe: () => T | undefined, what: string): Promise<T> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const value = probe();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('petreld tls-endpoint, a separate process on a running petreld', () => {
  it("serves remote clients from the daemon's run directory and stops on SIGTERM", async () => {
    petreld = await startPetreld({ alice: ['--vms', '1', '--mem', '32'] }, {}, { tls: false });
    expect(petreld.port).toBeNull();
    const _ca = petreld.ca;
    const endpoint = launch(endpointFlags(petreld));
    const port = await until(
      () => endpoint.logs.find((l) => l.event === 'tls.listening')?.port as number | undefined,
      'tls.listening',
    );
    const alice = petreld.remote('alice', port);
    const answer = await alice.request(name(':'), INFO);
    expect(answer).toMatchObject({ ok: true, value: { kind: 'reply', reply: { type: 'unikernel-info' } } });
    // The delegated policy reached the daemon through its socket, as from an in-process endpoint.
    const policies = await request(path.join(petreld.runDir, 'util', 'vmmd.sock'), ':', {
      type: 'policy-info',
    });
    const listed = policies[0]?.payload;
    expect(
      listed?.kind === 'reply' &&
        listed.reply.type === 'policies' &&
        listed.reply.entries.map((e) => printName(e.name)),
    ).toContain('alice:');
    const replied = await until(() => endpoint.logs.find((l) => l.event === 'tls.session'), 'tls.session');
    expect(replied).toMatchObject({ name: 'alice:', command: 'unikernel-info', outcome: 'replied' });

    // An image far above the certificate limit streams through this endpoint too: its chunks
    // follow the create on vmmd.sock and land in petreld's store.
    const image = Buffer.concat([await readFile(canaryImage), Buffer.alloc(2 * 1024 * 1024, 7)]);
    const created = await alice.request(
      name('big'),
      createCommand(await canaryConfig(canaryImage, ['wait', 'big'], { image })),
    );
    expect(created).toMatchObject({
      ok: true,
      value: { kind: 'reply', reply: { text: 'created unikernel' } },
    });
    const digest = createHash('sha256').update(image).digest('hex');
    expect(await readdir(path.join(petreld.dir, 'state', 'images'))).toContain(digest);
    // And comes back by get, relayed from vmmd.sock as it is read.
    const got = await alice.request(name('big'), { type: 'unikernel-get', level: 0 });
    const reply = got.ok && got.value.kind === 'reply' ? got.value.reply : null;
    expect(reply?.type === 'unikernel-image' && Buffer.from(reply.image).equals(image)).toBe(true);

    endpoint.process.kill('SIGTERM');
    expect(await endpoint.exited).toBe(0);
    // Stopped means no longer listening.
    const after = await petreld.remote('alice', port).request(name(':'), INFO);
    expect(after).toMatchObject({ ok: false, error: { code: 'E_CLIENT_CONNECT' } });
  });

  it('exits 2 with its usage on bad flags, 1 when the key material is unusable', async () => {
    const bad = launch(['--port', 'many']);
    let stderr = '';
    bad.process.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    expect(await bad.exited).toBe(2);
    expect(stderr).toMatch(/^petreld tls-endpoint: .*\n\nusage: petreld tls-endpoint/);
    const missing = launch(['/nonexistent/ca.pem', '/nonexistent/server.pem', '/nonexistent/server.key']);
    expect(await missing.exited).toBe(1);
  });
});

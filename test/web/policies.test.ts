// Policies over the web API, over REAL HTTPS against a REAL petreld (test/tls/petreld.ts, the
// fake-kvm TEST DOUBLE standing in for KVM where it is missing), with alice's and bob's tokens:
// the list at and below the delegation with its usage; alice adds alice:team within her limits
// and removes it, can neither set her own policy nor reach bob's, and over her limits gets the
// engine's message; every change is one audit line. Responses checked against docs/openapi.json.

import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nameAsPath, printPath } from '../../src/resources/name.js';
import * as T from '../../src/resources/tree.js';
import { canaryImage } from '../engine/guest.js';
import { mintToken, type Petreld, startPetreld } from '../tls/petreld.js';
import { type ApiReply, type WebClient, webClient } from './client.js';

const LIST = '/api/v1/policies';
const ONE = '/api/v1/policies/{path}';
let petreld: Petreld;
let web: WebClient;
const tokens: Record<string, string> = {};

const call = (who: string, method: string, url: string, template: string, body?: Buffer): Promise<ApiReply> =>
  web.call(method, url, template, body, { as: tokens[who] as string });

type Item = {
  path: string;
  relative: string;
  unikernels: number;
  memory: number;
  usage: Record<string, unknown>;
};
const items = (reply: ApiReply) => (reply.json as { items: Item[] }).items;
const error = (reply: ApiReply) => (reply.json as { error: { code: string; message: string } }).error;
/** The policies petreld holds, whoever may see them. */
const held = () =>
  T.foldPolicies(petreld.daemon.engine.tree, [])
    .map(([name]) => `${printPath(nameAsPath(name))}:`)
    .sort();

beforeAll(async () => {
  petreld = await startPetreld(
    { alice: ['--vms', '3', '--mem', '64', '--cpus', '0'], bob: ['--vms', '1', '--mem', '32'] },
    {},
    { web: true },
  );
  for (const who of ['alice', 'bob']) tokens[who] = await mintToken(petreld, who, `${who}-ci`);
  web = await webClient(petreld, tokens.alice as string);
});
afterAll(async () => {
  await petreld?.stop();
});

describe('policies over HTTP', () => {
  it('alice adds alice:team within her limits, sees its usage, and removes it; bob sees none of it', async () => {
    const mine = await call('alice', 'GET', LIST, LIST);
    expect(items(mine).map((p) => p.path)).toEqual(['alice']);
    expect(items(mine)[0]).toMatchObject({
      relative: '',
      unikernels: 3,
      memory: 64,
      usage: { unikernels: 0 },
    });

    const added = await call('alice', 'PUT', `${LIST}/team?vms=2&mem=32&cpus=0`, ONE);
    expect(added).toMatchObject({ status: 201, json: { name: 'team', reply: 'added policy' } });
    expect(held()).toContain('alice:team:');
    const again = await call('alice', 'PUT', `${LIST}/team?vms=2&mem=32&cpus=0`, ONE);
    expect(again).toMatchObject({ status: 200, json: { reply: 'no modification of policy' } });

    // A unikernel below it counts in its usage and in alice's.
    const image = await readFile(canaryImage);
    expect(
      (
        await call(
          'alice',
          'PUT',
          '/api/v1/unikernels/team:vm?mem=8&arg=wait',
          '/api/v1/unikernels/{name}',
          image,
        )
      ).status,
    ).toBe(201);
    const listed = items(await call('alice', 'GET', LIST, LIST));
    expect(listed.map((p) => [p.path, p.relative])).toEqual([
      ['alice', ''],
      ['alice:team', 'team'],
    ]);
    expect(listed[1]?.usage).toEqual({ unikernels: 1, memory: 8, cpuids: [0], block: 0 });
    expect(listed[0]?.usage).toMatchObject({ unikernels: 1, memory: 8 });

    // bob sees only his own.
    expect(items(await call('bob', 'GET', LIST, LIST)).map((p) => p.path)).toEqual(['bob']);

    expect(
      (await call('alice', 'DELETE', '/api/v1/unikernels/team:vm', '/api/v1/unikernels/{name}')).status,
    ).toBe(200);
    const removed = await call('alice', 'DELETE', `${LIST}/team`, ONE);
    expect(removed).toMatchObject({ status: 200, json: { name: 'team', reply: 'removed policy' } });
    expect(held()).not.toContain('alice:team:');
  });

  it('never at or above her own path, never bob’s, never beyond her limits; each change one audit line', async () => {
    const before = held();
    for (const own of ['%3A', ':']) {
      const r = await call('alice', 'PUT', `${LIST}/${own}?vms=3&mem=64`, ONE);
      expect(r.status).toBe(403);
      expect(error(r)).toMatchObject({ code: 'E_WEB_POLICY_SCOPE' });
      expect(error(r).message).toContain('only below itself');
      expect((await call('alice', 'DELETE', `${LIST}/${own}`, ONE)).status).toBe(403);
    }
    // "bob" from alice is alice:bob, not bob: (names are relative): bob's policy is out of reach.
    const notBobs = await call('alice', 'DELETE', `${LIST}/bob`, ONE);
    expect(notBobs.status).toBe(404);
    expect(error(notBobs)).toMatchObject({
      code: 'E_REFUSED',
      message: expect.stringMatching(/unknown policy$/),
    });
    expect(held()).toContain('bob:');
    // Over her limits: the engine refuses, its message passed through, nothing added.
    const tooMany = await call('alice', 'PUT', `${LIST}/big?vms=5&mem=32`, ONE);
    expect(tooMany.status).toBe(409);
    expect(error(tooMany).code).toBe('E_REFUSED');
    expect(error(tooMany).message).toMatch(/3 unikernels, which is fewer than 5/);
    const otherCpu = await call('alice', 'PUT', `${LIST}/big?vms=1&mem=32&cpus=1`, ONE);
    expect(otherCpu.status).toBe(409);
    expect(error(otherCpu).message).toMatch(/CPU/i);
    // A policy petrel policy add would refuse, refused before anything is sent.
    const bad = await call('alice', 'PUT', `${LIST}/big?vms=0`, ONE);
    expect(bad.status).toBe(400);
    expect(error(bad).code).toBe('E_WEB_QUERY');
    expect((await call('alice', 'PUT', `${LIST}/big?colour=red&vms=1`, ONE)).status).toBe(400);
    expect(held()).toEqual(before);

    const audits = petreld.logs.filter(
      (l) => l.event === 'web.audit' && String(l.action).startsWith('policy'),
    );
    expect(audits.length).toBeGreaterThanOrEqual(12);
    expect(audits[0]).toMatchObject({
      token: 'alice-ci',
      delegation: 'alice',
      action: 'policy-add',
      policy: 'alice:team:',
      status: 201,
      reply: 'added policy',
    });
    expect(audits.find((l) => l.action === 'policy-remove' && l.status === 200)).toMatchObject({
      policy: 'alice:team:',
    });
    expect(audits.find((l) => l.status === 409)).toMatchObject({ policy: 'alice:big:', code: 'E_REFUSED' });
    expect(audits.find((l) => l.status === 403)).toMatchObject({ code: 'E_WEB_POLICY_SCOPE' });
  });
});

// The response validator the API tests use (test/web/openapi.ts) can fail: each rule of the
// schema language it reads is broken once, on the document's own schemas.

import { expect, it } from 'vitest';
import { checkResponse, violations } from './openapi.js';

const unikernel = {
  name: 'web',
  fullName: 'alice:web',
  state: 'running',
  type: 'solo5',
  memory: 32,
  cpus: 1,
  cpuids: [0],
  networks: [{ netif: 'service', bridge: 'br0', mac: '02:00:00:00:00:01' }],
  blocks: [],
  digest: 'ab'.repeat(32),
  started: '2026-12-02T00:00:00.000Z',
  restartOnFail: false,
  arguments: [],
};
const ref = { $ref: '#/components/schemas/Unikernel' };

it('accepts a valid unikernel and names every broken rule of an invalid one', () => {
  expect(violations(unikernel, ref)).toEqual([]);
  const broken = {
    ...unikernel,
    memory: 0,
    cpus: 'one',
    state: 'dreaming',
    digest: 'xyz',
    started: 'yesterday',
    networks: [{ netif: 'service', bridge: 'br0', mac: 'nope' }],
    extra: true,
  } as Record<string, unknown>;
  delete broken.name;
  expect(violations(broken, ref).sort()).toEqual(
    [
      '$: missing name',
      '$: unexpected extra',
      '$.memory: 0 < 1',
      '$.cpus: expected integer, got string',
      '$.state: "dreaming" not in ["running"]',
      '$.digest: "xyz" does not match ^[0-9a-f]{64}$',
      '$.started: "yesterday" is not a date-time',
      '$.networks[0].mac: "nope" does not match ^([0-9a-f]{2}:){5}[0-9a-f]{2}$',
    ].sort(),
  );
  expect(() =>
    checkResponse('GET', '/api/v1/unikernels', 200, { items: [unikernel], next: 3, total: 1 }),
  ).toThrow(/\$\.next: expected string\|null, got integer/);
  expect(() =>
    checkResponse('GET', '/api/v1/unikernels', 401, { error: { code: 'bad', message: 'x', exit: 1 } }),
  ).toThrow(/code: "bad" does not match/);
});

// The fleet view's list (src/web/fleet.ts) over a hand-made source standing in for the registry
// (a TEST DOUBLE: test/web/fleet-dashboard.test.ts runs it on a real PostgreSQL): this node
// first, origins that are not one dropped before they can reach a CORS or CSP header, the list
// read at most once per cache period (a stale one given at once while it is read again), and
// the last list kept when the registry fails.

import pino from 'pino';
import { expect, it } from 'vitest';
import { err, ok } from '../../src/resources/errors.js';
import { dashboardCsp } from '../../src/web/dashboard-files.js';
import { FleetView, isOrigin, type RegistryNode } from '../../src/web/fleet.js';

const at = new Date('2026-12-02T00:00:00.000Z');
const row = (id: string, webOrigin: string): RegistryNode => ({ id, webOrigin, lastSeen: at });

it('lists this node first, drops what is not an origin, and keeps the last list when the registry fails', async () => {
  let reads = 0;
  let failing = false;
  const rows = [
    row('b', 'https://b.example:8443'),
    row('a', 'https://127.0.0.1:1'),
    row('evil', "https://x.example; script-src 'unsafe-inline'"),
    row('c', ''),
  ];
  const source = {
    list: async () => {
      reads += 1;
      return failing ? err('E_FLEET_DB', 'fleet registry: down') : ok(rows);
    },
    stop: async () => {},
  };
  const view = new FleetView('a', source, pino({ level: 'silent' }), 50);
  const first = await view.nodes();
  expect(first.nodes.map((n) => [n.id, n.origin, n.self])).toEqual([
    ['a', 'https://127.0.0.1:1', true],
    ['b', 'https://b.example:8443', false],
    ['evil', null, false],
    ['c', null, false],
  ]);
  expect([...(await view.origins())].sort()).toEqual(['https://127.0.0.1:1', 'https://b.example:8443']);
  expect(dashboardCsp(await view.origins())).toContain(
    "connect-src 'self' https://127.0.0.1:1 https://b.example:8443;",
  );
  // Cached: both calls above read once.
  expect(reads).toBe(1);
  await new Promise((r) => setTimeout(r, 60));
  failing = true;
  // Past its time: the last list at once, read again behind it.
  expect(await view.nodes()).toBe(first);
  await new Promise((r) => setTimeout(r, 10));
  const failed = await view.nodes();
  expect(reads).toBe(2);
  expect(failed.error).toEqual({ code: 'E_FLEET_DB', message: 'fleet registry: down' });
  expect(failed.nodes).toEqual(first.nodes);
});

it('without a registry, is this node alone', async () => {
  const view = new FleetView('solo', null, pino({ level: 'silent' }));
  expect(await view.nodes()).toEqual({
    nodes: [{ id: 'solo', origin: null, self: true, lastSeen: null }],
    error: null,
  });
  expect(await view.origins()).toEqual(new Set());
});

it('takes https origins with a host and port only', () => {
  for (const good of ['https://a.example:8443', 'https://[::1]:8443', 'https://10.0.0.1:1'])
    expect(isOrigin(good)).toBe(true);
  for (const bad of [
    'http://a.example:80',
    'https://a.example:8443/',
    'https://a.example:8443 https://b.example',
    'https://A.example:1',
    "https://a;script-src 'self'",
    '',
  ])
    expect(isOrigin(bad)).toBe(false);
});

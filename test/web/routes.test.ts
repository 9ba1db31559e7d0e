// The web API's pure parts without a server: which method and path is which action, and a
// create's query read as `petrel create`'s flags (defaults, texts, unknown parameters refused).

import { describe, expect, it } from 'vitest';
import { createCommand } from '../../src/web/create.js';
import { matchRoute } from '../../src/web/routes.js';

describe('matchRoute', () => {
  it('maps every resource and method, and refuses the rest with 404 or 405', () => {
    const action = (method: string, path: string) => {
      const route = matchRoute(method, path);
      return route.kind === 'route' ? [route.action, route.name] : [route.status, route.code];
    };
    expect(action('GET', '/api/v1/node')).toEqual(['node', '']);
    expect(action('GET', '/api/v1/unikernels')).toEqual(['list', '']);
    expect(action('PUT', '/api/v1/unikernels/web')).toEqual(['create', 'web']);
    expect(action('DELETE', '/api/v1/unikernels/bob%3Aweb')).toEqual(['destroy', 'bob:web']);
    expect(action('POST', '/api/v1/unikernels/web/restart')).toEqual(['restart', 'web']);
    expect(action('GET', '/api/v1/unikernels/web/console')).toEqual(['console', 'web']);
    expect(action('GET', '/api/v1/unikernels/web/stats')).toEqual(['stats', 'web']);
    expect(action('GET', '/api/v1/unikernels/web/image')).toEqual(['image', 'web']);
    expect(action('PUT', '/api/v1/blocks/disk/data')).toEqual(['block-set', 'disk']);
    expect(action('POST', '/api/v1/unikernels/web')).toEqual(['create', 'web']);
    expect(action('PATCH', '/api/v1/unikernels/web')).toEqual([405, 'E_WEB_METHOD']);
    expect(action('GET', '/api/v1/unikernels/')).toEqual([404, 'E_WEB_NOT_FOUND']);
    expect(action('GET', '/api/v1/unikernels/%E0%A4%A')).toEqual([404, 'E_WEB_NOT_FOUND']);
    expect(action('GET', '/api/v2/node')).toEqual([404, 'E_WEB_NOT_FOUND']);
    expect(action('GET', '/')).toEqual([404, 'E_WEB_NOT_FOUND']);
  });
});

describe('createCommand', () => {
  const config = (query: string) => {
    const made = createCommand(new URLSearchParams(query));
    if (!made.ok) return made.error.body;
    return made.value.type === 'unikernel-create' ? { force: made.value.force, ...made.value.config } : null;
  };

  it("takes petrel create's defaults and flags", () => {
    expect(config('')).toMatchObject({
      force: false,
      memory: 32,
      cpuids: [0],
      cpus: 1,
      addName: true,
      arguments: null,
    });
    expect(
      config(
        'mem=64&cpu=1&cpu=0&net=service:br0&arg=a&arg=b&force&no-add-name=true&restart-on-fail&exit-code=3',
      ),
    ).toMatchObject({
      force: true,
      memory: 64,
      cpuids: [0, 1],
      bridges: [{ netif: 'service', bridge: 'br0', mac: null }],
      arguments: ['a', 'b'],
      addName: false,
      failBehaviour: { kind: 'restart', exitCodes: [3] },
    });
    expect(config('mem=16')).toMatchObject({ image: new Uint8Array(0) });
  });

  it('refuses what petrel create refuses, with its texts, and what it does not know', () => {
    expect(config('mem=0')).toEqual({
      error: {
        code: 'E_WEB_CONFIG',
        message: '--mem must be a whole number, at least 1 (got "0")',
        exit: 124,
      },
    });
    expect(config('net=a:b:c')).toMatchObject({
      error: { code: 'E_WEB_CONFIG', message: '--net a:b:c: expected [NETIF:]BRIDGE[@MAC]' },
    });
    expect(config('net=br0&net=br0')).toMatchObject({ error: { message: 'Bridge names must be a set' } });
    expect(config('mem=1&mem=2')).toMatchObject({
      error: { code: 'E_WEB_QUERY', message: 'mem is given more than once' },
    });
    expect(config('force=yes')).toMatchObject({
      error: { code: 'E_WEB_QUERY', message: 'force must be true or false, not "yes"' },
    });
    expect(config('memory=64')).toMatchObject({ error: { code: 'E_WEB_QUERY' } });
  });
});

import { expect, it } from 'vitest';
import type { CliIo } from '../../src/cli/command.js';
import { fleetCommand, makeFleetCommand, type RemoteCreateRequest } from '../../src/cli/commands/fleet.js';
import { runPetrel } from '../../src/cli/dispatch.js';
import { Registry } from '../../src/fleet/registry.js';
import { solo5Image } from '../tender/elf-builder.js';
import { report } from './fixtures.js';
import { describeWithPostgres } from './pg.js';

const IMAGES: Record<string, Uint8Array> = {
  'web.hvt': solo5Image(1, 2, [{ name: 'service', type: 2 }]),
  'tool.spt': solo5Image(2, 2, []),
};

function fakeIo() {
  const out: string[] = [];
  const err: string[] = [];
  const io: CliIo = {
    stdout: (chunk) => void out.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString()),
    stderr: (text) => void err.push(text),
    readFile: async (path) => {
      const image = IMAGES[path];
      if (image === undefined) throw new Error(`ENOENT: ${path}`);
      return image;
    },
    writeFile: async () => {},
  };
  return { io, out: () => out.join(''), err: () => err.join('') };
}

async function petrel(...argv: string[]) {
  const io = fakeIo();
  const code = await runPetrel(argv, io.io);
  return { code, out: io.out(), err: io.err() };
}

describeWithPostgres('petrel fleet', (pg) => {
  it('migrate applies the schema, then is a no-op', async () => {
    const { url } = await pg.schema({ migrated: false });
    const first = await petrel('fleet', 'migrate', '--db', url);
    expect(first).toMatchObject({ code: 0, err: '' });
    expect(first.out).toBe(
      'applied 001_nodes\napplied 002_placements\nschema up to date (2 applied now, 0 before)\n',
    );
    expect((await petrel('fleet', 'migrate', '--db', url)).out).toBe(
      'schema up to date (0 applied now, 2 before)\n',
    );
  });

  it('nodes lists what each node reported, as a table or JSON', async () => {
    const { url, pool } = await pg.schema();
    const registry = new Registry(pool);
    await registry.report('gw-04', '10.0.0.4:1025', report({ kvm: false }));
    await registry.report('web', '10.0.0.6:1025', report({ bridges: [{ name: 'service', up: false }] }));
    const table = await petrel('fleet', 'nodes', '--db', url);
    expect(table.code).toBe(0);
    const lines = table.out.trimEnd().split('\n');
    expect(lines[0]).toMatch(
      /^ID\s+ADDRESS\s+SEEN\s+STATE\s+KVM\s+TENDERS\s+TAPS\s+BRIDGES\s+CPUS\s+FREE MEMORY$/,
    );
    expect(lines[1]).toMatch(
      /^gw-04\s+10\.0\.0\.4:1025\s+\ds ago\s+fresh\s+no\s+hvt\/2,spt\/2\s+yes\s+service\s+4\s+4096 MiB$/,
    );
    expect(lines[2]).toMatch(/^web\s.*\syes\s+hvt\/2,spt\/2\s+yes\s+service\(down\)\s/);
    const json = JSON.parse((await petrel('fleet', 'nodes', '--db', url, '--json')).out);
    expect(json.nodes.map((n: { id: string; fresh: boolean }) => [n.id, n.fresh])).toEqual([
      ['gw-04', true],
      ['web', true],
    ]);
    expect(json.nodes[0].capabilities.kvm).toBe(false);
  });

  it('explain shows the verdict per node and the choice; a refused --node exits 1 with the reason', async () => {
    const { url, pool } = await pg.schema();
    const registry = new Registry(pool);
    await registry.report('gw-04', '10.0.0.4:1025', report({ kvm: false }));
    await registry.report('tank', '10.0.0.7:1025', report({ bridges: [] }));
    await registry.report('web', '10.0.0.6:1025', report());
    const ok = await petrel(
      'fleet',
      'explain',
      'user:web',
      'web.hvt',
      '--db',
      url,
      '--net',
      'service',
      '--mem',
      '64',
    );
    expect(ok.code).toBe(0);
    expect(ok.out).toContain('user:web: hvt (ABI 2, 64 MiB, 1 CPU, bridge service)\n');
    expect(ok.out).toMatch(/gw-04\s+no kvm\n/);
    expect(ok.out).toMatch(/tank\s+no bridge service\n/);
    expect(ok.out).toMatch(/web\s+ok \(free 4096 MiB, 4 CPUs\)\n/);
    expect(ok.out).toContain('choice: web (10.0.0.6:1025), free 4096 MiB (most free memory, ties by id)\n');

    const refused = await petrel(
      'fleet',
      'explain',
      'user:web',
      'web.hvt',
      '--db',
      url,
      '--net',
      'service',
      '--node',
      'gw-04',
    );
    expect(refused.code).toBe(1);
    expect(refused.out).toMatch(/no placement: node gw-04 cannot run .*: no kvm\n$/);

    const spt = await petrel('fleet', 'explain', 'tool', 'tool.spt', '--db', url, '--json');
    expect(JSON.parse(spt.out)).toMatchObject({
      requirements: { runtime: 'spt', abi: 2 },
      placed: { node: 'gw-04' },
    });
  });

  it('create places, creates on the chosen node and records the placement; nothing is recorded when create fails', async () => {
    const { url, pool } = await pg.schema();
    const registry = new Registry(pool);
    await registry.report('gw-04', '10.0.0.4:1025', report({ kvm: false }));
    await registry.report('web', '10.0.0.6:1025', report());
    const requests: RemoteCreateRequest[] = [];
    const creator = {
      create: async (request: RemoteCreateRequest) => {
        requests.push(request);
        return { ok: true as const, value: { by: 'alice', reply: 'created unikernel' } };
      },
    };
    const io = fakeIo();
    const args = [
      'create',
      'user:web',
      'web.hvt',
      '--db',
      url,
      '--net',
      'eth0:service',
      '--arg=--ipv4=10.0.0.2/24',
    ];
    expect(await makeFleetCommand(creator).run(args, io.io)).toBe(0);
    expect(io.out()).toContain('user:web placed on web (10.0.0.6:1025)');
    expect(requests).toMatchObject([
      {
        node: 'web',
        address: '10.0.0.6:1025',
        name: 'user:web',
        memoryMiB: 32,
        nets: ['eth0:service'],
        args: ['--ipv4=10.0.0.2/24'],
      },
    ]);
    const trail = await registry.placements('user:web');
    expect(trail.ok && trail.value.map(({ node, by }) => ({ node, by }))).toEqual([
      { node: 'web', by: 'alice' },
    ]);

    const refused = fakeIo();
    expect(await makeFleetCommand(creator).run([...args, '--node', 'gw-04'], refused.io)).toBe(1);
    expect(refused.err()).toMatch(/E_FLEET_NODE_REFUSED: node gw-04 cannot run .*: no kvm/);
    // The real creator goes over mutual TLS: without a delegation it places, refuses, records nothing.
    const noTls = fakeIo();
    expect(await fleetCommand.run(args, noTls.io)).toBe(1);
    expect(noTls.err()).toContain('E_FLEET_TLS');
    expect(requests).toHaveLength(1);
    const after = await registry.placements();
    expect(after.ok && after.value).toHaveLength(1);
  });
});

it('fleet usage errors exit 2', async () => {
  expect((await petrel('fleet')).code).toBe(2);
  expect((await petrel('fleet', 'nodes')).err).toContain('nodes needs --db URL');
  expect(
    (await petrel('fleet', 'explain', 'x', 'web.hvt', '--db', 'postgresql://h/d', '--mem', 'lots')).code,
  ).toBe(2);
  expect((await petrel('fleet', 'frobnicate', '--db', 'postgresql://h/d')).code).toBe(2);
});

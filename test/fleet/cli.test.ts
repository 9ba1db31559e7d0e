import { expect, it } from 'vitest';
import type { CliIo } from '../../src/cli/command.js';
import { fleetCommand, makeFleetCommand, type RemoteCreateRequest } from '../../src/cli/commands/fleet.js';
import { runPetrel } from '../../src/cli/dispatch.js';
import { Registry } from '../../src/fleet/registry.js';
import { err } from '../../src/resources/errors.js';
import { solo5Image } from '../tender/elf-builder.js';
import { capacity, report, SPT } from './fixtures.js';
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
      'applied 001_nodes\napplied 002_placements\napplied 003_capacity\napplied 004_revocations\napplied 005_web_origin\napplied 006_deployments\nschema up to date (6 applied now, 0 before)\n',
    );
    expect((await petrel('fleet', 'migrate', '--db', url)).out).toBe(
      'schema up to date (0 applied now, 6 before)\n',
    );
  });

  it('nodes lists what each node reported, as a table or JSON', async () => {
    const { url, pool } = await pg.schema();
    const registry = new Registry(pool);
    await registry.report('gw-04', '10.0.0.4:1025', report({ kvm: false }));
    await registry.report('web', '10.0.0.6:1025', report({ bridges: [{ name: 'service', up: false }] }));
    await registry.report('blind', '10.0.0.9:1025', report({ runtimes: [] }));
    await registry.report(
      'spt-only',
      '10.0.0.8:1025',
      report({ runtimes: ['spt'] }),
      capacity(report(), 1024),
    );
    expect((await registry.reserve(SPT, { freshMs: 30_000, vm: 'user:x', node: 'spt-only' })).ok).toBe(true);
    const table = await petrel('fleet', 'nodes', '--db', url);
    expect(table.code).toBe(0);
    const lines = table.out.trimEnd().split('\n');
    expect(lines[0]).toMatch(
      /^ID\s+ADDRESS\s+SEEN\s+STATE\s+SERVES\s+PROBED\s+KVM\s+TAPS\s+BRIDGES\s+CPUS\s+FREE MEMORY\s+UNIKERNELS\s+RESERVED$/,
    );
    // Served: what --runtimes asks and the probe found usable (no kvm: no hvt), beside what it found.
    expect(lines[1]).toMatch(/^blind\s.*\sfresh\s+none\s+hvt\/2,spt\/2\s+yes\s/);
    expect(lines[2]).toMatch(
      /^gw-04\s+10\.0\.0\.4:1025\s+\ds ago\s+fresh\s+spt\/2\s+hvt\/2,spt\/2\s+no\s+yes\s+service\s+4\s+4096\/4096 MiB\s+0\s+-$/,
    );
    expect(lines[3]).toMatch(/^spt-only\s.*\sspt\/2\s+hvt\/2,spt\/2\s.*\s1024\/4096 MiB\s+0\s+64 MiB \(1\)$/);
    expect(lines[4]).toMatch(/^web\s.*\shvt\/2,spt\/2\s+hvt\/2,spt\/2\s+yes\s+yes\s+service\(down\)\s/);
    const json = JSON.parse((await petrel('fleet', 'nodes', '--db', url, '--json')).out);
    expect(json.nodes.map((n: { id: string; fresh: boolean }) => [n.id, n.fresh])).toEqual([
      ['blind', true],
      ['gw-04', true],
      ['spt-only', true],
      ['web', true],
    ]);
    expect(json.nodes[1].capabilities).toMatchObject({ kvm: false, serves: [{ kind: 'spt', abi: 2 }] });
    expect(json.nodes[2]).toMatchObject({
      free: { memoryMiB: 1024 },
      reserved: { memoryMiB: 64, vms: 1 },
      reservations: [{ vm: 'user:x', memoryMiB: 64 }],
    });
  });

  it('explain shows the verdict per node and the choice; a refused --node exits 1 with the reason', async () => {
    const { url, pool } = await pg.schema();
    const registry = new Registry(pool);
    await registry.report('gw-04', '10.0.0.4:1025', report({ kvm: false }));
    await registry.report('tank', '10.0.0.7:1025', report({ bridges: [] }));
    await registry.report('web', '10.0.0.6:1025', report());
    await registry.report('blind', '10.0.0.9:1025', report({ runtimes: [] }));
    const explain = (...flags: string[]) =>
      petrel('fleet', 'explain', 'user:web', 'web.hvt', '--db', url, '--net', 'service', ...flags);
    const ok = await explain('--mem', '64');
    expect(ok.code).toBe(0);
    expect(ok.out).toContain('user:web: hvt (ABI 2, 64 MiB, 1 CPU, bridge service)\n');
    expect(ok.out).toMatch(/NODE\s+SERVES\s+FREE\s+RESERVED\s+VERDICT\n/);
    expect(ok.out).toMatch(/blind\s+none\s+4096 MiB, 4 CPUs\s+-\s+hosts no unikernels \(--runtimes none\)\n/);
    expect(ok.out).toMatch(
      /gw-04\s+spt\/2\s+4096 MiB, 4 CPUs\s+-\s+does not serve hvt now \(--runtimes hvt,spt, but the probe found no kvm\)\n/,
    );
    expect(ok.out).toMatch(/tank\s+hvt\/2,spt\/2\s.*\sno bridge service\n/);
    expect(ok.out).toMatch(/web\s+hvt\/2,spt\/2\s+4096 MiB, 4 CPUs\s+-\s+ok\n/);
    expect(ok.out).toContain(
      'choice: web (10.0.0.6:1025), 4032 MiB free after it (most free memory after the placement)\n',
    );

    const refused = await explain('--node', 'gw-04');
    expect(refused.code).toBe(1);
    expect(refused.out).toMatch(/no placement: node gw-04 cannot run .*: does not serve hvt now .*\n$/);

    const spt = await petrel('fleet', 'explain', 'tool', 'tool.spt', '--db', url, '--json');
    const doc = JSON.parse(spt.out);
    expect(doc).toMatchObject({ requirements: { runtime: 'spt', abi: 2 } });
    // Three equal nodes serve spt: any of them, never the one that hosts nothing.
    expect(['gw-04', 'tank', 'web']).toContain(doc.placed.node);
    expect(doc.verdicts.map((v: { id: string; qualifies: boolean }) => [v.id, v.qualifies])).toEqual([
      ['blind', false],
      ['gw-04', true],
      ['tank', true],
      ['web', true],
    ]);
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
    expect(refused.err()).toMatch(/E_FLEET_NODE_REFUSED: node gw-04 cannot run .*: does not serve hvt now/);
    // The real creator goes over mutual TLS: without a delegation it places, refuses, records nothing.
    const noTls = fakeIo();
    expect(await fleetCommand.run(args, noTls.io)).toBe(1);
    expect(noTls.err()).toContain('E_FLEET_TLS');
    expect(requests).toHaveLength(1);
    const after = await registry.placements();
    expect(after.ok && after.value).toHaveLength(1);
    // The successful create holds its reservation until web reports user:web; the others none.
    const held = await registry.reservations();
    expect(held.ok && held.value.map(({ node, vm }) => ({ node, vm }))).toEqual([
      { node: 'web', vm: 'user:web' },
    ]);
  });

  it('create tries the next qualifying node when the chosen one refuses, and says where it landed', async () => {
    const { url, pool } = await pg.schema();
    const registry = new Registry(pool);
    await registry.report('big', '10.0.0.1:1025', report(), capacity(report(), 4096));
    await registry.report('small', '10.0.0.2:1025', report(), capacity(report(), 1024));
    await registry.report('smallest', '10.0.0.3:1025', report(), capacity(report(), 512));
    const asked: string[] = [];
    const refusing = (refusers: readonly string[]) => ({
      nameOnNode: async (name: string) => ({ ok: true as const, value: `alice:${name}` }),
      create: async (request: RemoteCreateRequest) => {
        asked.push(request.node);
        if (refusers.includes(request.node)) return err('E_FLEET_REFUSED', `no room on ${request.node}`);
        return { ok: true as const, value: { by: 'alice', reply: 'created unikernel' } };
      },
    });
    const io = fakeIo();
    const args = ['create', 'tool', 'tool.spt', '--db', url, '--mem', '64'];
    expect(await makeFleetCommand(refusing(['big'])).run(args, io.io)).toBe(0);
    expect(asked).toEqual(['big', 'small']);
    expect(io.out()).toBe(
      'created unikernel\n' +
        'alice:tool placed on small (10.0.0.2:1025), 960 MiB free after it (most free memory after the placement)\n' +
        '  big refused it first: no room on big\n',
    );
    // big's reservation was released at once; small's holds until small reports alice:tool.
    const held = await registry.reservations();
    expect(held.ok && held.value.map(({ node, vm }) => ({ node, vm }))).toEqual([
      { node: 'small', vm: 'alice:tool' },
    ]);
    const trail = await registry.placements('alice:tool');
    expect(trail.ok && trail.value.map((p) => p.node)).toEqual(['small']);

    asked.length = 0;
    const failed = fakeIo();
    expect(await makeFleetCommand(refusing(['big', 'small', 'smallest'])).run(args, failed.io)).toBe(1);
    expect(asked).toEqual(['big', 'small', 'smallest']);
    expect(failed.err()).toContain(
      'E_FLEET_CREATE_FAILED: alice:tool was not created: big, small, smallest refused it and no other node qualifies',
    );
    for (const node of ['big', 'small', 'smallest'])
      expect(failed.err()).toContain(`\n  ${node}: refused this create: no room on ${node}`);
    const after = await registry.reservations();
    expect(after.ok && after.value).toHaveLength(1);

    // With --node the requested node alone is tried: refused, no other node is.
    asked.length = 0;
    const pinned = fakeIo();
    expect(await makeFleetCommand(refusing(['big'])).run([...args, '--node', 'big'], pinned.io)).toBe(1);
    expect(asked).toEqual(['big']);
    expect(pinned.err()).toContain(
      'E_FLEET_CREATE_FAILED: alice:tool was not created: big (requested with --node) refused it: no room on big',
    );
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

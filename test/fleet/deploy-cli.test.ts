// `petrel fleet deploy|ls|rm` against a real registry, with certificates from `petrel ca`: what
// deploy records carries a proof that verifies under the CA, images are stored once, ls shows
// each replica, rm records its removal, and every refusal leaves the registry's tables as they were.

import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { CliIo } from '../../src/cli/command.js';
import { runPetrel } from '../../src/cli/dispatch.js';
import { listDeployments } from '../../src/fleet/deployments.js';
import { unwrap } from '../../src/resources/errors.js';
import { loadTrustAnchor } from '../../src/tls/chain.js';
import { verifyDeploymentProof, verifyRemovalProof } from '../../src/tls/deployment-proof.js';
import { solo5Image } from '../tender/elf-builder.js';
import { describeWithPostgres } from './pg.js';

const IMAGES: Record<string, Uint8Array> = {
  'web.hvt': solo5Image(1, 2, [
    { name: 'service', type: 2 },
    { name: 'eth1', type: 2 },
  ]),
  'notes.txt': new TextEncoder().encode('not an ELF at all\n'),
};

let dir: string;
const ca = (file: string) => path.join(dir, 'ca', file);
const other = (file: string) => path.join(dir, 'other', file);

async function petrel(...argv: string[]) {
  const out: string[] = [];
  const errors: string[] = [];
  const io: CliIo = {
    stdout: (chunk) => void out.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString()),
    stderr: (text) => void errors.push(text),
    readFile: async (file) => IMAGES[file] ?? new Uint8Array(await readFile(file)),
    writeFile: async () => {},
  };
  const code = await runPetrel(argv, io);
  return { code, out: out.join(''), err: errors.join('') };
}

const as = (who: string) => ['--tls-cert', ca(`${who}.pem`), '--tls-key', ca(`${who}.key`)];

/** `petrel fleet deploy NAME IMAGE` on the registry at `url`, signed by alice's delegation. */
const deploy = (url: string, name: string, image: string, ...more: string[]) =>
  petrel('fleet', 'deploy', name, image, '--db', url, ...as('alice'), ...more);

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'petrel-deploy-'));
  for (const [sub, args] of [
    ['ca', ['alice', '--vms', '8', '--mem', '128', '--bridge', 'service', '--bridge', 'admin']],
    ['other', ['alice', '--vms', '8', '--mem', '128', '--bridge', 'service']],
  ] as const) {
    const at = path.join(dir, sub);
    expect((await petrel('ca', 'init', '--dir', at)).code).toBe(0);
    expect((await petrel('ca', 'delegate', ...args, '--dir', at)).code).toBe(0);
  }
});
afterAll(() => rm(dir, { recursive: true, force: true }));

async function tables(pool: pg.Pool) {
  const count = async (table: string) =>
    Number((await pool.query(`SELECT count(*) AS n FROM ${table}`)).rows[0].n);
  return {
    images: await count('images'),
    deployments: await count('deployments'),
    assignments: await count('assignments'),
  };
}

async function anchor() {
  return unwrap(loadTrustAnchor(await readFile(ca('cacert.pem'))));
}

describeWithPostgres('petrel fleet deploy, ls and rm', (pg) => {
  it('deploy signs and records the request, the image once, and each replica unplaced', async () => {
    const { url, pool } = await pg.schema();
    const first = await deploy(
      url,
      'web',
      'web.hvt',
      '--tls-ca',
      ca('cacert.pem'),
      '--replicas',
      '3',
      '--mem',
      '64',
      // Not in sorted order: the proof signs the bridges in the command's order.
      '--net',
      'service',
      '--net',
      'eth1:admin',
      '--arg=--ipv4=10.0.0.2/24',
    );
    expect(first.err).toBe('');
    expect(first.code).toBe(0);
    expect(first.out).toContain(
      'deployed alice:web: 3 replicas, hvt (ABI 2, 64 MiB, 1 CPU, bridges service admin)\n',
    );
    expect(first.out).toMatch(/\nimage [0-9a-f]{64} \(\d+ bytes, stored now\)\n/);
    expect(first.out).toMatch(/\nproof [0-9a-f]{32} signed by alice:, valid until /);
    expect(first.out).toContain('they do not act on deployments yet');

    const [deployment] = unwrap(await listDeployments(pool));
    expect(deployment?.request).toMatchObject({
      name: 'alice:web',
      replicas: 3,
      requirements: { runtime: 'hvt', abi: 2, memoryMiB: 64, cpus: 1, bridges: ['service', 'admin'] },
      blockDevices: 0,
      node: null,
    });
    if (deployment === undefined) return;
    const check = { ca: await anchor(), now: new Date(), denied: () => false };
    const verified = unwrap(verifyDeploymentProof(deployment.proof, deployment.request, check));
    expect(verified.config).toMatchObject({ memory: 64, arguments: ['--ipv4=10.0.0.2/24'] });
    expect(verified.config.image.length).toBe(0);
    const assignments = await pool.query(
      'SELECT index, node, generation, state FROM assignments ORDER BY index',
    );
    expect(assignments.rows).toEqual(
      [0, 1, 2].map((index) => ({ index, node: null, generation: 0, state: 'unplaced' })),
    );

    // A second deployment of the same image stores nothing more.
    const second = await deploy(url, 'alice:api', 'web.hvt', '--node', 'gw-04');
    expect(second.code, second.err).toBe(0);
    expect(second.out).toContain(
      'deployed alice:api: 1 replica, hvt (ABI 2, 32 MiB, 1 CPU), pinned to node gw-04\n',
    );
    expect(second.out).toContain('stored already');
    expect(await tables(pool)).toEqual({ images: 1, deployments: 2, assignments: 4 });
    const sizes = await pool.query('SELECT sha256, size FROM images');
    expect(sizes.rows[0].size).toBe(String(IMAGES['web.hvt']?.length));
  });

  it('ls shows each deployment and replica, as a table and as JSON; rm records the removal', async () => {
    const { url, pool } = await pg.schema();
    expect((await petrel('fleet', 'ls', '--db', url)).out).toBe('no deployments\n');
    const deployed = await deploy(url, 'web', 'web.hvt', '--replicas', '3');
    expect(deployed.code, deployed.err).toBe(0);

    const table = await petrel('fleet', 'ls', '--db', url);
    expect(table.code, table.err).toBe(0);
    const lines = table.out.trimEnd().split('\n');
    expect(lines[0]).toMatch(
      /^alice:web: 3 replicas of image [0-9a-f]{12} \(\d+ bytes\), hvt \(ABI 2, 32 MiB, 1 CPU\); recorded \d{4}-/,
    );
    expect(lines[1]).toMatch(/^ {2}REPLICA\s+NODE\s+STATE\s+GENERATION\s+SINCE\s+REASON$/);
    expect(lines.slice(2)).toHaveLength(3);
    for (const [i, line] of lines.slice(2).entries())
      expect(line).toMatch(new RegExp(`^  ${i}\\s+-\\s+unplaced\\s+0\\s+\\d{4}-\\S+\\s+-$`));

    const json = JSON.parse((await petrel('fleet', 'ls', '--db', url, '--json')).out);
    expect(json.deployments).toHaveLength(1);
    expect(json.deployments[0]).toMatchObject({
      name: 'alice:web',
      replicas: 3,
      removedAt: null,
      node: null,
    });
    expect(
      json.deployments[0].assignments.map((a: { index: number; state: string }) => [a.index, a.state]),
    ).toEqual([
      [0, 'unplaced'],
      [1, 'unplaced'],
      [2, 'unplaced'],
    ]);
    expect((await petrel('fleet', 'ls', '--db', url, '--under', 'bob:', '--json')).out).toBe(
      '{\n  "deployments": []\n}\n',
    );
    for (const under of ['alice', 'alice:'])
      expect((await petrel('fleet', 'ls', '--db', url, '--under', under)).out).toMatch(
        /^alice:web: 3 replicas/,
      );

    const removed = await petrel(
      'fleet',
      'rm',
      'web',
      '--db',
      url,
      ...as('alice'),
      '--tls-ca',
      ca('cacert.pem'),
    );
    expect(removed.code, removed.err).toBe(0);
    expect(removed.out).toMatch(/^removed alice:web: proof [0-9a-f]{32} signed by alice:\n/);
    const [deployment] = unwrap(await listDeployments(pool));
    expect(deployment?.removal).not.toBeNull();
    if (deployment?.removal == null) return;
    const check = { ca: await anchor(), now: new Date(), denied: () => false };
    expect(unwrap(verifyRemovalProof(deployment.removal.proof, 'alice:web', check)).delegation).toEqual([
      'alice',
    ]);
    // The replicas stay until their nodes destroyed their copies.
    expect((await tables(pool)).assignments).toBe(3);
    const after = await petrel('fleet', 'ls', '--db', url);
    expect(after.out).toMatch(/^alice:web: .*; removed \d{4}-\S+: each node destroys its copy/);
    const json2 = JSON.parse((await petrel('fleet', 'ls', '--db', url, '--json')).out);
    expect(json2.deployments[0].removedAt).toMatch(/^\d{4}-/);

    const again = await petrel('fleet', 'rm', 'alice:web', '--db', url, ...as('alice'));
    expect(again).toMatchObject({
      code: 0,
      out: 'alice:web was removed already: the first removal stands, nothing changed\n',
    });
    const unknown = await petrel('fleet', 'rm', 'db', '--db', url, ...as('alice'));
    expect(unknown.code).toBe(1);
    expect(unknown.err).toBe('petrel fleet: E_FLEET_DEPLOYMENT_UNKNOWN: no deployment alice:db\n');
  });

  it('refusals name what is at fault and write nothing', async () => {
    const { url, pool } = await pg.schema();
    const refusals: [[string, string, ...string[]], number, RegExp][] = [
      [['web', 'notes.txt'], 1, /notes\.txt/],
      [['web', 'web.hvt', '--replicas', '0'], 2, /--replicas must be a whole number from 1 to 1000, not 0/],
      [['web', 'web.hvt', '--replicas', '5000'], 2, /--replicas must be .* not 5000/],
      [
        ['web', 'web.hvt', '--mem', '256'],
        1,
        /E_DEPLOY_POLICY: the deployment alice:web asks more than its delegation allows: .*memory/,
      ],
      [
        ['bob:web', 'web.hvt'],
        1,
        /E_DEPLOY_POLICY: the deployment bob:web is outside its delegation's path alice/,
      ],
      [['web', 'web.hvt', '--net', 'eth1:lab'], 1, /E_DEPLOY_POLICY: .*lab/],
      // Another CA, of the same name as alice's: the chain does not verify under it.
      [['web', 'web.hvt', '--tls-ca', other('cacert.pem')], 1, /E_DEPLOY_FORGED: .*CN=ca/],
    ];
    for (const [args, code, message] of refusals) {
      const refused = await deploy(url, ...args);
      expect(refused.code, args.join(' ')).toBe(code);
      expect(refused.err, args.join(' ')).toMatch(message);
      expect(refused.out).toBe('');
      expect(await tables(pool), args.join(' ')).toEqual({ images: 0, deployments: 0, assignments: 0 });
    }
    const noKey = await petrel('fleet', 'deploy', 'web', 'web.hvt', '--db', url);
    expect(noKey.code).toBe(2);
    expect(noKey.err).toMatch(/deploy needs --tls-cert and --tls-key/);
    const unreachable = await deploy('postgres://127.0.0.1:1/none', 'web', 'web.hvt');
    expect(unreachable.code).toBe(1);
    expect(unreachable.err).toMatch(
      /^petrel fleet: E_FLEET_DB: fleet registry: storing image [0-9a-f]{64}: /,
    );
    const outside = await petrel('fleet', 'rm', 'bob:web', '--db', url, ...as('alice'));
    expect(outside.code).toBe(1);
    expect(outside.err).toMatch(/E_DEPLOY_POLICY: the deployment bob:web is outside/);
    expect(await tables(pool)).toEqual({ images: 0, deployments: 0, assignments: 0 });
  });
});

it('each action has its own help, with examples', async () => {
  for (const action of ['deploy', 'ls', 'rm']) {
    const help = await petrel('fleet', action, '--help');
    expect(help.code).toBe(0);
    expect(help.out).toMatch(new RegExp(`^usage: petrel fleet ${action} `));
    expect(help.out).toContain(`examples:\n  petrel fleet ${action} `);
    expect(help.out).toContain('do not act on deployments yet');
  }
  expect((await petrel('fleet', '--help')).out).toContain('petrel fleet deploy NAME IMAGE');
});

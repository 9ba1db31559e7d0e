// What petreld loads before it knows its configuration: the daemon, not the optional parts. TLS
// (and its X.509 library), the web API, statistics, metrics and the fleet registry are loaded only when
// configured or first used; each costs resident memory for as long as the daemon runs. Runs
// dist/src/cli/petreld.js (build first) with a resolve hook that lists every module it loads;
// `--help` exits after the static imports, which are what every start loads.
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { repo } from '../engine/guest.js';

const dir = await mkdtemp(path.join(tmpdir(), 'petrel-loading-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

const hooks = path.join(dir, 'hooks.mjs');
const register = path.join(dir, 'register.mjs');
await writeFile(
  hooks,
  `export async function resolve(specifier, context, next) {
     const resolved = await next(specifier, context);
     process.stderr.write('LOADED ' + resolved.url + '\\n');
     return resolved;
   }\n`,
);
await writeFile(
  register,
  `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`,
);

function loadedBy(args: readonly string[]): string[] {
  const petreld = path.join(repo, 'dist', 'src', 'cli', 'petreld.js');
  const run = spawnSync(process.execPath, ['--import', register, petreld, ...args], { encoding: 'utf8' });
  expect(run.status).toBe(0);
  return run.stderr
    .split('\n')
    .filter((line) => line.startsWith('LOADED '))
    .map((line) => line.slice('LOADED '.length));
}

const OPTIONAL = [
  '/src/tls/endpoint.js',
  '/src/tls/chain.js',
  '/src/tls/x509.js',
  '/src/tls/token.js',
  '/src/web/',
  '@peculiar/x509',
  'reflect-metadata',
  '/src/stats/service.js',
  '/src/daemon/metrics.js',
  'prom-client',
  '/src/fleet/',
  '/node_modules/pg/',
];

describe('petreld loads its optional parts only when configured or first used', () => {
  it('a start loads the daemon, and neither TLS, X.509, statistics, metrics nor the fleet', () => {
    const loaded = loadedBy(['--help']);
    expect(loaded.some((url) => url.endsWith('/src/daemon/daemon.js'))).toBe(true);
    expect(loaded.filter((url) => OPTIONAL.some((part) => url.includes(part)))).toEqual([]);
  });

  it('`petreld tls-endpoint --help` does not load the endpoint either', () => {
    const loaded = loadedBy(['tls-endpoint', '--help']);
    expect(loaded.some((url) => url.endsWith('/src/tls/cli.js'))).toBe(true);
    expect(loaded.filter((url) => OPTIONAL.some((part) => url.includes(part)))).toEqual([]);
  });
});

#!/usr/bin/env node
// `npm run bench [-- NAME...]`: compiles src and bench/ to dist/ and runs each bench/NAME.ts
// (all of them when no NAME is given) one after another, so figures are not skewed by each other.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';

const names = process.argv.slice(2);
const all = readdirSync(new URL('../bench/', import.meta.url))
  .filter((f) => f.endsWith('.ts'))
  .map((f) => f.slice(0, -3));
const chosen = names.length > 0 ? names : all;
const unknown = chosen.filter((n) => !all.includes(n));
if (unknown.length > 0) {
  console.error(`unknown benchmark(s): ${unknown.join(', ')}; available: ${all.join(', ')}`);
  process.exit(2);
}
// Type errors do not stop the emit; `npm test` is where they fail the build.
const tsc = spawnSync('npx', ['tsc', '-p', 'tsconfig.bench.json'], { stdio: 'inherit' });
if (tsc.status !== 0) console.error('warning: type-check failed; benchmarking the emitted JavaScript anyway');
// tsc wrote the client's modules over its bundles (bench/cli times the executable as shipped).
if (spawnSync(process.execPath, ['scripts/build-client.mjs'], { stdio: 'inherit' }).status !== 0)
  process.exit(1);
let failed = 0;
for (const name of chosen) {
  console.log(`\n== bench/${name}`);
  const run = spawnSync(process.execPath, ['--expose-gc', `dist/bench/${name}.js`], { stdio: 'inherit' });
  if (run.status !== 0) failed += 1;
}
process.exit(failed === 0 ? 0 : 1);

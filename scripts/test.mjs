#!/usr/bin/env node
// The README's test command: unit tests, property tests, type-check and lint, then one closing
// line `N passed, N failed` counting every test case plus the type-check and lint as one each.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const dir = mkdtempSync(join(tmpdir(), 'petrel-test-'));
const report = join(dir, 'vitest.json');
const run = (cmd, args) => spawnSync(cmd, args, { stdio: 'inherit' }).status ?? 1;

// Tests that run petreld or petrel as a separate process use dist/: build it first (tsc, then
// the client's bundles).
if (run('npm', ['run', '--silent', 'build:ts']) !== 0) {
  process.stdout.write('build of dist/ failed; process-level tests will use a stale or missing daemon\n');
}

let passed = 0;
let failed = 0;
let skipped = 0;

const vitestStatus = run('npx', [
  'vitest',
  'run',
  '--reporter=default',
  '--reporter=json',
  `--outputFile=${report}`,
]);
try {
  const json = JSON.parse(readFileSync(report, 'utf8'));
  passed += json.numPassedTests;
  failed += json.numFailedTests;
  skipped += json.numPendingTests + json.numTodoTests;
  // A suite that fails to load has no test results of its own: count it as a failure.
  failed += json.testResults.filter((r) => r.status === 'failed' && r.assertionResults.length === 0).length;
} catch {
  failed += 1;
}
if (vitestStatus !== 0 && failed === 0) failed += 1;

for (const [name, cmd, args] of [
  ['type-check', 'npx', ['tsc', '-p', 'tsconfig.json', '--noEmit']],
  // The dashboard's browser code has the DOM's types, not Node's: a program of its own.
  ['type-check of the dashboard', 'npx', ['tsc', '-p', 'src/dashboard/tsconfig.json']],
  ['lint', 'npx', ['biome', 'check', '.']],
]) {
  process.stdout.write(`\n== ${name}\n`);
  if (run(cmd, args) === 0) passed += 1;
  else {
    failed += 1;
    process.stdout.write(`${name} FAILED\n`);
  }
}

rmSync(dir, { recursive: true, force: true });
process.stdout.write(`\n${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}\n`);
process.exit(failed === 0 ? 0 : 1);

#!/usr/bin/env node
// Builds the web dashboard (src/dashboard) into dist/src/web/dashboard/: its TypeScript
// bundled for browsers into app.js, index.html and app.css copied. Nothing is fetched at run time.
import { copyFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

let build;
try {
  ({ build } = await import('esbuild'));
} catch (e) {
  if (e?.code !== 'ERR_MODULE_NOT_FOUND') throw e;
  console.error('build-dashboard: esbuild is not installed (npm ci installs it); no dashboard built');
  process.exit(0);
}

const root = fileURLToPath(new URL('..', import.meta.url));
const dist = path.resolve(root, process.env.PETREL_DIST ?? 'dist');
const out = path.join(dist, 'src/web/dashboard');
mkdirSync(out, { recursive: true });
await build({
  absWorkingDir: root,
  entryPoints: ['src/dashboard/main.ts'],
  outfile: path.join(out, 'app.js'),
  bundle: true,
  format: 'iife',
  platform: 'browser',
  target: ['chrome110', 'firefox115', 'safari16'],
  minify: true,
  logLevel: 'warning',
});
for (const file of ['index.html', 'app.css'])
  copyFileSync(path.join(root, 'src/dashboard', file), path.join(out, file));

#!/usr/bin/env node
// Bundles the `petrel` client, so that a command's start-up reads two files instead of some forty
// modules: dist/src/cli/petrel.js (the dispatcher) and dist/src/cli/commands/NAME.js, one whole
// bundle per subcommand, written over what tsc emitted at those paths (`npm run build:ts`).
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// esbuild is a dev dependency: a checkout whose node_modules predates it keeps tsc's modules,
// which work the same and start slower. Say so rather than fail the build.
let build;
try {
  ({ build } = await import('esbuild'));
} catch (e) {
  if (e?.code !== 'ERR_MODULE_NOT_FOUND') throw e;
  console.error('build-client: esbuild is not installed (npm ci installs it); petrel stays unbundled');
  process.exit(0);
}

const root = fileURLToPath(new URL('..', import.meta.url));
const commands = readdirSync(path.join(root, 'src/cli/commands')).filter((f) => f.endsWith('.ts'));

/**
 * Imports that stay separate files, left as written: the dispatcher loads each subcommand's
 * bundle on demand, and the TLS client (tsc's dist/src/tls/client.js) is loaded for --remote
 * only. Packages stay in node_modules. Every import left is checked below to resolve from dist/.
 */
const separate = {
  name: 'separate',
  setup(builder) {
    builder.onResolve({ filter: /^\.\/commands\/[\w-]+\.js$/ }, (args) =>
      args.importer === path.join(root, 'src/cli/dispatch.ts')
        ? { path: args.path, external: true }
        : undefined,
    );
    builder.onResolve({ filter: /\/tls\/client\.js$/ }, (args) => ({ path: args.path, external: true }));
  },
};

const result = await build({
  absWorkingDir: root,
  entryPoints: ['src/cli/petrel.ts', ...commands.map((f) => `src/cli/commands/${f}`)],
  outdir: 'dist/src/cli',
  outbase: 'src/cli',
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  packages: 'external',
  sourcemap: true,
  plugins: [separate],
  metafile: true,
  logLevel: 'warning',
});

// An import left relative must find its file from where the bundle landed (the TLS client's
// `../../tls/client.js` is written from src/cli/client/ and read from dist/src/cli/commands/).
const missing = [];
for (const [output, { imports }] of Object.entries(result.metafile.outputs)) {
  for (const { path: target, external } of imports) {
    if (!external || !target.startsWith('.')) continue;
    if (!existsSync(path.resolve(root, path.dirname(output), target)))
      missing.push(`${output} imports ${target}`);
  }
}
if (missing.length > 0) {
  console.error(
    `build-client: imports that do not resolve from dist/ (run tsc first):\n  ${missing.join('\n  ')}`,
  );
  process.exit(1);
}

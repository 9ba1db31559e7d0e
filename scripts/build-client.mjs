#!/usr/bin/env node
// Bundles the `petrel` client into CommonJS files, so that a command's start-up reads two of them
// and never starts Node's ES module loader (which alone costs more than the command's own code):
// dist/src/cli/petrel.cjs (the dispatcher, the `petrel` executable), one whole bundle per
// subcommand in dist/src/cli/commands/NAME.cjs, and dist/src/cli/remote.cjs (the TLS client, for
// --remote only). dist/src/cli/petrel.js, which tsc wrote, becomes a shim that loads petrel.cjs.
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
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
// Where tsc wrote its output: dist/ of the tree, or PETREL_DIST (scripts/package.sh builds apart).
const dist = path.resolve(root, process.env.PETREL_DIST ?? 'dist');
const commands = readdirSync(path.join(root, 'src/cli/commands')).filter((f) => f.endsWith('.ts'));

const cli = (file) => path.join(root, 'src/cli', file);

/**
 * Imports that stay separate files: the dispatcher loads each subcommand's bundle on demand,
 * and the commands load the TLS client's only for --remote; packages stay in node_modules.
 * Each is written relative to where it lands (dist/src/cli/, dist/src/cli/commands/); every
 * relative import left is checked below to resolve from there.
 */
const separate = {
  name: 'separate',
  setup(builder) {
    builder.onResolve({ filter: /^\.\/commands\/[\w-]+\.js$/ }, (args) =>
      args.importer === cli('dispatch.ts')
        ? { path: args.path.replace(/\.js$/, '.cjs'), external: true }
        : undefined,
    );
    // Code that finds files from its own module (the fleet's migrations) does so from the
    // bundle: CommonJS has no import.meta, so the URL is made from the bundle's __filename.
    builder.onLoad({ filter: /\.ts$/ }, async (args) => {
      const source = await readFile(args.path, 'utf8');
      if (!source.includes('import.meta.url')) return undefined;
      const url = "require('node:url').pathToFileURL(__filename).href";
      return { contents: source.replaceAll('import.meta.url', url), loader: 'ts' };
    });
    builder.onResolve({ filter: /\/tls\/client\.js$/ }, (args) =>
      args.importer.startsWith(cli('')) ? { path: '../remote.cjs', external: true } : undefined,
    );
  },
};

const result = await build({
  absWorkingDir: root,
  entryPoints: [
    { in: 'src/cli/petrel.ts', out: 'petrel' },
    ...commands.map((file) => ({ in: `src/cli/commands/${file}`, out: `commands/${file.slice(0, -3)}` })),
    { in: 'src/tls/client.ts', out: 'remote' },
  ],
  outdir: path.join(dist, 'src/cli'),
  outExtension: { '.js': '.cjs' },
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  packages: 'external',
  // import() becomes require(), so no bundle starts the ES module loader.
  supported: { 'dynamic-import': false },
  sourcemap: true,
  plugins: [separate],
  metafile: true,
  logLevel: 'warning',
});

// `node dist/src/cli/petrel.js` (the README's way) still works, through the bundle.
writeFileSync(
  path.join(dist, 'src/cli/petrel.js'),
  `#!/usr/bin/env node
// Written by scripts/build-client.mjs over tsc's module: the client is the bundle petrel.cjs.
import { createRequire } from 'node:module';

createRequire(import.meta.url)('./petrel.cjs');
`,
);
// An import left relative must find its file from where the bundle landed.
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

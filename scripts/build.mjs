// Compiles the server, the shard worker and the CLI into dist/ (esbuild; node_modules stay external),
// so `npm start` and `kobo` run plain JavaScript: no TypeScript compile at start. Runs at `npm ci`
// (prepare) and before `npm start` when a source is newer than dist/ (`--if-stale`).
// Invariant: dist/worker-entry.mjs sits beside dist/main.js, where the pool looks for its worker.
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { build } from 'esbuild';

const root = path.resolve(import.meta.dirname, '..');
const dist = path.join(root, 'dist');
const sources = ['src', 'machines', 'data/reference'].map((dir) => path.join(root, dir));

function newest(dir) {
  let latest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(full) : fs.statSync(full).mtimeMs);
  }
  return latest;
}

function stale() {
  const outputs = ['main.js', 'kobo.js', 'worker-entry.mjs'].map((f) => path.join(dist, f));
  if (!outputs.every((f) => fs.existsSync(f))) return true;
  const built = Math.min(...outputs.map((f) => fs.statSync(f).mtimeMs));
  const inputs = [...sources.filter((d) => fs.existsSync(d)).map(newest), fs.statSync(path.join(root, 'package.json')).mtimeMs];
  return Math.max(...inputs) > built;
}

if (process.argv.includes('--if-stale') && !stale()) process.exit(0);

/** The commit being built, for kobo_build_info; '' outside a git clone (a tarball) or without git. */
function commitOf() {
  try {
    const head = execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim() !== '';
    return /^[0-9a-f]+$/.test(head) ? `${head}${dirty ? '-dirty' : ''}` : '';
  } catch {
    return '';
  }
}

const common = {
  define: { KOBO_BUILD_COMMIT: JSON.stringify(commitOf()) },
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  // Pure-JS packages are bundled (resolving hundreds of files at start cost ~0.5 s); native addons and
  // the TypeScript loader load from node_modules at run time.
  external: ['better-sqlite3', 'uWebSockets.js', 'tsx', 'esbuild'],
  // Bundled CommonJS packages call require() for node built-ins: give the ESM bundle one.
  banner: { js: "import { createRequire as __koboRequire } from 'node:module'; const require = __koboRequire(import.meta.url);" },
  sourcemap: 'linked',
  logLevel: 'warning',
  outdir: dist,
};
const started = Date.now();
// Files are overwritten in place (no rm first): a test process may be reading dist/ meanwhile.
await build({ ...common, entryPoints: { main: path.join(root, 'src/main.ts'), kobo: path.join(root, 'src/cli/kobo.ts') } });
await build({ ...common, entryPoints: { 'worker-entry': path.join(root, 'src/shard/worker.ts') }, outExtension: { '.js': '.mjs' } });
process.stderr.write(`kobo: built dist/ in ${Date.now() - started} ms\n`);

// How tests run kobo processes: the compiled bundle in dist/ (rebuilt first when any source is newer,
// once per test process), as `npm start` does; KOBO_TEST_FROM_SOURCE=1 runs src/*.ts through tsx instead.
// A server from dist/ starts in ~1 s; through tsx every start (and every shard thread) loads TypeScript.
import { spawnSync } from 'node:child_process';
import path from 'node:path';

export const ROOT = path.resolve(import.meta.dirname, '..', '..');
const FROM_SOURCE = process.env.KOBO_TEST_FROM_SOURCE === '1';
let built = false;

function ensureBuilt(): void {
  if (built || FROM_SOURCE) return;
  const result = spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'build.mjs'), '--if-stale'], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
  if (result.status !== 0) throw new Error(`build failed:\n${result.stderr}`);
  built = true;
}

/** node arguments that run the server (`main`) or the operator CLI (`kobo`). */
export function entryArgs(entry: 'main' | 'kobo'): string[] {
  ensureBuilt();
  if (FROM_SOURCE) return ['--import', 'tsx', path.join(ROOT, 'src', entry === 'main' ? 'main.ts' : path.join('cli', 'kobo.ts'))];
  return [path.join(ROOT, 'dist', `${entry}.js`)];
}

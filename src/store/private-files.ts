// Data-dir permissions: keys' hashes, webhook signing secrets and every balance live in these files,
// so only the server's user may read them. Main thread of the server and of the CLI, at start.
// Invariant: after restrictDataDir, new files are created 0600 and directories 0700 (process umask),
// and what an older version left behind is tightened the same way.
import fs from 'node:fs';
import path from 'node:path';

const FILES_MAX = 10_000;
/** Path components makeDir creates at most (a bound on the walk up to an existing ancestor). */
const DEPTH_MAX = 64;

/**
 * mkdir -p, one component at a time. Node 20's recursive mkdir loops forever (at 100% CPU, deaf to
 * SIGTERM) under /proc, where mkdir answers ENOENT for every component; this fails with one error.
 */
export function makeDir(dir: string, mode = 0o777): void {
  const missing: string[] = [];
  let at = path.resolve(dir);
  while (!fs.existsSync(at)) {
    if (missing.length >= DEPTH_MAX || path.dirname(at) === at) throw new Error(`cannot create ${dir}: no existing parent directory`);
    missing.push(at);
    at = path.dirname(at);
  }
  if (!fs.statSync(at).isDirectory()) throw new Error(`cannot create ${dir}: ${at} is not a directory`);
  for (const component of missing.reverse()) {
    try {
      fs.mkdirSync(component, { mode });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw new Error(`cannot create ${component}: ${(error as Error).message}`, { cause: error });
    }
  }
}

/** Sets the process umask to 077 and tightens the data dir and everything already in it. */
export function restrictDataDir(dataDir: string): void {
  process.umask(0o077);
  makeDir(dataDir, 0o700);
  const pending = [dataDir];
  let seen = 0;
  while (pending.length > 0 && seen < FILES_MAX) {
    const dir = pending.pop()!;
    fs.chmodSync(dir, 0o700);
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      seen += 1;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) pending.push(full);
      else if (entry.isFile()) fs.chmodSync(full, 0o600);
    }
  }
}

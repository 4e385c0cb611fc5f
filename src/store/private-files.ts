// Data-dir permissions: keys' hashes, webhook signing secrets and every balance live in these files,
// so only the server's user may read them. Main thread of the server and of the CLI, at start.
// Invariant: after restrictDataDir, new files are created 0600 and directories 0700 (process umask),
// and what an older version left behind is tightened the same way.
import fs from 'node:fs';
import path from 'node:path';

const FILES_MAX = 10_000;

/** Sets the process umask to 077 and tightens the data dir and everything already in it. */
export function restrictDataDir(dataDir: string): void {
  process.umask(0o077);
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
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

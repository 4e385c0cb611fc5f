// The data dir's lock: an exclusive sqlite lock on `server.lock`, held by the server process for its life
// and by the CLI commands that write a whole data dir (`restore`, an offline `snapshot`) for theirs.
// Main thread of the server; the CLI. The OS drops the lock when the process dies (SIGKILL, OOM, power
// loss), so a leftover file never blocks a start and a reused PID never looks like a running server (a
// PID file checked with kill(pid, 0) did both).
// Invariant: at most one process holds a data dir's lock.
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';

export const LOCK_FILE = 'server.lock';
/** Who holds the lock (`server 123`, `kobo restore 456`): written by each holder, for messages only. */
export const HOLDER_FILE = 'lock.holder';

/**
 * Present while `kobo restore` swaps a backup into the dir (old files out, then the backup's in): a
 * server refuses to start on a dir holding it, since a restore killed halfway leaves neither set whole.
 */
export const RESTORE_MARKER = 'restore.incomplete';

/** The names a lock holder may use: the server, or a CLI command that writes the whole data dir. */
export type LockHolderName = 'server' | 'kobo restore' | 'kobo snapshot';

export interface DirLock {
  release(): void;
}

/** Takes the data dir's lock, or null when another process holds it; `holder` names the taker in messages. */
export function tryLockDataDir(dataDir: string, holder: LockHolderName = 'server'): DirLock | null {
  const db = new Database(path.join(dataDir, LOCK_FILE), { timeout: 0 });
  try {
    // EXCLUSIVE locking mode keeps the lock once taken; the transaction is never committed, so it is
    // held until release() or the process's end.
    db.pragma('locking_mode = EXCLUSIVE');
    db.exec('BEGIN EXCLUSIVE');
  } catch (error) {
    db.close();
    if ((error as { code?: string }).code === 'SQLITE_BUSY') return null;
    throw error;
  }
  fs.writeFileSync(path.join(dataDir, HOLDER_FILE), `${holder} ${process.pid}\n`);
  return {
    release: () => {
      db.exec('ROLLBACK');
      db.close();
    },
  };
}

/**
 * True when a process (a running server) holds the data dir's lock. The probe only reads (a shared
 * lock, refused while the server holds its exclusive one), so it works on a read-only data dir too.
 */
export function dataDirLocked(dataDir: string): boolean {
  const file = path.join(dataDir, LOCK_FILE);
  if (!fs.existsSync(file)) return false;
  const db = new Database(file, { readonly: true, fileMustExist: true, timeout: 0 });
  try {
    db.prepare('SELECT count(*) FROM sqlite_master').get();
    return false;
  } catch (error) {
    if ((error as { code?: string }).code === 'SQLITE_BUSY') return true;
    throw error;
  } finally {
    db.close();
  }
}

/** The PID the lock's holder wrote to server.pid (for messages only: the lock, not this, decides). */
export function recordedPid(dataDir: string): number | null {
  try {
    const pid = Number(fs.readFileSync(path.join(dataDir, 'server.pid'), 'utf8'));
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

/**
 * Who wrote the holder file last: the lock's holder while one holds it (for messages only: a holder
 * that died leaves its name behind, and the lock, not this, decides).
 */
export function lockHolder(dataDir: string): { name: LockHolderName; pid: number } | null {
  try {
    const match = /^(server|kobo restore|kobo snapshot) (\d+)\s*$/.exec(fs.readFileSync(path.join(dataDir, HOLDER_FILE), 'utf8'));
    return match === null ? null : { name: match[1] as LockHolderName, pid: Number(match[2]) };
  } catch {
    return null;
  }
}

/**
 * "a kobo server (pid 123)" ("another …" when a server asks) or "`kobo restore` (pid 456)": who is
 * using the data dir, for refusals.
 */
export function describeHolder(dataDir: string, asker: 'server' | 'cli' = 'cli'): string {
  const holder = lockHolder(dataDir);
  if (holder !== null && holder.name !== 'server') return `\`${holder.name}\` (pid ${holder.pid})`;
  return `${asker === 'server' ? 'another' : 'a'} kobo server (pid ${holder?.pid ?? recordedPid(dataDir) ?? 'unknown'})`;
}

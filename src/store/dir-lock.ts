// The data dir's lock: an exclusive sqlite lock on `server.lock`, held by the server process for its life.
// Main thread of the server; the CLI only probes it. The OS drops the lock when the process dies
// (SIGKILL, OOM, power loss), so a leftover file never blocks a start and a reused PID never looks like
// a running server (a PID file checked with kill(pid, 0) did both).
// Invariant: at most one process holds a data dir's lock.
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';

export const LOCK_FILE = 'server.lock';

export interface DirLock {
  release(): void;
}

/** Takes the data dir's lock, or null when another process holds it. */
export function tryLockDataDir(dataDir: string): DirLock | null {
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

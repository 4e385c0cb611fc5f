// Makes a shard file's commits durable: fdatasync of its sqlite journal (the `-wal` file) on the libuv
// pool, so the shard thread goes on executing the next batch meanwhile. Runs in the shard worker that
// owns the file. Invariant: `done` reports success only after an fdatasync that began after the call.
import fs from 'node:fs';

export class JournalSync {
  private journal: { fd: number; ino: number } | null = null;
  private syncing = 0;
  private closed = false;

  constructor(private readonly journalFile: string) {}

  /**
   * Calls back with an error if the sync failed (the caller must then answer nothing). The journal
   * keeps its inode while the database is open; if it were ever replaced, the new one is opened first.
   */
  sync(done: (error: Error | null) => void): void {
    let journal: { fd: number; ino: number };
    try {
      const ino = fs.statSync(this.journalFile).ino;
      if (this.journal !== null && this.journal.ino !== ino) {
        fs.closeSync(this.journal.fd);
        this.journal = null;
      }
      if (this.journal === null) this.journal = { fd: fs.openSync(this.journalFile, 'r'), ino };
      journal = this.journal;
    } catch (error) {
      done(new Error('syncJournal: cannot open the sqlite journal', { cause: error }));
      return;
    }
    this.syncing += 1;
    fs.fdatasync(journal.fd, (error) => {
      this.syncing -= 1;
      // Closed meanwhile: the fd was left open for this sync and goes now.
      if (this.closed && this.syncing === 0 && this.journal !== null) {
        fs.closeSync(this.journal.fd);
        this.journal = null;
      }
      done(error === null ? null : new Error('syncJournal: fdatasync failed', { cause: error }));
    });
  }

  /** A sync still running on the libuv pool keeps its fd (closing it under fdatasync would be EBADF). */
  close(): void {
    this.closed = true;
    if (this.journal !== null && this.syncing === 0) {
      fs.closeSync(this.journal.fd);
      this.journal = null;
    }
  }
}

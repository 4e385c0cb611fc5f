// A shard's list index in a SQLite file of its own (`shard-<n>-lists.db`), written through its own
// connection in one transaction that stays open across event-loop turns: the shard adds a few hundred
// rows a turn and commits every LIST_TX_ROWS_MAX rows, so no turn holds the loop for a whole slice and
// each commit rewrites the b-trees' pages once for thousands of rows. Runs in the shard worker (and the CLI).
// Invariant: before an image at LSN L is written to the shard file, every list row of records up to L is
// committed and fsynced here (`durableSync`/`durable`); rows past the log's end are cut at open.
import fs from 'node:fs';
import type Database from 'better-sqlite3';
import { openDatabase, SHARD_PAGE_SIZE_BYTES } from './open-database.ts';
import { JournalSync } from './journal-sync.ts';
import { Checkpointer } from './checkpointer.ts';
import { LIST_SQL, ListIndex, type EntryChange, type ListChange } from './list-index.ts';

/**
 * Rows one transaction of the list file takes before it commits. Each commit writes every b-tree page its
 * rows dirtied (the customer index's inserts land all over it), so bigger transactions write fewer bytes
 * a row; the open transaction's pages stay in sqlite's cache (LIST_CACHE_KIB) until then.
 */
export const LIST_TX_ROWS_MAX = 8_000;
/**
 * Journal bytes past which a commit asks for a checkpoint (with a checkpointer: on its worker thread; sqlite's
 * own automatic checkpoint, on the writer's thread, took ~10 ms of the ~13 ms a commit held the loop).
 */
const LIST_CHECKPOINT_BYTES = 4 * 1_024 * 1_024;
/** Journal bytes past which the writer checkpoints on its own thread (the worker fell behind or fails). */
const LIST_JOURNAL_BYTES_MAX = 64 * 1_024 * 1_024;
/**
 * Page cache of the list file's connection: room for an open transaction's dirty pages (8,000 rows dirty
 * ~2 MiB of pages in the bench) and the b-trees' upper levels; one per shard.
 */
const LIST_CACHE_KIB = 8 * 1_024;
/** The tables of the list index, in the order a move copies them (numbers before the rows naming them). */
const LIST_TABLES = ['list_owners', 'list_customers', 'lists', 'ledger_entries'] as const;
const META_SQL = 'CREATE TABLE IF NOT EXISTS list_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);';

/** The list file beside a shard file. */
export function listFileOf(shardFile: string): string {
  return `${shardFile.replace(/\.db$/, '')}-lists.db`;
}

function hasTable(db: Database.Database, table: string, schema = 'main'): boolean {
  return db.prepare(`SELECT 1 FROM ${schema}.sqlite_master WHERE type = 'table' AND name = ?`).get(table) !== undefined;
}

/** True when a shard file still holds list tables of its own (written before the list file existed). */
export function shardHoldsLists(shardDb: Database.Database): boolean {
  return hasTable(shardDb, 'lists') || hasTable(shardDb, 'ledger_entries');
}

export class ListFile {
  readonly db: Database.Database;
  readonly index: ListIndex;
  private readonly journal: JournalSync;
  private readonly walFile: string;
  private inTx = false;
  private txRows = 0;
  /** Highest LSN of the rows written so far (committed or in the open transaction). */
  private lsnMax: number;
  /** A commit happened since the last fsync of the file's journal. */
  private unsynced = false;
  /** Checkpoints on a worker thread (a server's shard); null: sqlite's automatic checkpoints (the CLI, tests). */
  private checkpointer: Checkpointer | null = null;
  /** Called once a checkpoint ends: the writer may open its next transaction (see `checkpointing`). */
  onCheckpointed: (() => void) | null = null;

  private constructor(private readonly shardFile: string, file: string, db: Database.Database) {
    this.db = db;
    this.walFile = `${file}-wal`;
    this.journal = new JournalSync(this.walFile);
    this.index = new ListIndex(db);
    this.lsnMax = Number(this.getMeta('lsn') ?? '-1');
  }

  /**
   * Opens (creating it if missing) the list file of `shardFile` for writing; list tables the shard file
   * still holds move here first, once: copied and made durable, then dropped from the shard file (a crash
   * in between finds the copy complete by its `moved` mark and only drops).
   */
  static openWritable(shardFile: string, shardDb: Database.Database): ListFile {
    const file = listFileOf(shardFile);
    const db = openDatabase(file, { deferredSync: true, pageSizeBytes: SHARD_PAGE_SIZE_BYTES });
    db.pragma(`cache_size = -${LIST_CACHE_KIB}`);
    db.exec(`${LIST_SQL}\n${META_SQL}`);
    const moving = LIST_TABLES.filter((table) => hasTable(shardDb, table));
    if (moving.length > 0) {
      const moved = db.prepare("SELECT value FROM list_meta WHERE key = 'moved'").pluck().get() !== undefined;
      if (!moved) moveTables(db, shardFile, moving);
      shardDb.transaction(() => {
        for (const table of moving) shardDb.exec(`DROP TABLE IF EXISTS ${table}`);
      })();
    }
    ListIndex.migrate(db);
    return new ListFile(shardFile, file, db);
  }

  /** The list file of `shardFile` for reading, if it has one. */
  static openReadonly(shardFile: string): ListFile | null {
    const file = listFileOf(shardFile);
    if (!fs.existsSync(file)) return null;
    const db = openDatabase(file, { readonly: true });
    // One moment of the file for the whole read, like the shard file's read-only open.
    db.exec('BEGIN');
    db.prepare('SELECT count(*) FROM sqlite_master').get();
    return new ListFile(shardFile, file, db);
  }

  private getMeta(key: string): string | undefined {
    if (!hasTable(this.db, 'list_meta')) return undefined;
    return this.db.prepare('SELECT value FROM list_meta WHERE key = ?').pluck().get(key) as string | undefined;
  }

  /** Highest LSN of the rows written so far. */
  get lastLsn(): number {
    return this.lsnMax;
  }

  /**
   * Moves the file's checkpoints to a worker thread. The journal restarts from its beginning only when a
   * write transaction begins after a checkpoint copied all of it, so the writer holds new rows back while
   * one runs (`checkpointing`) instead of opening its next transaction at once.
   */
  checkpointInWorker(): void {
    if (this.checkpointer !== null || this.db.readonly) return;
    this.db.pragma('wal_autocheckpoint = 0');
    this.checkpointer = new Checkpointer(listFileOf(this.shardFile));
  }

  /** A checkpoint runs: list rows had better wait in memory (a transaction opened now keeps the journal growing). */
  get checkpointing(): boolean {
    return this.checkpointer?.running === true;
  }

  /** Rows in the open transaction. */
  get rowsInTransaction(): number {
    return this.txRows;
  }

  /**
   * Writes rows into the open transaction (opening one if none is). Rows are implied by log records, so
   * a transaction lost to a crash loses nothing: recovery derives them again. If a write throws, the
   * transaction rolls back and the cached owner and customer numbers are forgotten (they may name rows
   * that are gone); the caller's shard then stops, as after any failed write.
   */
  apply(list: readonly ListChange[], entries: readonly EntryChange[]): void {
    if (list.length === 0 && entries.length === 0) return;
    if (!this.inTx) {
      this.db.exec('BEGIN IMMEDIATE');
      this.inTx = true;
    }
    try {
      this.index.apply(list, entries);
    } catch (error) {
      this.rollback();
      throw error;
    }
    let lsn = this.lsnMax;
    for (const row of list) if (row.lsn > lsn) lsn = row.lsn;
    for (const entry of entries) if (entry.lsn > lsn) lsn = entry.lsn;
    this.lsnMax = lsn;
    this.txRows += list.length + entries.length;
  }

  private rollback(): void {
    if (this.inTx && this.db.inTransaction) this.db.exec('ROLLBACK');
    this.inTx = false;
    this.txRows = 0;
    this.lsnMax = Number(this.getMeta('lsn') ?? '-1');
    this.index.forgetNumbers();
  }

  /** Commits the open transaction (with the highest LSN it holds), if one is open. */
  commit(): void {
    if (!this.inTx) return;
    try {
      this.db.prepare("INSERT OR REPLACE INTO list_meta (key, value) VALUES ('lsn', ?)").run(String(this.lsnMax));
      this.db.exec('COMMIT');
    } catch (error) {
      this.rollback();
      throw error;
    }
    this.inTx = false;
    this.txRows = 0;
    this.unsynced = true;
    this.checkpointIfLong();
  }

  /** After a commit: a checkpoint on the worker once the journal passes LIST_CHECKPOINT_BYTES. */
  private checkpointIfLong(): void {
    if (this.checkpointer === null || this.checkpointer.running) return;
    let bytes = 0;
    try {
      bytes = fs.statSync(this.walFile).size;
    } catch {
      return;
    }
    if (bytes > LIST_JOURNAL_BYTES_MAX) {
      // The worker has not kept the journal short: this thread checkpoints, as sqlite would by itself.
      this.db.pragma('wal_checkpoint(PASSIVE)');
      return;
    }
    if (bytes < LIST_CHECKPOINT_BYTES) return;
    // A failed checkpoint loses nothing (the journal stays whole); the next commit asks again.
    this.checkpointer.run(() => this.onCheckpointed?.());
  }

  /** Commits if the open transaction has reached LIST_TX_ROWS_MAX rows. */
  commitIfFull(): void {
    if (this.txRows >= LIST_TX_ROWS_MAX) this.commit();
  }

  /** Commits and fsyncs the journal on this thread (images outside the shard's loop, restores, stops). */
  durableSync(): void {
    this.commit();
    if (this.unsynced && fs.existsSync(this.walFile)) {
      const fd = fs.openSync(this.walFile, 'r');
      try {
        fs.fdatasyncSync(fd);
      } finally {
        fs.closeSync(fd);
      }
    }
    this.unsynced = false;
  }

  /** Commits, then fsyncs the journal on the libuv pool; calls back once every row written so far is durable. */
  durable(done: (error: Error | null) => void): void {
    this.commit();
    if (!this.unsynced) {
      done(null);
      return;
    }
    this.unsynced = false;
    this.journal.sync((error) => {
      if (error !== null) this.unsynced = true;
      done(error);
    });
  }

  /** Rows of records from `lsn` on go (a torn log tail, or rows past the log's end after a power loss). */
  cutFrom(lsn: number): void {
    this.commit();
    // The mark as the file holds it: another process (a cluster copy's image run) may have written since this open.
    const lsnMax = Math.min(Number(this.getMeta('lsn') ?? '-1'), lsn - 1);
    this.db.transaction(() => {
      this.index.cutFrom(lsn);
      this.db.prepare("INSERT OR REPLACE INTO list_meta (key, value) VALUES ('lsn', ?)").run(String(lsnMax));
    })();
    this.lsnMax = lsnMax;
    this.unsynced = true;
  }

  close(): void {
    if (this.db.readonly) {
      this.db.close();
      return;
    }
    this.durableSync();
    this.checkpointer?.close();
    this.db.close();
    this.journal.close();
  }
}

/**
 * Copies the list tables of a shard file written before the list file existed, in one transaction of the
 * list file with its `moved` mark, and fsyncs it before the caller drops them from the shard file.
 */
function moveTables(db: Database.Database, shardFile: string, tables: readonly string[]): void {
  db.prepare('ATTACH DATABASE ? AS s').run(shardFile);
  try {
    db.transaction(() => {
      for (const table of tables) {
        const columns = (db.prepare(`SELECT name FROM pragma_table_info('${table}', 's')`).pluck().all() as string[]).join(', ');
        db.exec(`DELETE FROM main.${table}`);
        db.exec(`INSERT INTO main.${table} (${columns}) SELECT ${columns} FROM s.${table}`);
      }
      // The moved rows were written in the log's own file, never ahead of it: the mark that tells rows to
      // cut at open (past the log's end) counts only what this file writes from now on.
      db.prepare("INSERT OR REPLACE INTO list_meta (key, value) VALUES ('lsn', '-1')").run();
      db.prepare("INSERT OR REPLACE INTO list_meta (key, value) VALUES ('moved', '1')").run();
    })();
  } finally {
    db.exec('DETACH DATABASE s');
  }
  const wal = fs.openSync(`${listFileOf(shardFile)}-wal`, 'r');
  try {
    fs.fdatasyncSync(wal);
  } finally {
    fs.closeSync(wal);
  }
}

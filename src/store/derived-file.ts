// A shard's derived rows in a SQLite file of their own (`shard-<n>-lists.db`): the list index, finished
// entities (cold), idempotency records and expiry rows, written through one connection in a transaction that
// stays open across event-loop turns (a chunk a turn, a commit every DERIVED_TX_ROWS_MAX rows). Runs in the
// shard worker (and the CLI). Invariant: an image at LSN L is written only once every row of records up to L
// is committed and fsynced here; rows past the log's end are cut at open; keys expiry freed leave only fsynced.
import fs from 'node:fs';
import type Database from 'better-sqlite3';
import { openDatabase, DERIVED_PAGE_SIZE_BYTES } from './open-database.ts';
import { JournalSync } from './journal-sync.ts';
import { Checkpointer } from './checkpointer.ts';
import { LIST_SQL, ListIndex } from './list-index.ts';
import { COLD_SQL, ColdTable } from './cold-table.ts';
import { IDEM_LOG_SQL, IdemLog } from './idem-log.ts';
import { DUE_SQL, DueLog } from './due-log.ts';
import type { DerivedBatch } from './derived-rows.ts';

/**
 * Rows one transaction of the derived file takes before it commits. Each commit writes every b-tree page its
 * rows dirtied (the customer index's inserts land all over it), so bigger transactions write fewer bytes
 * a row; the open transaction's pages stay in sqlite's cache (DERIVED_CACHE_KIB) until then. 16,000: about
 * half of them list rows (the cold, idempotency and expiry rows go to their b-trees' right edges), so the
 * list b-trees take as many rows a commit as with 8,000 list rows alone; at 8,000 mixed rows a durable POST
 * wrote 3.1–3.7 KB against 2.5–2.8 KB (bench/RESULTS.md).
 */
export const DERIVED_TX_ROWS_MAX = 16_000;
/**
 * Journal bytes past which a commit asks for a checkpoint (with a checkpointer: on its worker thread; sqlite's
 * own automatic checkpoint, on the writer's thread, took ~10 ms of the ~13 ms a commit held the loop).
 */
const DERIVED_CHECKPOINT_BYTES = 4 * 1_024 * 1_024;
/** Journal bytes past which the writer checkpoints on its own thread (the worker fell behind or fails). */
const DERIVED_JOURNAL_BYTES_MAX = 64 * 1_024 * 1_024;
/**
 * Page cache of the derived file's connection: room for an open transaction's dirty pages (8,000 rows dirty
 * ~2 MiB of pages in the bench) and the b-trees' upper levels; one per shard.
 */
export const DERIVED_CACHE_KIB = 8 * 1_024;
/**
 * The tables that move out of a shard file written by an older build, in groups, each with the mark that
 * says its copy is complete, in the order a move copies them (numbers before the rows naming them).
 */
const MOVES = [
  { mark: 'moved', tables: ['list_owners', 'list_customers', 'lists', 'ledger_entries'] },
  { mark: 'moved_rows', tables: ['owner_numbers', 'idem_log', 'due', 'cold'] },
] as const;
/** The tables of the cold, idempotency and expiry rows (a shard file that still holds them is read there). */
export const ROW_TABLES = MOVES[1].tables;
const META_SQL = 'CREATE TABLE IF NOT EXISTS list_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);';
/** Every table of the file (`list_meta` keeps its name from the first layout). */
const DERIVED_SQL = `${LIST_SQL}\n${IDEM_LOG_SQL}\n${DUE_SQL}\n${COLD_SQL}\n${META_SQL}`;

/** The derived file beside a shard file (its name is from when it held the list index only). */
export function derivedFileOf(shardFile: string): string {
  return `${shardFile.replace(/\.db$/, '')}-lists.db`;
}

function hasTable(db: Database.Database, table: string, schema = 'main'): boolean {
  return db.prepare(`SELECT 1 FROM ${schema}.sqlite_master WHERE type = 'table' AND name = ?`).get(table) !== undefined;
}

/** True when a shard file still holds list tables of its own (written before the list file existed). */
export function shardHoldsLists(shardDb: Database.Database): boolean {
  return hasTable(shardDb, 'lists') || hasTable(shardDb, 'ledger_entries');
}

/** True when a shard file still holds cold, idempotency or expiry tables (or the oldest `idem`). */
export function shardHoldsRows(shardDb: Database.Database): boolean {
  return hasTable(shardDb, 'idem') || ROW_TABLES.some((table) => hasTable(shardDb, table));
}

export class DerivedFile {
  readonly db: Database.Database;
  readonly index: ListIndex;
  readonly cold: ColdTable;
  readonly idem: IdemLog;
  readonly due: DueLog;
  private readonly journal: JournalSync;
  private readonly walFile: string;
  private inTx = false;
  private txRows = 0;
  /** Highest LSN of the rows written so far (committed or in the open transaction). */
  private lsnMax: number;
  /** A commit happened since the last fsync of the file's journal. */
  private unsynced = false;
  /** Idempotency keys whose rows the open transaction deleted, then those committed but not yet fsynced. */
  private freedInTx: Array<[number, number]> = [];
  private freedCommitted: Array<[number, number]> = [];
  /** Checkpoints on a worker thread (a server's shard); null: sqlite's automatic checkpoints (the CLI, tests). */
  private checkpointer: Checkpointer | null = null;
  /** Called once a checkpoint ends: the writer may open its next transaction (see `checkpointing`). */
  onCheckpointed: (() => void) | null = null;

  private constructor(private readonly shardFile: string, file: string, db: Database.Database) {
    this.db = db;
    this.walFile = `${file}-wal`;
    this.journal = new JournalSync(this.walFile);
    this.index = new ListIndex(db);
    this.cold = new ColdTable(db);
    this.idem = new IdemLog(db);
    this.due = new DueLog(db);
    this.lsnMax = Number(this.getMeta('lsn') ?? '-1');
  }

  /**
   * Opens (creating it if missing) the derived file of `shardFile` for writing. Tables the shard file still
   * holds (written by an older build, already in today's layout: see shard-schema.ts) move here first, once
   * a group: copied and made durable with the group's mark, then dropped from the shard file (a crash in
   * between finds the mark and only drops).
   */
  static openWritable(shardFile: string, shardDb: Database.Database): DerivedFile {
    const file = derivedFileOf(shardFile);
    const db = openDatabase(file, { deferredSync: true, pageSizeBytes: DERIVED_PAGE_SIZE_BYTES });
    db.pragma(`cache_size = -${DERIVED_CACHE_KIB}`);
    db.exec(DERIVED_SQL);
    for (const { mark, tables } of MOVES) {
      const moving = tables.filter((table) => hasTable(shardDb, table));
      if (moving.length === 0) continue;
      const moved = db.prepare('SELECT value FROM list_meta WHERE key = ?').pluck().get(mark) !== undefined;
      if (!moved) moveTables(db, shardFile, moving, mark);
      shardDb.transaction(() => {
        for (const table of moving) shardDb.exec(`DROP TABLE IF EXISTS ${table}`);
      })();
    }
    ListIndex.migrate(db);
    return new DerivedFile(shardFile, file, db);
  }

  /** The derived file of `shardFile` for reading, if it has one. */
  static openReadonly(shardFile: string): DerivedFile | null {
    const file = derivedFileOf(shardFile);
    if (!fs.existsSync(file)) return null;
    const db = openDatabase(file, { readonly: true });
    // One moment of the file for the whole read, like the shard file's read-only open.
    db.exec('BEGIN');
    db.prepare('SELECT count(*) FROM sqlite_master').get();
    return new DerivedFile(shardFile, file, db);
  }

  /** True when the file holds `table` (a read-only open of a file written before the rows moved may not). */
  has(table: string): boolean {
    return hasTable(this.db, table);
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
    this.checkpointer = new Checkpointer(derivedFileOf(this.shardFile));
  }

  /** A checkpoint runs: rows had better wait in memory (a transaction opened now keeps the journal growing). */
  get checkpointing(): boolean {
    return this.checkpointer?.running === true;
  }

  /** Keys expiry freed that are not yet fsynced here (`durable` hands them over once they are). */
  get freedWaiting(): number {
    return this.freedInTx.length + this.freedCommitted.length;
  }

  /**
   * Writes rows (their pointers into the log already marked) into the open transaction, opening one if
   * none is. Rows are implied by log records, so a transaction lost to a crash loses nothing: recovery
   * derives them again. If a write throws, the transaction rolls back and the cached owner numbers are
   * forgotten (they may name rows that are gone); the caller's shard then stops, as after any failed write.
   */
  apply(batch: DerivedBatch): void {
    const list = batch.list ?? [];
    const entries = batch.entries ?? [];
    const rows = batch.cold.length + batch.idem.length + batch.due.length + list.length + entries.length;
    if (rows === 0) return;
    if (!this.inTx) {
      this.db.exec('BEGIN IMMEDIATE');
      this.inTx = true;
    }
    try {
      this.cold.write(batch.cold);
      this.due.apply(batch.due);
      this.index.apply(list, entries);
      for (const freed of this.idem.apply(batch.idem)) this.freedInTx.push(freed);
    } catch (error) {
      this.rollback();
      throw error;
    }
    this.lsnMax = Math.max(this.lsnMax, lsnMaxOf(batch.cold), lsnMaxOf(batch.idem), lsnMaxOf(batch.due), lsnMaxOf(list), lsnMaxOf(entries));
    this.txRows += rows;
  }

  private rollback(): void {
    if (this.inTx && this.db.inTransaction) this.db.exec('ROLLBACK');
    this.inTx = false;
    this.txRows = 0;
    this.freedInTx = [];
    this.lsnMax = Number(this.getMeta('lsn') ?? '-1');
    this.index.forgetNumbers();
    this.idem.forgetNumbers();
    this.due.forgetNumbers();
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
    for (const freed of this.freedInTx) this.freedCommitted.push(freed);
    this.freedInTx = [];
    this.unsynced = true;
    this.checkpointIfLong();
  }

  /** After a commit: a checkpoint on the worker once the journal passes DERIVED_CHECKPOINT_BYTES. */
  private checkpointIfLong(): void {
    if (this.checkpointer === null || this.checkpointer.running) return;
    const usable = this.checkpointer.usable;
    let bytes = 0;
    try {
      bytes = fs.statSync(this.walFile).size;
    } catch {
      return;
    }
    if (bytes > DERIVED_JOURNAL_BYTES_MAX || (!usable && bytes >= DERIVED_CHECKPOINT_BYTES)) {
      // The worker has not kept the journal short, or is gone: this thread checkpoints, as sqlite would by itself.
      this.db.pragma('wal_checkpoint(PASSIVE)');
      return;
    }
    if (bytes < DERIVED_CHECKPOINT_BYTES) return;
    // A failed checkpoint loses nothing (the journal stays whole); the next commit asks again.
    this.checkpointer.run(() => this.onCheckpointed?.());
  }

  /** Commits if the open transaction has reached DERIVED_TX_ROWS_MAX rows. */
  commitIfFull(): void {
    if (this.txRows >= DERIVED_TX_ROWS_MAX) this.commit();
  }

  /**
   * Commits and fsyncs the journal on this thread (images outside the shard's loop, restores, stops).
   * Keys freed by what it made durable wait for the next `durable`, which hands them over at once.
   */
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

  /**
   * Commits, then fsyncs the journal on the libuv pool; calls back once every row written so far is
   * durable, with the idempotency keys whose deletion that made durable (only now may they be reused).
   */
  durable(done: (error: Error | null, freed: Array<[number, number]>) => void): void {
    this.commit();
    const freed = this.freedCommitted;
    this.freedCommitted = [];
    if (!this.unsynced) {
      done(null, freed);
      return;
    }
    this.unsynced = false;
    this.journal.sync((error) => {
      if (error !== null) {
        this.unsynced = true;
        this.freedCommitted = freed.concat(this.freedCommitted);
      }
      done(error, error === null ? freed : []);
    });
  }

  /** Rows of records from `lsn` on go, in every table (a torn log tail, or rows past the log's end after a power loss). */
  cutFrom(lsn: number): void {
    this.commit();
    // The mark as the file holds it: another process (a cluster copy's image run) may have written since this open.
    const lsnMax = Math.min(Number(this.getMeta('lsn') ?? '-1'), lsn - 1);
    this.db.transaction(() => {
      this.index.cutFrom(lsn);
      this.cold.cutFrom(lsn);
      this.idem.cutFrom(lsn);
      this.due.cutFrom(lsn);
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

function lsnMaxOf(rows: ReadonlyArray<{ lsn: number }>): number {
  let lsn = -1;
  for (const row of rows) if (row.lsn > lsn) lsn = row.lsn;
  return lsn;
}

/**
 * Copies tables of a shard file written before they lived here, in one transaction of this file with the
 * group's mark, and fsyncs it before the caller drops them from the shard file.
 */
function moveTables(db: Database.Database, shardFile: string, tables: readonly string[], mark: string): void {
  db.prepare('ATTACH DATABASE ? AS s').run(shardFile);
  try {
    db.transaction(() => {
      for (const table of tables) {
        const columns = (db.prepare(`SELECT name FROM pragma_table_info('${table}', 's')`).pluck().all() as string[]).join(', ');
        db.exec(`DELETE FROM main.${table}`);
        db.exec(`INSERT INTO main.${table} (${columns}) SELECT ${columns} FROM s.${table}`);
      }
      // The moved rows were written in the log's own file, never ahead of it: the mark that tells rows to
      // cut at open (past the log's end) counts only what this file writes itself.
      db.prepare("INSERT OR IGNORE INTO list_meta (key, value) VALUES ('lsn', '-1')").run();
      db.prepare("INSERT OR REPLACE INTO list_meta (key, value) VALUES (?, '1')").run(mark);
    })();
  } finally {
    db.exec('DETACH DATABASE s');
  }
  const wal = fs.openSync(`${derivedFileOf(shardFile)}-wal`, 'r');
  try {
    fs.fdatasyncSync(wal);
  } finally {
    fs.closeSync(wal);
  }
}

// Opening a SQLite file of kobo's (a shard, control.db, webhooks.db) with the settings every open needs:
// WAL journal, the sync level, a busy timeout and the checkpoint threshold. Any thread that opens one.
// Invariant: an acknowledged commit is durable: FULL sync, or the caller fsyncs the journal itself.
import Database from 'better-sqlite3';

/**
 * Page size of a shard file created from now on. Since the derived rows moved to a file of their own the
 * shard file holds the log (one row a group commit), its images and a few meta rows, and every commit
 * rewrites whole pages into the journal: the log's partly filled leaf each time, page 1 whenever the file
 * grows. With 4 KiB pages that was ~460 B of journal a payment at 64 in flight; 1 KiB pages write ~230 B
 * and cut the process's written bytes a payment from ~1.8 to ~1.45 KB, for ~2% more CPU a durable POST
 * (twice the pwrite calls a commit; bench/RESULTS.md). A file keeps the page size it was created with.
 */
export const SHARD_PAGE_SIZE_BYTES = 1_024;
/**
 * Page size of a derived file created from now on (sqlite's default). Its rows go in as b-tree inserts
 * across 16,000-row transactions: 1 KiB pages would mean four times the pages and page writes for the
 * same rows (measured when these rows were in the shard file: 3–13% more CPU a request).
 */
export const DERIVED_PAGE_SIZE_BYTES = 4_096;
/** Journal bytes after which a commit checkpoints: sqlite's default (1,000 pages) of 4 KiB pages, whatever the page size. */
export const WAL_CHECKPOINT_BYTES = 4 * 1_024 * 1_024;

/**
 * Opens a shard or control database with the durability settings every open must have. `pageSizeBytes`:
 * the page size if this open creates the file (ignored for an existing one).
 */
export function openDatabase(file: string, options: { readonly?: boolean; deferredSync?: boolean; pageSizeBytes?: number } = {}): Database.Database {
  const db = new Database(file, { readonly: options.readonly === true, fileMustExist: options.readonly === true });
  // Takes effect only while the file is empty: before the journal mode, which writes its header.
  if (options.readonly !== true && options.pageSizeBytes !== undefined) db.pragma(`page_size = ${options.pageSizeBytes}`);
  if (options.readonly !== true) db.pragma('journal_mode = WAL');
  // FULL: the sqlite journal is fsynced at every commit, so an acknowledged batch survives power loss.
  // A shard worker instead fsyncs the journal itself, off its thread, before it answers (syncJournal):
  // NORMAL still syncs around every checkpoint, which is when sqlite moves or reuses journal frames.
  db.pragma(options.deferredSync === true ? 'synchronous = NORMAL' : 'synchronous = FULL');
  db.pragma('busy_timeout = 5000');
  if (options.readonly !== true) db.pragma(`wal_autocheckpoint = ${Math.ceil(WAL_CHECKPOINT_BYTES / (db.pragma('page_size', { simple: true }) as number))}`);
  return db;
}

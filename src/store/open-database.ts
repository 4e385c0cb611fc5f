// Opening a SQLite file of kobo's (a shard, control.db, webhooks.db) with the settings every open needs:
// WAL journal, the sync level, a busy timeout and the checkpoint threshold. Any thread that opens one.
// Invariant: an acknowledged commit is durable: FULL sync, or the caller fsyncs the journal itself.
import Database from 'better-sqlite3';

/**
 * Page size of a shard file created from now on (sqlite's default). Every commit rewrites whole pages into
 * the journal (the group commit's log page, page 1 whenever the file grows, the right edge of each b-tree a
 * derived write touches), so written bytes scale with the page: 1 KiB pages wrote ~35% fewer bytes a
 * payment in the disk bench, but the durable POST's A/B measured 3–13% more CPU a request (four times the
 * pwrite calls and b-tree pages for the same rows), so they are not the default (bench/RESULTS.md, "Disk per
 * payment"). A file keeps the page size it was created with.
 */
export const SHARD_PAGE_SIZE_BYTES = 4_096;
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

// A shard file's tables at a writable open: created when missing, and files written by earlier builds
// moved to today's layouts, each move in its own transaction. Runs in whichever thread opens the file
// for writing (a shard, recovery tools, restore). Invariant: a move keeps every row's checksum valid.
import type Database from 'better-sqlite3';
import { IDEM_LOG_SQL, IdemLog, type IdemRowOut } from './idem-log.ts';
import { DUE_SQL, DueLog } from './due-log.ts';
import { COLD_SQL, ColdTable } from './cold-table.ts';
import { SNAPSHOTS_SQL } from './snapshot-table.ts';
import { LIST_SQL, ListIndex } from './list-index.ts';
import { shardHoldsRows } from './derived-file.ts';

export function prepareShardSchema(db: Database.Database): void {
  // The list index, and the cold, idempotency and expiry rows, live in the derived file (derived-file.ts):
  // a shard file written before that keeps those tables only until they move, in today's layout (they are
  // moved to it here first); a newer one has none, and none is created.
  const legacyLists = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name IN ('lists', 'ledger_entries')").get() !== undefined;
  const legacyRows = shardHoldsRows(db);
  if (legacyLists) ListIndex.relayout(db);
  db.exec(`
    CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    ${SNAPSHOTS_SQL}
    ${legacyLists ? LIST_SQL : 'DROP TABLE IF EXISTS list_rows;'}
  `);
  if (legacyRows) {
    // An older idempotency table gets its checksums in its own layout first, then moves to owner numbers.
    IdemLog.addChecksums(db);
    IdemLog.relayout(db);
    db.exec(`${IDEM_LOG_SQL}\n${DUE_SQL}`);
    migrateIdem(db, new IdemLog(db));
    DueLog.migrate(db);
    ColdTable.migrate(db);
    db.exec(COLD_SQL);
  }
  if (legacyLists) ListIndex.migrate(db);
}

/** Files written before `idem_log` kept records in a table keyed by scope: moved over once, at open. */
function migrateIdem(db: Database.Database, idem: IdemLog): void {
  if (db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'idem'").get() === undefined) return;
  db.transaction(() => {
    idem.putRows(db.prepare('SELECT scope, partition, fingerprint, status, json, error, at_ms, lsn FROM idem ORDER BY lsn').all() as IdemRowOut[]);
    db.exec('DROP TABLE idem');
  })();
}

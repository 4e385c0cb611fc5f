// Moves a table written with an older layout to the current one, once, when a shard file is opened.
// Store layer, on the thread that opens the file.
// Invariant: one sqlite transaction: a kill -9 leaves the old table whole or the new one complete.
import type Database from 'better-sqlite3';

export interface Relayout {
  table: string;
  /** True when the table's CREATE statement is the old layout. */
  isOld: (createSql: string) => boolean;
  /** Creates the table (and its indexes) in the current layout. */
  createSql: string;
  columns: string;
}

export function relayoutTable(db: Database.Database, layout: Relayout): void {
  const sql = db.prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?").pluck().get(layout.table) as string | undefined;
  if (sql === undefined || !layout.isOld(sql)) return;
  const old = `${layout.table}_old_layout`;
  db.transaction(() => {
    db.exec(`ALTER TABLE ${layout.table} RENAME TO ${old}`);
    db.exec(layout.createSql);
    db.exec(`INSERT INTO ${layout.table} (${layout.columns}) SELECT ${layout.columns} FROM ${old}`);
    db.exec(`DROP TABLE ${old}`);
  })();
}

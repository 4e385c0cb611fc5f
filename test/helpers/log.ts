// Reading and damaging a shard file's log in tests: its records through the store (v2 rows are
// compressed batches, so SQL cannot see inside them), and the raw row holding a record.
import Database from 'better-sqlite3';
import { ShardStore, type WalRow } from '../../src/store/shard-store.ts';

/** Every record of the shard file's log, in LSN order (read-only; a server may be running). */
export function logRecords(file: string): WalRow[] {
  const store = new ShardStore(file, { readonly: true });
  try {
    return [...store.walAfter(0)];
  } finally {
    store.close();
  }
}

/** The log segment table and row (`lsn_first`) holding record `lsn`. */
export function rowOf(db: Database.Database, lsn: number): { table: string; lsnFirst: number; n: number } {
  const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'log\\_%' ESCAPE '\\'").pluck().all() as string[];
  for (const table of tables) {
    const row = db.prepare(`SELECT lsn_first AS lsnFirst, n FROM ${table} WHERE lsn_first <= ? ORDER BY lsn_first DESC LIMIT 1`).get(lsn) as { lsnFirst: number; n: number } | undefined;
    if (row !== undefined && lsn < row.lsnFirst + row.n) return { table, ...row };
  }
  throw new Error(`no log row holds LSN ${lsn}`);
}

/** Changes one byte of the row holding `lsn` (its checksum no longer matches). */
export function damageRowOf(file: string, lsn: number): { lsnFirst: number; n: number } {
  const db = new Database(file);
  try {
    const { table, lsnFirst, n } = rowOf(db, lsn);
    const body = db.prepare(`SELECT body FROM ${table} WHERE lsn_first = ?`).pluck().get(lsnFirst) as Buffer;
    const damaged = Buffer.from(body);
    damaged[damaged.length - 1] = damaged[damaged.length - 1]! ^ 0xff;
    db.prepare(`UPDATE ${table} SET body = ? WHERE lsn_first = ?`).run(damaged, lsnFirst);
    return { lsnFirst, n };
  } finally {
    db.close();
  }
}

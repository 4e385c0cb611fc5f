// What a backup keeps of each shard's list index that no image holds: every event (body resolved, since
// a backup restores without the log) and every wallet ledger entry, each with a checksum; and how
// restore checks them and writes them back through the restored file's own owner numbers. Runs in the
// CLI (`kobo snapshot`, `kobo restore`). Invariant: a restored shard lists the events and statement
// lines its source shard held at the backup's LSN, byte for byte, or the restore is refused.
import assert from 'node:assert/strict';
import { crc32 } from 'node:zlib';
import type Database from 'better-sqlite3';
import type { DerivedBatch } from '../store/derived-rows.ts';
import { EVENT_IN_LOG_BODY, type EntryChange, type ListChange } from '../store/list-index.ts';
import type { ShardStore } from '../store/shard-store.ts';
import type { EntryRowFields } from '../store/row-checks.ts';

/**
 * Rows keyed by shard: the owner numbers of a shard file mean nothing in another file, so the owner is
 * kept by name, and a restore keeps the backup's shard count (layout.json), so the shard decides the file.
 */
export const LIST_BACKUP_SQL = `
  CREATE TABLE IF NOT EXISTS list_events (shard INTEGER NOT NULL, owner TEXT NOT NULL, id TEXT NOT NULL, customer_id TEXT,
    type TEXT, body TEXT NOT NULL, lsn INTEGER NOT NULL, crc INTEGER NOT NULL, PRIMARY KEY (shard, owner, id)) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS ledger_entries (shard INTEGER NOT NULL, wallet_id TEXT NOT NULL, seq INTEGER NOT NULL,
    txn_id TEXT NOT NULL, amount_minor INTEGER NOT NULL, balance_after_minor INTEGER NOT NULL, at_ms INTEGER NOT NULL,
    lsn INTEGER NOT NULL, crc INTEGER NOT NULL, PRIMARY KEY (shard, wallet_id, seq)) WITHOUT ROWID;`;

/** Rows a restore writes per sqlite transaction into a restored shard file. */
const RESTORE_BATCH_ROWS_MAX = 5_000;

export interface EventBackupRow {
  shard: number;
  owner: string;
  id: string;
  customer_id: string | null;
  type: string | null;
  body: string;
  lsn: number;
}

/** A ledger entry as the backup keeps it: the shard file's columns, and the shard it came from. */
export interface EntryBackupRow extends EntryRowFields {
  shard: number;
}

/** Every column: a changed shard, owner or customer would list the event to someone else. */
export function eventRowChecksum(row: EventBackupRow): number {
  const head = JSON.stringify([row.shard, row.lsn, row.owner, row.id, row.customer_id, row.type, row.body.length]);
  return crc32(row.body, crc32(`${head}\n`));
}

export function entryRowChecksum(row: EntryBackupRow): number {
  return crc32(JSON.stringify([row.shard, row.wallet_id, row.seq, row.txn_id, row.amount_minor, row.balance_after_minor, row.at_ms, row.lsn]));
}

/**
 * Copies a shard's event rows and ledger entries up to `lsn` into the backup: the rows its file holds
 * (read in the store's own transaction: at the cut when online), then those the backup's read-only
 * replay derived and still holds (replacing the same keys). An event row stored empty takes its body
 * from its log record now. Returns the rows copied.
 */
export function copyListRows(backup: Database.Database, store: ShardStore, shard: number, lsn: number, held: DerivedBatch): { events: number; entries: number } {
  const putEvent = backup.prepare('INSERT OR REPLACE INTO list_events (shard, owner, id, customer_id, type, body, lsn, crc) VALUES (?, ?, ?, ?, ?, ?, ?, ?)');
  const putEntry = backup.prepare('INSERT OR REPLACE INTO ledger_entries (shard, wallet_id, seq, txn_id, amount_minor, balance_after_minor, at_ms, lsn, crc) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)');
  const addEvent = (row: Pick<ListChange, 'owner' | 'id' | 'customerId' | 'status' | 'body' | 'lsn' | 'inLog'>): void => {
    const stored = row.inLog === true || row.body === null || row.body === EVENT_IN_LOG_BODY;
    const out: EventBackupRow = { shard, owner: row.owner, id: row.id, customer_id: row.customerId, type: row.status, body: stored ? store.eventInLog(row.id, row.lsn) : row.body!, lsn: row.lsn };
    putEvent.run(out.shard, out.owner, out.id, out.customer_id, out.type, out.body, out.lsn, eventRowChecksum(out));
  };
  const addEntry = (entry: EntryChange): void => {
    const out: EntryBackupRow = { shard, wallet_id: entry.walletId, seq: entry.seq, txn_id: entry.txnId, amount_minor: entry.amountMinor, balance_after_minor: entry.balanceAfterMinor, at_ms: entry.atMs, lsn: entry.lsn };
    putEntry.run(out.shard, out.wallet_id, out.seq, out.txn_id, out.amount_minor, out.balance_after_minor, out.at_ms, out.lsn, entryRowChecksum(out));
  };
  backup.transaction(() => {
    // A file from before lists opened read-only has neither table (nothing created them): only held rows.
    for (const row of store.lists?.eventRows(lsn) ?? []) addEvent(row);
    for (const entry of store.lists?.entryRows(lsn) ?? []) addEntry(entry);
    for (const row of held.list ?? []) {
      assert(row.lsn <= lsn, `backup: a held list row of LSN ${row.lsn} is past the shard's LSN ${lsn}`);
      if (row.kind === 'event') addEvent(row);
    }
    for (const entry of held.entries ?? []) addEntry(entry);
  })();
  // Counted in the backup: a row both in the file and held is one row.
  const count = (table: string): number => backup.prepare(`SELECT count(*) FROM ${table} WHERE shard = ?`).pluck().get(shard) as number;
  return { events: count('list_events'), entries: count('ledger_entries') };
}

function tableExists(db: Database.Database, table: string): boolean {
  return db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(table) !== undefined;
}

/** Event and ledger entry rows of a backup that fail their checksum, each named for an operator. */
export function* damagedListRows(backup: Database.Database): IterableIterator<string> {
  if (tableExists(backup, 'list_events')) {
    const rows = backup.prepare('SELECT shard, owner, id, customer_id, type, body, lsn, crc FROM list_events').iterate() as IterableIterator<EventBackupRow & { crc: number }>;
    for (const row of rows) if (eventRowChecksum(row) !== row.crc) yield `event ${row.id} (LSN ${row.lsn}, shard ${row.shard})`;
  }
  if (tableExists(backup, 'ledger_entries')) {
    const rows = backup.prepare('SELECT shard, wallet_id, seq, txn_id, amount_minor, balance_after_minor, at_ms, lsn, crc FROM ledger_entries').iterate() as IterableIterator<EntryBackupRow & { crc: number }>;
    for (const row of rows) if (entryRowChecksum(row) !== row.crc) yield `ledger entry le_${row.seq} of wallet ${row.wallet_id} (LSN ${row.lsn}, shard ${row.shard})`;
  }
}

/**
 * Writes a shard's events and ledger entries from the backup (checked already) into its restored file,
 * through the file's list index (which numbers owners itself). Event bodies are stored whole: the
 * restored file has no log record to point into. A backup from before these tables writes none.
 */
export function restoreListRows(store: ShardStore, backup: Database.Database, shard: number): { events: number; entries: number } {
  const lists = store.lists;
  assert(lists !== null, 'restore: a restored shard file has no list index');
  let events = 0;
  let entries = 0;
  let rows: ListChange[] = [];
  let lines: EntryChange[] = [];
  const flush = (): void => {
    store.writeListsNow(rows, lines);
    events += rows.length;
    entries += lines.length;
    rows = [];
    lines = [];
  };
  if (tableExists(backup, 'list_events')) {
    for (const r of backup.prepare('SELECT owner, id, customer_id, type, body, lsn FROM list_events WHERE shard = ? ORDER BY owner, id').iterate(shard) as IterableIterator<EventBackupRow>) {
      rows.push({ kind: 'event', owner: r.owner, id: r.id, customerId: r.customer_id, status: r.type, body: r.body, lsn: r.lsn });
      if (rows.length >= RESTORE_BATCH_ROWS_MAX) flush();
    }
  }
  if (tableExists(backup, 'ledger_entries')) {
    const sql = 'SELECT wallet_id AS walletId, seq, txn_id AS txnId, amount_minor AS amountMinor, balance_after_minor AS balanceAfterMinor, at_ms AS atMs, lsn FROM ledger_entries WHERE shard = ? ORDER BY wallet_id, seq';
    for (const e of backup.prepare(sql).iterate(shard) as IterableIterator<EntryChange>) {
      lines.push(e);
      if (lines.length >= RESTORE_BATCH_ROWS_MAX) flush();
    }
  }
  flush();
  return { events, entries };
}

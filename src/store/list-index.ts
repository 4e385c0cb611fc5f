// The list index of a shard file: one row per listable resource (customers, transactions, payments,
// transfers, service orders, beneficiaries, events) and one per wallet ledger entry, both derived rows
// written after the fsync. Runs in the shard worker (and CLI) that owns the file.
// Invariant: a page is read by one index range scan of at most `limit + extra` rows, whatever the row
// count; rows here are implied by durable log records (recovery derives them again).
import type Database from 'better-sqlite3';
import { Statements } from './statements.ts';

export const LIST_SQL = `
  CREATE TABLE IF NOT EXISTS list_rows (
    owner TEXT NOT NULL, kind TEXT NOT NULL, id TEXT NOT NULL, customer_id TEXT, status TEXT, body TEXT,
    lsn INTEGER NOT NULL, PRIMARY KEY (owner, kind, id)) WITHOUT ROWID;
  CREATE INDEX IF NOT EXISTS list_rows_customer ON list_rows (owner, kind, customer_id, id);
  CREATE INDEX IF NOT EXISTS list_rows_status ON list_rows (owner, kind, status, id);
  CREATE INDEX IF NOT EXISTS list_rows_customer_status ON list_rows (owner, kind, customer_id, status, id);
  CREATE TABLE IF NOT EXISTS ledger_entries (
    wallet_id TEXT NOT NULL, seq INTEGER NOT NULL, txn_id TEXT NOT NULL, amount_minor INTEGER NOT NULL,
    balance_after_minor INTEGER NOT NULL, at_ms INTEGER NOT NULL, lsn INTEGER NOT NULL,
    PRIMARY KEY (wallet_id, seq)) WITHOUT ROWID;`;

export type ListKind = 'customer' | 'transaction' | 'payment' | 'transfer' | 'order' | 'beneficiary' | 'event';

/** A listable resource as the index keeps it (`status` holds an event's type; `body` an event's payload). */
export interface ListRow {
  kind: ListKind;
  id: string;
  owner: string;
  customerId: string | null;
  status: string | null;
  body: string | null;
}

/** A row as one log record (its LSN) set it. */
export interface ListChange extends ListRow {
  lsn: number;
}

/** A posting that moved a wallet's balance, with the balance it left. */
export interface EntryRow {
  walletId: string;
  txnId: string;
  amountMinor: number;
  balanceAfterMinor: number;
  atMs: number;
}

/** `seq`: the entry's place in its wallet's history (LSN × ENTRIES_PER_RECORD_MAX + its rank in the record). */
export interface EntryChange extends EntryRow {
  lsn: number;
  seq: number;
}

/** Ledger entries one log record may give one shard (a record touches a few wallets). */
export const ENTRIES_PER_RECORD_MAX = 4096;

/** What one shard is asked for: rows of one owner and kind, in id order, bounded on both sides. */
export interface ListQuery {
  owner: string;
  kind: ListKind;
  customerId: string | null;
  status: string | null;
  /** Ids strictly above this one ('' : no bound). */
  idAbove: string;
  /** Ids strictly below this one ('~': no bound). */
  idBelow: string;
  /** 'desc': newest first (a first page, starting_after); 'asc': the rows just above a cursor (ending_before). */
  order: 'desc' | 'asc';
  /** Rows to return at most (a page's limit + 1, so the caller sees whether more follow). */
  rows: number;
}

export interface EntryQuery {
  walletId: string;
  seqAbove: number;
  seqBelow: number;
  order: 'desc' | 'asc';
  rows: number;
}

interface ListRowOut {
  id: string;
  customer_id: string | null;
  status: string | null;
  body: string | null;
}

export class ListIndex {
  private readonly statements: Statements;

  constructor(db: Database.Database) {
    this.statements = new Statements(db);
  }

  apply(list: readonly ListChange[], entries: readonly EntryChange[]): void {
    if (list.length > 0) {
      const put = this.statements.get('INSERT OR REPLACE INTO list_rows (owner, kind, id, customer_id, status, body, lsn) VALUES (?, ?, ?, ?, ?, ?, ?)');
      for (const r of list) put.run(r.owner, r.kind, r.id, r.customerId, r.status, r.body, r.lsn);
    }
    if (entries.length > 0) {
      const put = this.statements.get('INSERT OR REPLACE INTO ledger_entries (wallet_id, seq, txn_id, amount_minor, balance_after_minor, at_ms, lsn) VALUES (?, ?, ?, ?, ?, ?, ?)');
      for (const e of entries) put.run(e.walletId, e.seq, e.txnId, e.amountMinor, e.balanceAfterMinor, e.atMs, e.lsn);
    }
  }

  /** One index range: equality on owner, kind and the filters given, then a bounded walk along id. */
  page(q: ListQuery): ListRow[] {
    const where = ['owner = ?', 'kind = ?'];
    const args: Array<string | number> = [q.owner, q.kind];
    if (q.customerId !== null) (where.push('customer_id = ?'), args.push(q.customerId));
    if (q.status !== null) (where.push('status = ?'), args.push(q.status));
    where.push('id > ?', 'id < ?');
    args.push(q.idAbove, q.idBelow, q.rows);
    // Named, not left to the planner: without statistics it walks the primary key and filters (the
    // index is not covering once the body is read), which is a scan of every row of the owner and kind.
    const index = q.customerId !== null ? (q.status !== null ? 'list_rows_customer_status' : 'list_rows_customer') : q.status !== null ? 'list_rows_status' : null;
    const sql = `SELECT id, customer_id, status, body FROM list_rows${index === null ? '' : ` INDEXED BY ${index}`} WHERE ${where.join(' AND ')} ORDER BY id ${q.order === 'desc' ? 'DESC' : 'ASC'} LIMIT ?`;
    const rows = this.statements.get(sql).all(...args) as ListRowOut[];
    return rows.map((r) => ({ kind: q.kind, id: r.id, owner: q.owner, customerId: r.customer_id, status: r.status, body: r.body }));
  }

  /** One row by its key (an event by id). */
  row(owner: string, kind: ListKind, id: string): ListRow | undefined {
    const r = this.statements.get('SELECT id, customer_id, status, body FROM list_rows WHERE owner = ? AND kind = ? AND id = ?').get(owner, kind, id) as ListRowOut | undefined;
    return r === undefined ? undefined : { kind, id: r.id, owner, customerId: r.customer_id, status: r.status, body: r.body };
  }

  entries(q: EntryQuery): EntryChange[] {
    const sql = `SELECT wallet_id AS walletId, seq, txn_id AS txnId, amount_minor AS amountMinor, balance_after_minor AS balanceAfterMinor, at_ms AS atMs, lsn
      FROM ledger_entries WHERE wallet_id = ? AND seq > ? AND seq < ? ORDER BY seq ${q.order === 'desc' ? 'DESC' : 'ASC'} LIMIT ?`;
    return this.statements.get(sql).all(q.walletId, q.seqAbove, q.seqBelow, q.rows) as EntryChange[];
  }

  /** Rows of records a torn tail lost (rare: a scan, like the other derived tables' cut). */
  cutFrom(lsn: number): void {
    this.statements.get('DELETE FROM list_rows WHERE lsn >= ?').run(lsn);
    this.statements.get('DELETE FROM ledger_entries WHERE lsn >= ?').run(lsn);
  }
}

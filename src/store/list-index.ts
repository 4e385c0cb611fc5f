// The list index of a shard file: one row per listable resource (customers, transactions, payments,
// transfers, service orders, beneficiaries, events) and one per wallet ledger entry, both derived rows
// written after the fsync. Runs in the shard worker (and CLI) that owns the file.
// Invariant: a page is read by one index range scan of at most `limit + extra` rows, whatever the row
// count; rows here are implied by durable log records (recovery derives them again).
import assert from 'node:assert/strict';
import type Database from 'better-sqlite3';
import { Statements } from './statements.ts';
import { addChecksums, DamagedRowError, ENTRY_CHECKED_COLUMNS, entryRowChecksum, hasChecksumColumn, LIST_CHECKED_COLUMNS, listRowChecksum, TEXT_CUSTOMER_LIST_COLUMNS, textCustomerListRowChecksum, type EntryRowFields, type ListRowFields, type TextCustomerListRow } from './row-checks.ts';
import { LIST_CUSTOMERS_SQL, ListCustomers } from './list-customers.ts';

/** A `ledger_entries` row as read back (no `crc` from a file written before entries had one). */
type StoredEntry = EntryRowFields & { crc?: number | null };

// Compact on purpose: every row is written once per listable resource (two for a payment: the payment
// and its transaction) and sits in three b-trees, so each byte of its key is paid three times on disk and
// twice again in what the write and its checkpoint put through. The owner is a number from
// `list_owners` and the kind a small integer (830 B a payment with text keys), and the customer a number
// from `list_customers` (its id was 26 bytes in the row and again in the (customer, status) index: ~100 B
// a bank-transfer payment, see list-customers.ts). Every index ends with the
// ULID id, so a page naming a status (or none) is one range walk. A page naming a customer but no status
// walks the (customer, status) index once per status that customer has (see `customerPage`): an index of
// its own on (customer, id) cost ~134 B a payment on disk and a fourth b-tree write, for pages that
// read at most (statuses + 1) × limit rows without it.
export const LIST_SQL = `
  DROP TABLE IF EXISTS list_rows;
  CREATE TABLE IF NOT EXISTS list_owners (n INTEGER PRIMARY KEY, owner TEXT NOT NULL UNIQUE);${LIST_CUSTOMERS_SQL}
  CREATE TABLE IF NOT EXISTS lists (
    o INTEGER NOT NULL, k INTEGER NOT NULL, id TEXT NOT NULL, c INTEGER, status TEXT, body TEXT,
    lsn INTEGER NOT NULL, crc INTEGER, PRIMARY KEY (o, k, id)) WITHOUT ROWID;
  DROP INDEX IF EXISTS lists_customer;
  CREATE INDEX IF NOT EXISTS lists_status ON lists (o, k, status, id);
  CREATE INDEX IF NOT EXISTS lists_customer_status ON lists (o, k, c, status, id);
  CREATE TABLE IF NOT EXISTS ledger_entries (
    wallet_id TEXT NOT NULL, seq INTEGER NOT NULL, txn_id TEXT NOT NULL, amount_minor INTEGER NOT NULL,
    balance_after_minor INTEGER NOT NULL, at_ms INTEGER NOT NULL, lsn INTEGER NOT NULL, crc INTEGER,
    PRIMARY KEY (wallet_id, seq)) WITHOUT ROWID;`;

export type ListKind = 'customer' | 'transaction' | 'payment' | 'transfer' | 'order' | 'beneficiary' | 'event';

/** The stored code of each kind (the `k` column): fixed, as rows written with them stay. */
const KIND_CODE: Readonly<Record<ListKind, number>> = { customer: 1, transaction: 2, payment: 3, transfer: 4, order: 5, beneficiary: 6, event: 7 };
/** Distinct owners remembered with their numbers (one per account and environment: few). */
const OWNERS_CACHED_MAX = 100_000;
/**
 * Distinct statuses one customer's rows of one kind may have (a service order has 12 states; an event's
 * type sits in `status`, ~20 of them): a customer page walks one index range per status, so this bounds it.
 */
export const CUSTOMER_STATUSES_MAX = 64;

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
  /** An event whose body the record at `lsn` holds (its `outbox.added`): stored empty, read from the record. */
  inLog?: true;
}

/** The body of an event row that points into the log record at its LSN. */
export const EVENT_IN_LOG_BODY = '';

/** A row as read from the index: `lsn` lets the caller resolve a body that points into the log. */
export interface IndexedRow extends ListRow {
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

/**
 * A `lists` row as read back: `c` in a numbered file, `customer_id` in one of the layout before customer
 * numbers (read-only opens only: a writable open moves it); no `crc` from a file written before checksums.
 */
type ListRowOut = Omit<ListRowFields, 'c'> & { c?: number | null; customer_id?: string | null; crc?: number | null };

export class ListIndex {
  private readonly statements: Statements;
  private readonly owners = new Map<string, number>();

  /**
   * Entries carry a checksum (entryRowChecksum), checked at every read; false only for a read-only open
   * of a file written before they had one (a writable open gives old rows theirs: ListIndex.migrate).
   */
  private readonly entriesChecked: boolean;
  /** The same for list rows (listRowChecksum); the columns every read selects. */
  private readonly rowsChecked: boolean;
  private readonly rowColumns: string;
  /** Customers by number (false: a read-only open of a file whose rows name them by id). */
  private readonly numbered: boolean;
  private readonly customers: ListCustomers;

  constructor(db: Database.Database) {
    this.statements = new Statements(db);
    this.customers = new ListCustomers(db);
    this.entriesChecked = hasChecksumColumn(db, 'ledger_entries');
    this.rowsChecked = hasChecksumColumn(db, 'lists');
    this.numbered = ListCustomers.numbered(db);
    this.rowColumns = `${(this.numbered ? LIST_CHECKED_COLUMNS : TEXT_CUSTOMER_LIST_COLUMNS).join(', ')}${this.rowsChecked ? ', crc' : ''}`;
  }

  /**
   * A `lists` table that names customers by id moves to numbers (with checksums, also for rows written
   * before they had one), once, at a writable open, before LIST_SQL makes the indexes on the new columns.
   */
  static relayout(db: Database.Database): void {
    ListCustomers.relayout(db, LIST_SQL, listRowChecksum);
  }

  /** Entries written before checksums get theirs once, at a writable open. */
  static migrate(db: Database.Database): void {
    addChecksums(db, 'ledger_entries', ENTRY_CHECKED_COLUMNS, entryRowChecksum);
  }

  /** What a row stores for its customer: its number (made on first use when `create`), or the id itself in a file of the old layout. */
  private customerKey(customerId: string, create: boolean): number | string | undefined {
    return this.numbered ? this.customers.numberOf(customerId, create) : customerId;
  }

  /**
   * Forgets the cached owner and customer numbers: numbers made inside a write transaction that was rolled
   * back (disk full, I/O error) are not in the file, and a later write must not name them.
   */
  forgetNumbers(): void {
    this.owners.clear();
    this.customers.forget();
  }

  /** The owner's number, made on first use when `create` (inside the caller's write transaction). */
  private ownerNumber(owner: string, create: boolean): number | undefined {
    const cached = this.owners.get(owner);
    if (cached !== undefined) return cached;
    let n = this.statements.get('SELECT n FROM list_owners WHERE owner = ?').pluck().get(owner) as number | undefined;
    if (n === undefined && create) n = Number(this.statements.get('INSERT INTO list_owners (owner) VALUES (?)').run(owner).lastInsertRowid);
    if (n !== undefined) {
      if (this.owners.size >= OWNERS_CACHED_MAX) this.owners.clear();
      this.owners.set(owner, n);
    }
    return n;
  }

  apply(list: readonly ListChange[], entries: readonly EntryChange[]): void {
    if (list.length > 0) {
      assert(this.numbered, 'list index: rows written into a file whose list rows were not moved to customer numbers');
      const put = this.statements.get('INSERT OR REPLACE INTO lists (o, k, id, c, status, body, lsn, crc) VALUES (?, ?, ?, ?, ?, ?, ?, ?)');
      for (const r of list) {
        const c = r.customerId === null ? null : this.customers.numberOf(r.customerId, true)!;
        const row: ListRowFields = { o: this.ownerNumber(r.owner, true)!, k: KIND_CODE[r.kind], id: r.id, c, status: r.status, body: r.inLog === true ? EVENT_IN_LOG_BODY : r.body, lsn: r.lsn };
        put.run(row.o, row.k, row.id, row.c, row.status, row.body, row.lsn, listRowChecksum(row));
      }
    }
    if (entries.length > 0) {
      const put = this.statements.get('INSERT OR REPLACE INTO ledger_entries (wallet_id, seq, txn_id, amount_minor, balance_after_minor, at_ms, lsn, crc) VALUES (?, ?, ?, ?, ?, ?, ?, ?)');
      for (const e of entries) {
        const crc = entryRowChecksum({ wallet_id: e.walletId, seq: e.seq, txn_id: e.txnId, amount_minor: e.amountMinor, balance_after_minor: e.balanceAfterMinor, at_ms: e.atMs, lsn: e.lsn });
        put.run(e.walletId, e.seq, e.txnId, e.amountMinor, e.balanceAfterMinor, e.atMs, e.lsn, crc);
      }
    }
  }

  /** One index range: equality on owner, kind and the filters given, then a bounded walk along id. */
  page(q: ListQuery): IndexedRow[] {
    const o = this.ownerNumber(q.owner, false);
    if (o === undefined) return [];
    const customer = q.customerId === null ? null : this.customerKey(q.customerId, false);
    // A customer the index has never numbered has no rows.
    if (customer === undefined) return [];
    if (customer !== null && q.status === null) return this.customerPage(o, q, customer);
    const where = ['o = ?', 'k = ?'];
    const args: Array<string | number> = [o, KIND_CODE[q.kind]];
    if (customer !== null) (where.push(`${this.customerColumn} = ?`), args.push(customer));
    if (q.status !== null) (where.push('status = ?'), args.push(q.status));
    where.push('id > ?', 'id < ?');
    args.push(q.idAbove, q.idBelow, q.rows);
    // Named, not left to the planner: without statistics it walks the primary key and filters (the
    // index is not covering once the body is read), which is a scan of every row of the owner and kind.
    const index = q.customerId !== null ? 'lists_customer_status' : q.status !== null ? 'lists_status' : null;
    const sql = `SELECT ${this.rowColumns} FROM lists${index === null ? '' : ` INDEXED BY ${index}`} WHERE ${where.join(' AND ')} ORDER BY id ${q.order === 'desc' ? 'DESC' : 'ASC'} LIMIT ?`;
    return this.rowsOf(q, this.statements.get(sql).all(...args) as ListRowOut[]);
  }

  /**
   * A customer's page with no status named: the (customer, status) index holds that customer's rows
   * grouped by status, each group in id order. Its distinct statuses are found by seeks (one per status,
   * no walk of the rows), each group gives at most `rows` rows of the window, and the merge keeps the
   * `rows` nearest the cursor: at most (statuses + 1) × rows rows read, whatever the customer's history.
   */
  private customerPage(o: number, q: ListQuery, customerId: number | string): IndexedRow[] {
    const k = KIND_CODE[q.kind];
    const dir = q.order === 'desc' ? 'DESC' : 'ASC';
    const c = this.customerColumn;
    const nextStatus = this.statements.get(`SELECT status FROM lists INDEXED BY lists_customer_status WHERE o = ? AND k = ? AND ${c} = ? AND status > ? ORDER BY status LIMIT 1`).pluck();
    const ofNull = this.statements.get(`SELECT ${this.rowColumns} FROM lists INDEXED BY lists_customer_status WHERE o = ? AND k = ? AND ${c} = ? AND status IS NULL AND id > ? AND id < ? ORDER BY id ${dir} LIMIT ?`);
    const ofStatus = this.statements.get(`SELECT ${this.rowColumns} FROM lists INDEXED BY lists_customer_status WHERE o = ? AND k = ? AND ${c} = ? AND status = ? AND id > ? AND id < ? ORDER BY id ${dir} LIMIT ?`);
    const rows = ofNull.all(o, k, customerId, q.idAbove, q.idBelow, q.rows) as ListRowOut[];
    let statuses = 0;
    for (let status = nextStatus.get(o, k, customerId, '') as string | undefined; status !== undefined; status = nextStatus.get(o, k, customerId, status) as string | undefined) {
      statuses += 1;
      assert(statuses <= CUSTOMER_STATUSES_MAX, `list index: a customer's ${q.kind} rows have more than ${CUSTOMER_STATUSES_MAX} statuses`);
      rows.push(...(ofStatus.all(o, k, customerId, status, q.idAbove, q.idBelow, q.rows) as ListRowOut[]));
    }
    // The empty string sorts below every status; a row whose status is '' is one group more.
    rows.push(...(ofStatus.all(o, k, customerId, '', q.idAbove, q.idBelow, q.rows) as ListRowOut[]));
    rows.sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0) * (q.order === 'desc' ? 1 : -1));
    return this.rowsOf(q, rows.slice(0, q.rows));
  }

  private rowsOf(q: ListQuery, rows: readonly ListRowOut[]): IndexedRow[] {
    return rows.map((r) => this.checkedRow(q.kind, q.owner, r));
  }

  private get customerColumn(): string {
    return this.numbered ? 'c' : 'customer_id';
  }

  /** A stored row, its checksum checked: a damaged one is never listed (DamagedRowError), nor one whose customer number is. */
  private checkedRow(kind: ListKind, owner: string, r: ListRowOut): IndexedRow {
    const sum = this.numbered ? listRowChecksum(Object.assign({ c: null }, r)) : textCustomerListRowChecksum(Object.assign({ customer_id: null }, r) as TextCustomerListRow);
    if (this.rowsChecked && sum !== r.crc) throw new DamagedRowError('lists', `${kind} ${r.id} (LSN ${r.lsn})`);
    const customerId = this.numbered ? (r.c === null || r.c === undefined ? null : this.customers.idOf(r.c)) : (r.customer_id ?? null);
    return { kind, id: r.id, owner, customerId, status: r.status, body: r.body, lsn: r.lsn };
  }

  /** One row by its key (an event by id). */
  row(owner: string, kind: ListKind, id: string): IndexedRow | undefined {
    const o = this.ownerNumber(owner, false);
    if (o === undefined) return undefined;
    const r = this.statements.get(`SELECT ${this.rowColumns} FROM lists WHERE o = ? AND k = ? AND id = ?`).get(o, KIND_CODE[kind], id) as ListRowOut | undefined;
    return r === undefined ? undefined : this.checkedRow(kind, owner, r);
  }

  entries(q: EntryQuery): EntryChange[] {
    const sql = `SELECT ${ENTRY_CHECKED_COLUMNS.join(', ')}${this.entriesChecked ? ', crc' : ''}
      FROM ledger_entries WHERE wallet_id = ? AND seq > ? AND seq < ? ORDER BY seq ${q.order === 'desc' ? 'DESC' : 'ASC'} LIMIT ?`;
    return (this.statements.get(sql).all(q.walletId, q.seqAbove, q.seqBelow, q.rows) as StoredEntry[]).map((row) => this.checkedEntry(row));
  }

  /** A stored entry, its checksum checked: a damaged one is never shown (DamagedRowError). */
  private checkedEntry(row: StoredEntry): EntryChange {
    if (this.entriesChecked && entryRowChecksum(row) !== row.crc) {
      throw new DamagedRowError('ledger_entries', `entry ${row.seq} of wallet ${row.wallet_id} (LSN ${row.lsn})`);
    }
    return { walletId: row.wallet_id, seq: row.seq, txnId: row.txn_id, amountMinor: row.amount_minor, balanceAfterMinor: row.balance_after_minor, atMs: row.at_ms, lsn: row.lsn };
  }

  /** Every event row of records up to `lsnMax`, named by its owner (a backup's copy: one walk of the table). */
  *eventRows(lsnMax: number): IterableIterator<IndexedRow> {
    const sql = `SELECT w.owner, ${this.rowColumns.split(', ').map((c) => `l.${c}`).join(', ')} FROM lists l JOIN list_owners w ON w.n = l.o WHERE l.k = ? AND l.lsn <= ?`;
    for (const r of this.statements.get(sql).iterate(KIND_CODE.event, lsnMax) as IterableIterator<ListRowOut & { owner: string }>) {
      yield this.checkedRow('event', r.owner, r);
    }
  }

  /** Every ledger entry of records up to `lsnMax` (a backup's copy: a damaged one stops it, never copied). */
  *entryRows(lsnMax: number): IterableIterator<EntryChange> {
    const sql = `SELECT ${ENTRY_CHECKED_COLUMNS.join(', ')}${this.entriesChecked ? ', crc' : ''} FROM ledger_entries WHERE lsn <= ?`;
    for (const row of this.statements.get(sql).iterate(lsnMax) as IterableIterator<StoredEntry>) yield this.checkedEntry(row);
  }

  /** Rows of records a torn tail lost (rare: a scan, like the other derived tables' cut). */
  cutFrom(lsn: number): void {
    this.statements.get('DELETE FROM lists WHERE lsn >= ?').run(lsn);
    this.statements.get('DELETE FROM ledger_entries WHERE lsn >= ?').run(lsn);
  }
}

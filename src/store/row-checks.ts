// Checksums of a shard file's derived rows (finished entities, idempotency records, expiry rows, list
// rows, wallet ledger entries) and what
// a damaged one raises when it is read. Store layer: any thread that opens a shard file.
// Invariant: a row is checked each time it is read to answer or decide something; a damaged row is never
// served or acted on, and each one is reported at level fatal.
import type Database from 'better-sqlite3';
import { crc32 } from 'node:zlib';
import { ownerOfScope } from './tiers.ts';

/** A derived row whose content no longer matches its checksum (disk damage, or an edit by hand). */
export class DamagedRowError extends Error {
  constructor(
    readonly table: 'cold' | 'idem_log' | 'due' | 'front_idempotency' | 'log' | 'lists' | 'ledger_entries',
    /** The row in an operator's terms: its key and the LSN of the record that wrote it. */
    readonly row: string,
  ) {
    super(`the ${table} row ${row} fails its checksum: the shard file is damaged; restore it from a backup (kobo verify lists every damaged row)`);
  }
}

/** An idempotency record's columns, as the shard file and the backup keep them. */
export interface IdemRowFields {
  lsn: number;
  partition: number;
  owner: string;
  h: number;
  scope: string;
  fingerprint: string;
  status: number;
  json: string | null;
  error: string | null;
  at_ms: number;
}

/**
 * Every column but the row number (`seq`, where the row sits): a changed scope, owner or hash would
 * misplace or misexpire the key, a changed reply would replay another answer. Lengths keep the fields
 * apart without copying the reply into one string.
 */
export function idemRowChecksum(row: IdemRowFields): number {
  const head = `${row.lsn}:${row.partition}:${row.h}:${row.status}:${row.at_ms}:${row.json === null ? '-' : row.json.length}:${row.error === null ? '-' : row.error.length}:${row.owner}\n${row.scope}\n${row.fingerprint}\n`;
  return crc32(row.error ?? '', crc32(row.json ?? '', crc32(head)));
}

export interface DueRowFields {
  owner: string;
  expires_at_ms: number;
  partition: number;
  id: string;
  lsn: number;
}

export function dueRowChecksum(row: DueRowFields): number {
  return crc32(`${row.lsn}:${row.partition}:${row.expires_at_ms}:${row.owner}\n${row.id}`);
}

/** A wallet's ledger entry (a statement line) as `ledger_entries` keeps it. */
export interface EntryRowFields {
  wallet_id: string;
  seq: number;
  txn_id: string;
  amount_minor: number;
  balance_after_minor: number;
  at_ms: number;
  lsn: number;
}

/** Every column: an altered amount or balance would show a statement line the ledger never posted. */
export function entryRowChecksum(row: EntryRowFields): number {
  return crc32(`${row.seq}:${row.lsn}:${row.amount_minor}:${row.balance_after_minor}:${row.at_ms}:${row.wallet_id}\n${row.txn_id}`);
}

/** The columns entryRowChecksum covers, in the order addChecksums passes them. */
export const ENTRY_CHECKED_COLUMNS = ['wallet_id', 'seq', 'txn_id', 'amount_minor', 'balance_after_minor', 'at_ms', 'lsn'] as const;

/**
 * A list index row as `lists` keeps it (`o`: the file's number of the owner; `k`: the kind's code; `c`: the
 * file's number of the customer, from `list_customers`).
 */
export interface ListRowFields {
  o: number;
  k: number;
  id: string;
  c: number | null;
  status: string | null;
  body: string | null;
  lsn: number;
}

const field = (value: string | null): string => (value === null ? '~' : `${value.length}:${value}`);

/**
 * Every column: an altered owner number would show the row in another account's list (an event's body
 * is rebuilt from its log record and shown to whoever lists it), an altered body another event.
 */
export function listRowChecksum(row: ListRowFields): number {
  return crc32(row.body ?? '', crc32(`${row.o}:${row.k}:${row.lsn}:${row.body === null ? '~' : row.body.length}:${row.id}\n${row.c === null ? '~' : `#${row.c}`}\n${field(row.status)}\n`));
}

export const LIST_CHECKED_COLUMNS = ['o', 'k', 'id', 'c', 'status', 'body', 'lsn'] as const;

/** A `lists` row of the layout that named the customer by id (files written before customer numbers). */
export interface TextCustomerListRow {
  o: number;
  k: number;
  id: string;
  customer_id: string | null;
  status: string | null;
  body: string | null;
  lsn: number;
}

/** The checksum a row of that layout carries. */
export function textCustomerListRowChecksum(row: TextCustomerListRow): number {
  return crc32(row.body ?? '', crc32(`${row.o}:${row.k}:${row.lsn}:${row.body === null ? '~' : row.body.length}:${row.id}\n${field(row.customer_id)}\n${field(row.status)}\n`));
}

export const TEXT_CUSTOMER_LIST_COLUMNS = ['o', 'k', 'id', 'customer_id', 'status', 'body', 'lsn'] as const;

/** A `list_customers` row's: an altered id would show a customer's rows under another customer's id. */
export function customerNumberChecksum(n: number, id: string): number {
  return crc32(`${n}:${id}`);
}

/** An `owner_numbers` row's (idempotency rows name their owner by it): an altered owner would give one account's keys to another. */
export function ownerNumberChecksum(n: number, owner: string): number {
  return crc32(`${n}:${owner}`);
}

/** List rows and customer numbers that fail their checksum, each named for an operator (either layout). */
export function* damagedListRows(db: Database.Database): IterableIterator<string> {
  if (!tableExists(db, 'lists') || !hasChecksumColumn(db, 'lists')) return;
  const numbered = db.prepare("SELECT 1 FROM pragma_table_info('lists') WHERE name = 'c'").get() !== undefined;
  if (!numbered) {
    const rows = db.prepare(`SELECT ${TEXT_CUSTOMER_LIST_COLUMNS.join(', ')}, crc FROM lists`).iterate() as IterableIterator<TextCustomerListRow & { crc: number | null }>;
    for (const row of rows) if (textCustomerListRowChecksum(row) !== row.crc) yield `list row ${row.id} (kind ${row.k}, LSN ${row.lsn})`;
    return;
  }
  const rows = db.prepare(`SELECT ${LIST_CHECKED_COLUMNS.join(', ')}, crc FROM lists`).iterate() as IterableIterator<ListRowFields & { crc: number | null }>;
  for (const row of rows) if (listRowChecksum(row) !== row.crc) yield `list row ${row.id} (kind ${row.k}, LSN ${row.lsn})`;
  if (!tableExists(db, 'list_customers')) return;
  const numbers = db.prepare('SELECT n, id, crc FROM list_customers').iterate() as IterableIterator<{ n: number; id: string; crc: number }>;
  for (const m of numbers) if (customerNumberChecksum(m.n, m.id) !== m.crc) yield `list customer number ${m.n}`;
}

/** A front-end idempotency record (webhooks.db): the key's first reply to a POST the front end answers. */
export interface FrontIdemRowFields {
  scope: string;
  fingerprint: string;
  status: number;
  body: string;
  at_ms: number;
}

export function frontIdemRowChecksum(row: FrontIdemRowFields): number {
  return crc32(row.body, crc32(`${row.status}:${row.at_ms}:${row.body.length}:${row.scope}\n${row.fingerprint}\n`));
}

/** What a client is told when a row its request needs is damaged: no row detail leaves the server. */
export const DATA_DAMAGED_MESSAGE = 'The stored record this request needs is damaged (it fails its checksum) and was not served; nothing was changed. The operator has been alerted and must restore it from a backup.';

/** True when `table` has a `crc` column (files written before checksums, opened read-only, have none). */
export function hasChecksumColumn(db: Database.Database, table: string): boolean {
  return (db.prepare(`SELECT 1 FROM pragma_table_info(?) WHERE name = 'crc'`).get(table)) !== undefined;
}

/**
 * Gives a table written before its rows had checksums a `crc` column, filled once from the rows as they
 * are (one transaction: a kill -9 leaves the column absent or every row summed). Run at a writable open.
 */
export function addChecksums(db: Database.Database, table: 'idem_log' | 'due' | 'front_idempotency' | 'ledger_entries' | 'lists', columns: readonly string[], checksum: (row: never) => number): void {
  if (db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(table) === undefined) return;
  if (hasChecksumColumn(db, table)) return;
  db.function('kobo_row_crc', { deterministic: true, varargs: true }, (...values: unknown[]) => {
    const row = Object.fromEntries(columns.map((c, i) => [c, values[i]]));
    return checksum(row as never);
  });
  db.transaction(() => {
    db.exec(`ALTER TABLE ${table} ADD COLUMN crc INTEGER`);
    db.exec(`UPDATE ${table} SET crc = kobo_row_crc(${columns.join(', ')})`);
  })();
}

/** Rows reported already (a sweep that meets the same damaged row each minute reports it once). */
const reported = new Set<string>();
const REPORTED_MAX = 10_000;

/**
 * Writes one log line at level fatal, in the server's JSON log format, from whichever thread met the
 * damage (a shard worker has no logger of its own). The process goes on serving everything else.
 */
export function reportDamage(error: DamagedRowError, fields: Record<string, unknown> = {}): void {
  const key = `${error.table} ${error.row}`;
  if (reported.has(key)) return;
  if (reported.size < REPORTED_MAX) reported.add(key);
  const line = { level: 'fatal', time: new Date().toISOString(), pid: process.pid, name: 'kobo', table: error.table, row: error.row, ...fields, msg: `data damaged: ${error.message}` };
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

function tableExists(db: Database.Database, table: string): boolean {
  return db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(table) !== undefined;
}

/**
 * Idempotency rows that fail their checksum (`idem_log` in a shard file, `idem` in a backup), each named
 * for an operator; none when the table or its checksums are absent. A shard file whose rows name their
 * owner by number (owner-numbers.ts) is checked as the rows read: owner and scope resolved through the
 * mapping, which is checked too.
 */
export function* damagedIdemRows(db: Database.Database, table: 'idem_log' | 'idem' = 'idem_log'): IterableIterator<string> {
  if (!tableExists(db, table) || !hasChecksumColumn(db, table)) return;
  const numbered = table === 'idem_log' && db.prepare("SELECT 1 FROM pragma_table_info('idem_log') WHERE name = 'o'").get() !== undefined;
  if (numbered) {
    for (const m of db.prepare('SELECT n, owner, crc FROM owner_numbers').iterate() as IterableIterator<{ n: number; owner: string; crc: number }>) {
      if (ownerNumberChecksum(m.n, m.owner) !== m.crc) yield `idempotency owner number ${m.n}`;
    }
  }
  const sql = numbered
    ? 'SELECT l.lsn, l.partition, l.o, l.key, w.owner AS mapped, l.h, l.fingerprint, l.status, l.json, l.error, l.at_ms, l.crc FROM idem_log l LEFT JOIN owner_numbers w ON w.n = l.o'
    : `SELECT lsn, partition, owner, h, scope, fingerprint, status, json, error, at_ms, crc FROM ${table}`;
  for (const row of db.prepare(sql).iterate() as IterableIterator<Record<string, unknown>>) {
    const fields = (numbered ? numberedIdemFields(row as unknown as NumberedIdemRow) : row) as unknown as IdemRowFields & { crc: number | null };
    if (idemRowChecksum(fields) !== row.crc) yield `idempotency record of LSN ${fields.lsn} (partition ${fields.partition})`;
  }
}

/** An `idem_log` row of the numbered layout, its owner's mapping joined (`mapped`: null when it has none). */
export interface NumberedIdemRow {
  lsn: number;
  partition: number;
  o: number;
  key: string;
  mapped: string | null;
  h: number;
  fingerprint: string;
  status: number;
  json: string | null;
  error: string | null;
  at_ms: number;
}

/**
 * The fields the checksum covers, from a numbered row: number 0 keeps a whole scope (one that does not
 * split as `owner:key`); any other number stands for its owner. A number with no mapping gives an owner
 * of '' (the checksum then fails: damage, never a guess).
 */
export function numberedIdemFields(row: NumberedIdemRow): IdemRowFields {
  const owner = row.o === 0 ? ownerOfScope(row.key) : (row.mapped ?? '');
  const scope = row.o === 0 ? row.key : `${owner}:${row.key}`;
  return { lsn: row.lsn, partition: row.partition, owner, h: row.h, scope, fingerprint: row.fingerprint, status: row.status, json: row.json, error: row.error, at_ms: row.at_ms };
}

/** Expiry rows that fail their checksum, in a shard file or a backup (both call the table `due`). */
export function* damagedDueRows(db: Database.Database): IterableIterator<string> {
  if (!tableExists(db, 'due') || !hasChecksumColumn(db, 'due')) return;
  // A shard file whose rows name their owner by number: checked as the sweep reads them, owner resolved.
  const numbered = db.prepare("SELECT 1 FROM pragma_table_info('due') WHERE name = 'o'").get() !== undefined;
  const sql = numbered
    ? "SELECT coalesce(w.owner, '') AS owner, l.expires_at_ms, l.partition, l.id, l.lsn, l.crc FROM due l LEFT JOIN owner_numbers w ON w.n = l.o"
    : 'SELECT owner, expires_at_ms, partition, id, lsn, crc FROM due';
  const rows = db.prepare(sql).iterate() as IterableIterator<DueRowFields & { crc: number | null }>;
  for (const row of rows) if (dueRowChecksum(row) !== row.crc) yield `expiry row of ${row.id} (LSN ${row.lsn}, partition ${row.partition})`;
}

/** Wallet ledger entries that fail their checksum, each named for an operator. */
export function* damagedEntryRows(db: Database.Database): IterableIterator<string> {
  if (!tableExists(db, 'ledger_entries') || !hasChecksumColumn(db, 'ledger_entries')) return;
  const rows = db.prepare(`SELECT ${ENTRY_CHECKED_COLUMNS.join(', ')}, crc FROM ledger_entries`).iterate() as IterableIterator<EntryRowFields & { crc: number | null }>;
  for (const row of rows) if (entryRowChecksum(row) !== row.crc) yield `ledger entry ${row.seq} of wallet ${row.wallet_id} (LSN ${row.lsn})`;
}

/** Front-end idempotency rows (webhooks.db) that fail their checksum. */
export function* damagedFrontIdemRows(db: Database.Database): IterableIterator<string> {
  if (!tableExists(db, 'front_idempotency') || !hasChecksumColumn(db, 'front_idempotency')) return;
  const rows = db.prepare('SELECT scope, fingerprint, status, body, at_ms, crc FROM front_idempotency').iterate() as IterableIterator<FrontIdemRowFields & { crc: number | null }>;
  for (const row of rows) if (frontIdemRowChecksum(row) !== row.crc) yield `front-end idempotency record of ${new Date(row.at_ms).toISOString()}`;
}

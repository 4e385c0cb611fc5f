// Customer numbers in the list index, on real sqlite files: a file whose `lists` rows name customers by
// id (the layout before numbers) is moved at its next writable open and pages the same rows, damage
// stays damage through the move, a damaged number is never followed, and a read-only open of an old file
// still pages it, from the shard file; a writable open moves the list tables into the list file of their
// own. Also the page size of new shard files, and that an old file keeps its own.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import fs from 'node:fs';
import Database from 'better-sqlite3';
import { ShardStore, SHARD_PAGE_SIZE_BYTES, DERIVED_PAGE_SIZE_BYTES } from '../../src/store/shard-store.ts';
import { DamagedRowError, damagedListRows, listRowChecksum, textCustomerListRowChecksum, type ListRowFields, type TextCustomerListRow } from '../../src/store/row-checks.ts';
import type { ListQuery } from '../../src/store/list-index.ts';
import { SNAPSHOTS_SQL } from '../../src/store/snapshot-table.ts';
import { derivedFileOf } from '../../src/store/derived-file.ts';
import { tempDataDir } from '../helpers/server.ts';

const OWNER = 'test:acct_lists';
const CUSTOMERS = ['01J0000000000000000000CUS1', '01J0000000000000000000CUS2'] as const;

/** The `lists` schema as builds before customer numbers wrote it (text customer ids, checksummed rows). */
const TEXT_CUSTOMER_SQL = `
  CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
  ${SNAPSHOTS_SQL}
  CREATE TABLE list_owners (n INTEGER PRIMARY KEY, owner TEXT NOT NULL UNIQUE);
  CREATE TABLE lists (
    o INTEGER NOT NULL, k INTEGER NOT NULL, id TEXT NOT NULL, customer_id TEXT, status TEXT, body TEXT,
    lsn INTEGER NOT NULL, crc INTEGER, PRIMARY KEY (o, k, id)) WITHOUT ROWID;
  CREATE INDEX lists_status ON lists (o, k, status, id);
  CREATE INDEX lists_customer_status ON lists (o, k, customer_id, status, id);`;

/** Payments (kind 3) of two customers in three statuses, one event (kind 7) and one row without a customer. */
function oldRows(): TextCustomerListRow[] {
  const rows: TextCustomerListRow[] = [];
  for (let i = 0; i < 30; i += 1) {
    rows.push({ o: 1, k: 3, id: `01J00000000000000000PAY${String(i).padStart(3, '0')}`, customer_id: CUSTOMERS[i % 2]!, status: ['pending', 'completed', 'failed'][i % 3]!, body: null, lsn: 10 + i });
  }
  rows.push({ o: 1, k: 7, id: '01J00000000000000000EVT001', customer_id: CUSTOMERS[0], status: 'payment.completed', body: '{"id":"01J00000000000000000EVT001"}', lsn: 50 });
  rows.push({ o: 1, k: 1, id: CUSTOMERS[1], customer_id: null, status: null, body: null, lsn: 51 });
  return rows;
}

/** A shard file with the old layout, each row with the checksum of that layout (`damaged`: ids whose checksum is wrong). */
function oldFile(damaged: readonly string[] = [], withChecksums = true): string {
  const file = path.join(tempDataDir('list-customers'), 'shard-0.db');
  const db = new Database(file);
  db.pragma('page_size = 2048');
  db.pragma('journal_mode = WAL');
  db.exec(withChecksums ? TEXT_CUSTOMER_SQL : TEXT_CUSTOMER_SQL.replace('lsn INTEGER NOT NULL, crc INTEGER, PRIMARY KEY (o, k, id)', 'lsn INTEGER NOT NULL, PRIMARY KEY (o, k, id)'));
  db.prepare('INSERT INTO list_owners (n, owner) VALUES (1, ?)').run(OWNER);
  for (const r of oldRows()) {
    const crc = (textCustomerListRowChecksum(r) ^ (damaged.includes(r.id) ? 1 : 0)) >>> 0;
    if (withChecksums) db.prepare('INSERT INTO lists VALUES (?, ?, ?, ?, ?, ?, ?, ?)').run(r.o, r.k, r.id, r.customer_id, r.status, r.body, r.lsn, crc);
    else db.prepare('INSERT INTO lists VALUES (?, ?, ?, ?, ?, ?, ?)').run(r.o, r.k, r.id, r.customer_id, r.status, r.body, r.lsn);
  }
  db.close();
  return file;
}

function query(customerId: string | null, status: string | null, kind: ListQuery['kind'] = 'payment'): ListQuery {
  return { owner: OWNER, kind, customerId, status, idAbove: '', idBelow: '~', order: 'desc', rows: 100 };
}

/** What a page should hold, from the rows as written. */
function expected(customerId: string | null, status: string | null, k = 3): string[] {
  return oldRows()
    .filter((r) => r.k === k && (customerId === null || r.customer_id === customerId) && (status === null || r.status === status))
    .map((r) => r.id)
    .sort()
    .reverse();
}

describe('list customers', () => {
  it('a file whose list rows name customers by id → the next writable open numbers them: the same pages, every checksum over the new columns, verify clean', () => {
    const file = oldFile();
    const store = new ShardStore(file);
    const lists = store.listsDb!;
    assert.notEqual(lists, store.db, 'the rows moved to the list file');
    assert.equal(store.db.prepare("SELECT 1 FROM sqlite_master WHERE name IN ('lists', 'list_customers', 'list_owners', 'ledger_entries')").get(), undefined, 'and left the shard file');
    const columns = (lists.prepare("SELECT name FROM pragma_table_info('lists')").pluck().all() as string[]).join(',');
    assert.equal(columns, 'o,k,id,c,status,body,lsn,crc');
    assert.equal(lists.prepare('SELECT count(*) FROM list_customers').pluck().get(), 2);
    const rows = lists.prepare('SELECT o, k, id, c, status, body, lsn, crc FROM lists').all() as Array<ListRowFields & { crc: number }>;
    assert.equal(rows.length, oldRows().length);
    for (const row of rows) assert.equal(row.crc, listRowChecksum(row), row.id);
    for (const customer of [null, CUSTOMERS[0], CUSTOMERS[1]]) {
      for (const status of [null, 'pending', 'completed', 'failed']) {
        assert.deepEqual(store.listPage(query(customer, status)).map((r) => r.id), expected(customer, status), `${customer} ${status}`);
      }
    }
    const event = store.listRow(OWNER, 'event', '01J00000000000000000EVT001');
    assert.equal(event?.customerId, CUSTOMERS[0], 'an event names its customer by id, as before');
    assert.deepEqual([...damagedListRows(lists)], []);
    assert.equal(store.db.pragma('page_size', { simple: true }), 2048, 'an old file keeps its page size');
    store.close();
    // A second open finds nothing to move.
    const again = new ShardStore(file);
    assert.deepEqual(again.listPage(query(CUSTOMERS[1], null)).map((r) => r.id), expected(CUSTOMERS[1], null));
    again.close();
  });

  it('an old row whose checksum fails → it fails after the move too: verify names it, a page that reads it raises DamagedRowError', () => {
    const damagedId = '01J00000000000000000PAY004';
    const store = new ShardStore(oldFile([damagedId]));
    assert.deepEqual([...damagedListRows(store.listsDb!)], [`list row ${damagedId} (kind 3, LSN 14)`]);
    assert.throws(() => store.listPage(query(CUSTOMERS[0], 'completed')), DamagedRowError);
    assert.deepEqual(store.listPage(query(CUSTOMERS[1], 'pending')).map((r) => r.id), expected(CUSTOMERS[1], 'pending'), 'pages without it are served');
    store.close();
  });

  it('old rows written before list rows had checksums → moved with one each', () => {
    const store = new ShardStore(oldFile([], false));
    const rows = store.listsDb!.prepare('SELECT o, k, id, c, status, body, lsn, crc FROM lists').all() as Array<ListRowFields & { crc: number }>;
    assert.equal(rows.length, oldRows().length);
    for (const row of rows) assert.equal(row.crc, listRowChecksum(row));
    assert.deepEqual(store.listPage(query(CUSTOMERS[0], null)).map((r) => r.id), expected(CUSTOMERS[0], null));
    store.close();
  });

  it('a customer number whose id was altered on disk → verify names it; a page of that customer, or an event naming it, raises DamagedRowError', () => {
    const file = oldFile();
    new ShardStore(file).close();
    const db = new Database(derivedFileOf(file));
    db.prepare('UPDATE list_customers SET id = ? WHERE id = ?').run('01J0000000000000000000CUS9', CUSTOMERS[0]);
    db.close();
    const store = new ShardStore(file);
    assert.deepEqual([...damagedListRows(store.listsDb!)], [`list customer number 1`]);
    assert.throws(() => store.listPage(query(null, 'completed')), DamagedRowError, 'a row naming the damaged number is not shown');
    assert.throws(() => store.listRow(OWNER, 'event', '01J00000000000000000EVT001'), DamagedRowError);
    assert.throws(() => store.listPage(query('01J0000000000000000000CUS9', null)), DamagedRowError, 'the altered id does not find the rows either');
    store.close();
  });

  it('a read-only open of a file not yet moved (verify beside an old server) → pages by customer as before, nothing written', () => {
    const file = oldFile();
    const store = new ShardStore(file, { readonly: true });
    for (const customer of [null, CUSTOMERS[0]]) {
      for (const status of [null, 'failed']) assert.deepEqual(store.listPage(query(customer, status)).map((r) => r.id), expected(customer, status));
    }
    assert.equal(store.listsDb, store.db, 'read from the shard file itself');
    assert.deepEqual([...damagedListRows(store.db)], []);
    store.close();
    assert.equal(fs.existsSync(derivedFileOf(file)), false, 'no list file made');
    const db = new Database(file, { readonly: true });
    assert.equal(db.prepare("SELECT 1 FROM pragma_table_info('lists') WHERE name = 'customer_id'").get() !== undefined, true, 'still the old layout');
    db.close();
  });

  it('a list write that numbered a new customer and then failed (its transaction rolled back) → the next write numbers it again: its rows page, nothing damaged', () => {
    const file = path.join(tempDataDir('list-customers'), 'shard-0.db');
    let store = new ShardStore(file);
    // The record the rows are derived from (a list row past the log's end would be cut at the next open).
    store.appendBatch([{ partition: 0, body: '[]' }]);
    const listed = { kind: 'payment' as const, id: '01J00000000000000000PAY900', owner: OWNER, customerId: CUSTOMERS[0], status: 'pending', body: null, lsn: 1 };
    // A row of no known kind (no code: the NOT NULL column refuses it) after the one that numbers the customer.
    const broken = Object.assign({}, listed, { id: '01J00000000000000000PAY901', kind: 'nothing' }) as unknown as typeof listed;
    assert.throws(() => store.writeDerivedNow({ cold: [], idem: [], due: [], list: [listed, broken] }));
    assert.equal(store.listsDb!.prepare('SELECT count(*) FROM list_customers').pluck().get(), 0, 'the number was rolled back');
    store.writeDerivedNow({ cold: [], idem: [], due: [], list: [listed] });
    assert.equal(store.listsDb!.prepare('SELECT count(*) FROM list_customers').pluck().get(), 1);
    store.close();
    // A fresh open has no cached numbers: it reads the mapping the file holds.
    store = new ShardStore(file);
    assert.deepEqual(store.listPage(query(CUSTOMERS[0], null)).map((r) => r.id), [listed.id]);
    assert.deepEqual([...damagedListRows(store.listsDb!)], []);
    store.close();
  });

  it(`a new shard file → pages of ${SHARD_PAGE_SIZE_BYTES} bytes and a journal that checkpoints every 4 MiB; its derived file → pages of ${DERIVED_PAGE_SIZE_BYTES}`, () => {
    const store = new ShardStore(path.join(tempDataDir('list-customers'), 'shard-0.db'));
    assert.equal(store.db.pragma('page_size', { simple: true }), SHARD_PAGE_SIZE_BYTES);
    assert.equal(store.db.pragma('wal_autocheckpoint', { simple: true }), (4 * 1024 * 1024) / SHARD_PAGE_SIZE_BYTES);
    assert.equal(SHARD_PAGE_SIZE_BYTES, 1024, 'the log file writes whole pages a commit: small ones');
    // The derived file beside it keeps sqlite's 4 KiB: its b-trees take rows, not one row a commit.
    assert.equal(store.listsDb!.pragma('page_size', { simple: true }), DERIVED_PAGE_SIZE_BYTES);
    assert.equal(DERIVED_PAGE_SIZE_BYTES, 4096);
    store.close();
  });
});

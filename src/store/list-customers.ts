// The customer numbers of a shard file's list index: `lists` rows name their customer by a small integer
// from `list_customers` instead of its 26-character id, and a file written with ids in its rows is moved
// to numbers once, at its next writable open. Store layer: the thread that opens the shard file.
// Invariant: a number names one customer id for the life of the file; every mapping row carries a
// checksum, checked whenever it is read, so a damaged mapping never shows one customer's rows as another's.
import type Database from 'better-sqlite3';
import { TextNumbers } from './text-numbers.ts';
import { customerNumberChecksum, hasChecksumColumn, textCustomerListRowChecksum, type ListRowFields, type TextCustomerListRow } from './row-checks.ts';

export const LIST_CUSTOMERS_SQL = `
  CREATE TABLE IF NOT EXISTS list_customers (n INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, crc INTEGER NOT NULL);`;

export class ListCustomers extends TextNumbers {
  constructor(db: Database.Database) {
    super(db, { table: 'list_customers', column: 'id', checksum: customerNumberChecksum, reportedAs: 'lists', noun: 'customer number' });
  }

  /** The customer id a number names (a row that names no known number is damaged). */
  idOf(n: number): string {
    return this.textOf(n);
  }

  /** True when `lists` names customers by number (a fresh file, or one migrated by `relayout`). */
  static numbered(db: Database.Database): boolean {
    return db.prepare("SELECT 1 FROM pragma_table_info('lists') WHERE name = 'c'").get() !== undefined;
  }

  /**
   * Moves a `lists` table that names customers by id to numbers, in one transaction (a kill -9 leaves
   * the old table whole or the new one complete). Rows are copied by SQL, each with the checksum of its
   * new columns; a row whose old checksum fails keeps failing (its new checksum is altered), so the move
   * never launders damage. Rows from before checksums are taken as they are, as addChecksums does.
   * `createSql` makes the new table and its indexes (run after the old ones are out of the way).
   */
  static relayout(db: Database.Database, createSql: string, checksum: (row: ListRowFields) => number): void {
    if (db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'lists'").get() === undefined || ListCustomers.numbered(db)) return;
    const oldCrc = hasChecksumColumn(db, 'lists') ? 'l.crc' : 'NULL';
    db.function('kobo_moved_list_crc', { deterministic: true }, (o, k, id, customerId, c, status, body, lsn, crc) => {
      const old: TextCustomerListRow = { o: o as number, k: k as number, id: id as string, customer_id: customerId as string | null, status: status as string | null, body: body as string | null, lsn: lsn as number };
      const moved = checksum({ o: old.o, k: old.k, id: old.id, c: c as number | null, status: old.status, body: old.body, lsn: old.lsn });
      return crc === null || textCustomerListRowChecksum(old) === crc ? moved : (moved ^ 1) >>> 0;
    });
    db.function('kobo_customer_crc', { deterministic: true }, (n, id) => customerNumberChecksum(n as number, id as string));
    db.transaction(() => {
      for (const index of ['lists_status', 'lists_customer_status', 'lists_customer']) db.exec(`DROP INDEX IF EXISTS ${index}`);
      db.exec('ALTER TABLE lists RENAME TO lists_text_customers');
      db.exec(LIST_CUSTOMERS_SQL);
      db.exec('INSERT INTO list_customers (id, crc) SELECT DISTINCT customer_id, 0 FROM lists_text_customers WHERE customer_id IS NOT NULL AND customer_id NOT IN (SELECT id FROM list_customers)');
      db.exec('UPDATE list_customers SET crc = kobo_customer_crc(n, id) WHERE crc = 0');
      db.exec(createSql);
      db.exec(`INSERT INTO lists (o, k, id, c, status, body, lsn, crc)
        SELECT l.o, l.k, l.id, m.n, l.status, l.body, l.lsn, kobo_moved_list_crc(l.o, l.k, l.id, l.customer_id, m.n, l.status, l.body, l.lsn, ${oldCrc})
        FROM lists_text_customers l LEFT JOIN list_customers m ON m.id = l.customer_id`);
      db.exec('DROP TABLE lists_text_customers');
    })();
  }
}

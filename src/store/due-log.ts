// The expiry index of sandbox collections waiting for their payer, kept in the shard file rather than in
// the heap and every snapshot image (a client may leave millions unpaid). Runs in the shard (and the
// recovery) that owns the file.
// Invariant: a row is a hint, written in the same sqlite transaction as the record that made the
// payment wait; the sweep decides from the payment itself and drops rows whose payment waits no more.
import type Database from 'better-sqlite3';
import { Statements } from './statements.ts';
import { relayoutTable } from './relayout.ts';
import { addChecksums, DamagedRowError, dueRowChecksum, hasChecksumColumn, reportDamage } from './row-checks.ts';
import { OWNER_NUMBERS_SQL, OwnerNumbers } from './owner-numbers.ts';

// Keyed by owner, then expiry: a batch's new rows (each expiring a day after its sandbox-clock now) all go
// to the right edge of one owner's range, a page or two per commit. Keyed by partition first, as it was,
// each busy partition's rows went to a page of their own, rewritten (and checkpointed) at every commit:
// about 5 KB written per collection with 16 busy partitions. The owner is a number from `owner_numbers`
// (its `env:account` was ~22 bytes a row, on disk and in every write of the row).
// `crc` is dueRowChecksum of the row as read (the owner resolved): the value the text layout stored, so a
// backup copies it as it is; it is checked when the sweep reads a row.
export const DUE_SQL = `${OWNER_NUMBERS_SQL}
  CREATE TABLE IF NOT EXISTS due (
    o INTEGER NOT NULL, expires_at_ms INTEGER NOT NULL, partition INTEGER NOT NULL, id TEXT NOT NULL,
    lsn INTEGER NOT NULL, crc INTEGER, PRIMARY KEY (o, expires_at_ms, partition, id)) WITHOUT ROWID;`;

/** The owner-first layout with the owner's text: files written before owner numbers, and backups. */
export const DUE_TEXT_SQL = `
  CREATE TABLE IF NOT EXISTS due (
    owner TEXT NOT NULL, expires_at_ms INTEGER NOT NULL, partition INTEGER NOT NULL, id TEXT NOT NULL,
    lsn INTEGER NOT NULL, crc INTEGER, PRIMARY KEY (owner, expires_at_ms, partition, id)) WITHOUT ROWID;`;

/** The columns every text layout of the table had (what a relayout copies over, and a backup keeps). */
export const DUE_COLUMNS = 'partition, owner, expires_at_ms, id, lsn';
/** Columns as the backup keeps them: with each row's checksum. */
export const DUE_BACKUP_COLUMNS = `${DUE_COLUMNS}, crc`;
const DUE_CHECKED_COLUMNS = ['owner', 'expires_at_ms', 'partition', 'id', 'lsn'] as const;

/**
 * A numbered file's rows up to an LSN (`?`) in the backup's columns, from the shard file attached as
 * `schema`: the owner resolved (a number with no mapping gives '', whose checksum then fails at restore).
 */
export function dueBackupSelect(schema: string): string {
  return `SELECT l.partition, coalesce(w.owner, ''), l.expires_at_ms, l.id, l.lsn, l.crc FROM ${schema}.due l LEFT JOIN ${schema}.owner_numbers w ON w.n = l.o WHERE l.lsn <= ?`;
}

/** True when a file's `due` names owners by number (the `o` column). */
export function dueNumbered(db: Database.Database, schema = 'main'): boolean {
  return db.prepare(`SELECT 1 FROM pragma_table_info('due', '${schema}') WHERE name = 'o'`).get() !== undefined;
}

/** A waiting collection: whose clock decides, and when its instructions expire on it. */
export interface DueEntry {
  id: string;
  owner: string;
  expiresAtMs: number;
}

export interface DueOp {
  op: 'set' | 'drop';
  entry: DueEntry;
}

/** A change of one WAL record (its LSN: a torn tail takes its rows back). */
export interface DueChange extends DueOp {
  lsn: number;
  partition: number;
}

/** A row the sweep found due, with the partition whose shard decides it. */
export interface DueRow extends DueEntry {
  partition: number;
}

/** A row in the backup's columns (`crc` null: a backup from before row checksums). */
export interface DueBackupRow {
  partition: number;
  owner: string;
  expires_at_ms: number;
  id: string;
  lsn: number;
  crc: number | null;
}

export class DueLog {
  private readonly statements: Statements;
  /** Null until first asked: a read-only open of a file from before row checksums has no `crc`. */
  private checksummed: boolean | null = null;
  /** Null until first asked: false only for a read-only open of a file whose rows name owners by text. */
  private numberedNow: boolean | null = null;
  private readonly owners_: OwnerNumbers;

  constructor(private readonly db: Database.Database) {
    this.statements = new Statements(db);
    this.owners_ = new OwnerNumbers(db, 'due');
  }

  /**
   * Files written with the partition-first key get the owner-first one, rows written before row checksums
   * get theirs, and text owners become numbers (each once, at open, in one transaction). The checksum of a
   * moved row is kept: it covers the same resolved fields, so damage stays damage.
   */
  static migrate(db: Database.Database): void {
    if (dueNumbered(db)) return;
    const createOld = DUE_TEXT_SQL.replace(', crc INTEGER', '');
    relayoutTable(db, { table: 'due', isOld: (sql) => /PRIMARY KEY \(partition,/.test(sql), createSql: createOld, columns: DUE_COLUMNS });
    addChecksums(db, 'due', DUE_CHECKED_COLUMNS, dueRowChecksum);
    if (db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'due'").get() === undefined) return;
    db.transaction(() => {
      db.exec('ALTER TABLE due RENAME TO due_text_owners');
      db.exec(DUE_SQL);
      const owners = new OwnerNumbers(db, 'due');
      for (const owner of db.prepare('SELECT DISTINCT owner FROM due_text_owners ORDER BY 1').pluck().all() as string[]) owners.numberOf(owner, true);
      db.exec(`INSERT INTO due (o, expires_at_ms, partition, id, lsn, crc)
        SELECT w.n, t.expires_at_ms, t.partition, t.id, t.lsn, t.crc FROM due_text_owners t JOIN owner_numbers w ON w.owner = t.owner`);
      db.exec('DROP TABLE due_text_owners');
    })();
  }

  private get numbered(): boolean {
    return (this.numberedNow ??= dueNumbered(this.db));
  }

  /** Forgets cached owner numbers: numbers made in a write transaction that rolled back are not in the file. */
  forgetNumbers(): void {
    this.owners_.forget();
  }

  apply(changes: readonly DueChange[]): void {
    if (changes.length === 0) return;
    // Replay writes the same set again (a row a sweep dropped comes back once and is dropped again).
    const set = this.statements.get('INSERT OR IGNORE INTO due (o, expires_at_ms, partition, id, lsn, crc) VALUES (?, ?, ?, ?, ?, ?)');
    const drop = this.statements.get('DELETE FROM due WHERE o = ? AND expires_at_ms = ? AND partition = ? AND id = ?');
    for (const c of changes) {
      const row = { owner: c.entry.owner, expires_at_ms: c.entry.expiresAtMs, partition: c.partition, id: c.entry.id, lsn: c.lsn };
      if (c.op === 'set') set.run(this.owners_.numberOf(row.owner, true)!, row.expires_at_ms, row.partition, row.id, row.lsn, dueRowChecksum(row));
      else {
        const o = this.numberOf(row.owner);
        if (o !== undefined) drop.run(o, c.entry.expiresAtMs, c.partition, c.entry.id);
      }
    }
  }

  /** Puts a backup's rows back, each keeping its checksum (one computed for rows from before checksums). */
  putBackupRows(rows: Iterable<DueBackupRow>): void {
    const set = this.statements.get('INSERT OR IGNORE INTO due (o, expires_at_ms, partition, id, lsn, crc) VALUES (?, ?, ?, ?, ?, ?)');
    for (const r of rows) set.run(this.owners_.numberOf(r.owner, true)!, r.expires_at_ms, r.partition, r.id, r.lsn, r.crc ?? dueRowChecksum(r));
  }

  /**
   * Owners with rows, in number order (one index seek each: there are few owners and many rows). A number
   * whose mapping is damaged is left out (reported): the sweep never acts on rows it cannot place.
   */
  owners(): string[] {
    const owners: string[] = [];
    if (!this.numbered) {
      const next = this.statements.get('SELECT owner FROM due WHERE owner > ? ORDER BY owner LIMIT 1').pluck();
      for (let owner = next.get('') as string | undefined; owner !== undefined; owner = next.get(owner) as string | undefined) owners.push(owner);
      return owners;
    }
    const next = this.statements.get('SELECT o FROM due WHERE o > ? ORDER BY o LIMIT 1').pluck();
    for (let o = next.get(-1) as number | undefined; o !== undefined; o = next.get(o) as number | undefined) {
      try {
        owners.push(this.owners_.ownerOf(o));
      } catch (error) {
        if (!(error instanceof DamagedRowError)) throw error;
        reportDamage(error);
      }
    }
    return owners;
  }

  /**
   * The owner's rows expiring before `cutoffMs`, oldest first, at most `limit`, in every partition. A
   * row that fails its checksum is left out (reported at fatal, once): the sweep never acts on it.
   */
  dueOf(owner: string, cutoffMs: number, limit: number): DueRow[] {
    this.checksummed ??= hasChecksumColumn(this.db, 'due');
    const key = this.numbered ? this.numberOf(owner) : owner;
    if (key === undefined) return [];
    const rows = this.statements
      .get(`SELECT id, partition, expires_at_ms, lsn${this.checksummed ? ', crc' : ''} FROM due WHERE ${this.numbered ? 'o' : 'owner'} = ? AND expires_at_ms < ? ORDER BY expires_at_ms LIMIT ?`)
      .all(key, cutoffMs, limit) as Array<{ id: string; partition: number; expires_at_ms: number; lsn: number; crc?: number | null }>;
    const out: DueRow[] = [];
    for (const r of rows) {
      if (this.checksummed && dueRowChecksum({ owner, expires_at_ms: r.expires_at_ms, partition: r.partition, id: r.id, lsn: r.lsn }) !== r.crc) {
        reportDamage(new DamagedRowError('due', `${r.id} (owner ${owner}, LSN ${r.lsn})`), { partition: r.partition });
        continue;
      }
      out.push({ id: r.id, owner, expiresAtMs: r.expires_at_ms, partition: r.partition });
    }
    return out;
  }

  /** The owner's number, if it has one whose mapping is sound (a damaged one is reported, never followed). */
  private numberOf(owner: string): number | undefined {
    try {
      return this.owners_.numberOf(owner, false);
    } catch (error) {
      if (!(error instanceof DamagedRowError)) throw error;
      reportDamage(error);
      return undefined;
    }
  }

  /** Rows of records a torn tail lost. (Rows those records dropped stay dropped: their payments waited no more before.) */
  cutFrom(lsn: number): void {
    this.statements.get('DELETE FROM due WHERE lsn >= ?').run(lsn);
  }

  count(): number {
    return this.statements.get('SELECT count(*) FROM due').pluck().get() as number;
  }
}

// One shard's SQLite file: the WAL (numbered, checksummed event records) and partition snapshots.
// Runs inside the shard worker that owns the file (the CLI opens it only while no server holds it).
// Invariant: a batch is appended in one sqlite transaction with synchronous=FULL: all of it or none.
import Database from 'better-sqlite3';
import { crc32 } from 'node:zlib';

export interface WalRow {
  lsn: number;
  partition: number;
  batch: number;
  body: string;
  crc: number;
}

export interface SnapshotRow {
  partition: number;
  lsn: number;
  takenAtMs: number;
  body: Buffer;
  crc: number;
}

export function walChecksum(lsn: number, partition: number, body: string): number {
  return crc32(body, crc32(`${lsn}:${partition}:`));
}

export function snapshotChecksum(partition: number, lsn: number, body: Buffer): number {
  return crc32(body, crc32(`${partition}:${lsn}:`));
}

/** Opens a shard or control database with the durability settings every open must have. */
export function openDatabase(file: string, options: { readonly?: boolean } = {}): Database.Database {
  const db = new Database(file, { readonly: options.readonly === true, fileMustExist: options.readonly === true });
  if (options.readonly !== true) db.pragma('journal_mode = WAL');
  // FULL: the sqlite journal is fsynced at every commit, so an acknowledged batch survives power loss.
  db.pragma('synchronous = FULL');
  db.pragma('busy_timeout = 5000');
  return db;
}

export class ShardStore {
  readonly db: Database.Database;
  private nextLsn: number;
  private nextBatch: number;
  private readonly insertWal: Database.Statement;
  private readonly insertSnapshot: Database.Statement;
  private readonly appendTx: (records: ReadonlyArray<{ partition: number; body: string }>) => number;

  constructor(file: string, options: { readonly?: boolean } = {}) {
    this.db = openDatabase(file, options);
    if (options.readonly !== true) {
      this.db.exec(`
        CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE IF NOT EXISTS wal (
          lsn INTEGER PRIMARY KEY, partition INTEGER NOT NULL, batch INTEGER NOT NULL,
          body TEXT NOT NULL, crc INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS snapshots (
          partition INTEGER NOT NULL, lsn INTEGER NOT NULL, taken_at_ms INTEGER NOT NULL,
          body BLOB NOT NULL, crc INTEGER NOT NULL, PRIMARY KEY (partition, lsn));
      `);
    }
    const last = this.db.prepare('SELECT max(lsn) AS lsn, max(batch) AS batch FROM wal').get() as {
      lsn: number | null;
      batch: number | null;
    };
    const base = Number(this.getMeta('base_lsn') ?? '0');
    this.nextLsn = Math.max(last.lsn ?? 0, base) + 1;
    this.nextBatch = (last.batch ?? 0) + 1;
    this.insertWal = this.db.prepare('INSERT INTO wal (lsn, partition, batch, body, crc) VALUES (?, ?, ?, ?, ?)');
    this.insertSnapshot = this.db.prepare(
      'INSERT OR REPLACE INTO snapshots (partition, lsn, taken_at_ms, body, crc) VALUES (?, ?, ?, ?, ?)',
    );
    this.appendTx = this.db.transaction((records: ReadonlyArray<{ partition: number; body: string }>) => {
      const batch = this.nextBatch;
      let lsn = this.nextLsn;
      for (const record of records) {
        this.insertWal.run(lsn, record.partition, batch, record.body, walChecksum(lsn, record.partition, record.body));
        lsn += 1;
      }
      return lsn;
    });
  }

  getMeta(key: string): string | undefined {
    const row = this.db.prepare('SELECT value FROM meta WHERE key = ?').get(key) as { value: string } | undefined;
    return row?.value;
  }

  setMeta(key: string, value: string): void {
    this.db.prepare('INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)').run(key, value);
  }

  /** The LSN the next appended record will get. */
  get lsnNext(): number {
    return this.nextLsn;
  }

  /** Appends one batch durably; returns the LSN of its last record. */
  appendBatch(records: ReadonlyArray<{ partition: number; body: string }>): number {
    if (records.length === 0) return this.nextLsn - 1;
    const next = this.appendTx(records);
    this.nextLsn = next;
    this.nextBatch += 1;
    return next - 1;
  }

  *walAfter(lsn: number): IterableIterator<WalRow> {
    const rows = this.db
      .prepare('SELECT lsn, partition, batch, body, crc FROM wal WHERE lsn > ? ORDER BY lsn')
      .iterate(lsn) as IterableIterator<WalRow>;
    yield* rows;
  }

  walCount(): number {
    return (this.db.prepare('SELECT count(*) AS n FROM wal').get() as { n: number }).n;
  }

  lastBatch(): number {
    return this.nextBatch - 1;
  }

  /** Removes the records of a torn final batch (from `lsn` on). */
  cutFrom(lsn: number): number {
    const info = this.db.prepare('DELETE FROM wal WHERE lsn >= ?').run(lsn);
    const last = this.db.prepare('SELECT max(lsn) AS lsn FROM wal').get() as { lsn: number | null };
    this.nextLsn = Math.max(last.lsn ?? 0, Number(this.getMeta('base_lsn') ?? '0')) + 1;
    return info.changes;
  }

  writeSnapshot(row: SnapshotRow): void {
    this.insertSnapshot.run(row.partition, row.lsn, row.takenAtMs, row.body, row.crc);
    // Older images are kept only as a fallback for one more generation; the WAL stays whole.
    this.db
      .prepare(
        `DELETE FROM snapshots WHERE partition = ? AND lsn < (
           SELECT min(lsn) FROM (SELECT lsn FROM snapshots WHERE partition = ? ORDER BY lsn DESC LIMIT 2))`,
      )
      .run(row.partition, row.partition);
  }

  /** Snapshots of a partition, newest first. */
  snapshotsOf(partition: number): SnapshotRow[] {
    return (
      this.db
        .prepare('SELECT partition, lsn, taken_at_ms AS takenAtMs, body, crc FROM snapshots WHERE partition = ? ORDER BY lsn DESC')
        .all(partition) as SnapshotRow[]
    );
  }

  close(): void {
    this.db.close();
  }
}

// The log's segment tables in a shard file. Version-2 segments (`log_1`, `log_2`, …) hold one row per
// group commit; version-1 segments (`wal_0`, `wal_1`, …, one row per record) are what files written
// before version 2 hold: still read and replayed, never appended to, dropped by truncation. Truncation
// moves a v2 segment's rows into `log_archive`: no longer replayed, still read by the rows pointing into it.
// Runs in the shard (or CLI) that owns the file. Why segments: a whole table leaves in one statement, where
// deleting rows one by one made sqlite rebalance b-tree pages on every truncation.
// Invariant: segments are in LSN order (every v1 segment before every v2 one); a segment leaves the live
// log only when every record in it is covered by both kept images of its partition and is older than the retained tail.
import type Database from 'better-sqlite3';
import { crc32 } from 'node:zlib';
import { decodeLogBody, encodeLogBody, logRowChecksum, type LogRecord } from './log-record.ts';
import { DamagedRowError } from '../store/row-checks.ts';

/** Records per segment by default (KOBO_WAL_SEGMENT_RECORDS): a segment is sealed at the first batch that reaches it. */
export const WAL_SEGMENT_RECORDS = 2_500;

/** One stored v2 row as it is shipped between copies of a shard's log (journal.ts). */
export interface EncodedRow {
  lsnFirst: number;
  n: number;
  batch: number;
  body: Buffer;
  crc: number;
}

/** One record as replay and verify read it; `ok` is false when its row (v2) or itself (v1) fails its checksum. */
export interface LogEntry {
  lsn: number;
  partition: number;
  batch: number;
  body: string;
  ok: boolean;
}

/** The checksum of a version-1 record (one row per record). */
export function walChecksum(lsn: number, partition: number, body: string): number {
  return crc32(body, crc32(`${lsn}:${partition}:`));
}

const V1_NAME = /^wal_(\d+)$/;
const V2_NAME = /^log_(\d+)$/;
/**
 * The v2 rows truncation took out of the live log, kept for the derived rows that point into their
 * records (never replayed). One table, not one per segment: a file's schema stays the same size however
 * long its history.
 */
const ARCHIVE_TABLE = 'log_archive';

interface Archive {
  firstLsn: number;
  lastLsn: number;
}

interface Segment {
  name: string;
  version: 1 | 2;
  /** Highest LSN in the segment per partition (null: not read yet; a sealed segment's never changes). */
  maxByPartition: Map<number, number> | null;
  firstLsn: number | null;
  lastLsn: number | null;
  lastBatch: number | null;
  records: number;
}

/**
 * Decoded rows kept for `recordAt` (a read of a finished entity or a replayed key decodes its row once),
 * bounded by their records' total characters: a batch of a thousand records decodes to megabytes.
 */
const DECODED_CHARS_MAX = 1_000_000;

/** The DDL of one version-2 segment (also what bench/floor-uws.ts writes, so the floor's rows match). */
export function logSegmentSql(name: string): string {
  return `CREATE TABLE ${name} (lsn_first INTEGER PRIMARY KEY, n INTEGER NOT NULL, batch INTEGER NOT NULL, body BLOB NOT NULL, crc INTEGER NOT NULL)`;
}

/** The DDL of one version-1 segment (tests build old files with it). */
export function walSegmentSql(name: string): string {
  return `CREATE TABLE ${name} (lsn INTEGER PRIMARY KEY, partition INTEGER NOT NULL, batch INTEGER NOT NULL, body TEXT NOT NULL, crc INTEGER NOT NULL)`;
}

export class LogSegments {
  private segments: Segment[] = [];
  /** The LSN range `log_archive` holds (null: nothing archived yet). */
  private archive: Archive | null = null;
  private insert: Database.Statement | null = null;
  private readonly segmentRecords: number;

  constructor(
    private readonly db: Database.Database,
    options: { readonly: boolean; segmentRecords: number },
  ) {
    this.segmentRecords = options.segmentRecords;
    // A file written before segments has one v1 table named `wal` (a view in later files).
    const legacy = this.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'wal'").get() !== undefined;
    if (legacy && !options.readonly) this.db.exec('ALTER TABLE wal RENAME TO wal_0');
    const v1 = this.tableNames(V1_NAME);
    if (legacy && options.readonly) v1.unshift('wal');
    const v2 = this.tableNames(V2_NAME);
    if (!options.readonly) {
      // The view of v1 records is gone with version 2 (a v2 body is not text): an operator reads the log with kobo.
      this.db.exec('DROP VIEW IF EXISTS wal');
      if (v2.length === 0) {
        this.db.exec(logSegmentSql('log_1'));
        v2.push('log_1');
      }
    }
    this.segments = [...v1.map((name) => this.loadV1(name)), ...v2.map((name) => this.loadV2(name))];
    if (this.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(ARCHIVE_TABLE) !== undefined) {
      const loaded = this.loadV2(ARCHIVE_TABLE);
      if (loaded.firstLsn !== null && loaded.lastLsn !== null) this.archive = { firstLsn: loaded.firstLsn, lastLsn: loaded.lastLsn };
    }
    if (!options.readonly) this.prepareInsert();
  }

  private tableNames(pattern: RegExp): string[] {
    const rows = this.db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[];
    return rows.filter((n) => pattern.test(n)).sort((a, b) => Number(pattern.exec(a)![1]) - Number(pattern.exec(b)![1]));
  }

  /** A v1 segment's LSNs are contiguous (a cut only shortens its tail): two b-tree seeks, no scan. */
  private loadV1(name: string): Segment {
    const row = this.db.prepare(`SELECT min(lsn) AS firstLsn, max(lsn) AS lastLsn FROM ${name}`).get() as { firstLsn: number | null; lastLsn: number | null };
    const lastBatch = row.lastLsn === null ? null : ((this.db.prepare(`SELECT batch FROM ${name} WHERE lsn = ?`).get(row.lastLsn) as { batch: number }).batch);
    return { name, version: 1, maxByPartition: row.lastLsn === null ? new Map() : null, firstLsn: row.firstLsn, lastLsn: row.lastLsn, lastBatch, records: row.lastLsn === null ? 0 : row.lastLsn - row.firstLsn! + 1 };
  }

  private loadV2(name: string): Segment {
    const first = this.db.prepare(`SELECT min(lsn_first) AS lsn FROM ${name}`).get() as { lsn: number | null };
    const last = this.db.prepare(`SELECT lsn_first, n, batch FROM ${name} ORDER BY lsn_first DESC LIMIT 1`).get() as { lsn_first: number; n: number; batch: number } | undefined;
    if (last === undefined || first.lsn === null) return { name, version: 2, maxByPartition: new Map(), firstLsn: null, lastLsn: null, lastBatch: null, records: 0 };
    const lastLsn = last.lsn_first + last.n - 1;
    return { name, version: 2, maxByPartition: null, firstLsn: first.lsn, lastLsn, lastBatch: last.batch, records: lastLsn - first.lsn + 1 };
  }

  private prepareInsert(): void {
    this.insert = this.db.prepare(`INSERT INTO ${this.open.name} (lsn_first, n, batch, body, crc) VALUES (?, ?, ?, ?, ?)`);
  }

  private get open(): Segment {
    return this.segments[this.segments.length - 1]!;
  }

  private maxOf(segment: Segment): Map<number, number> {
    if (segment.maxByPartition !== null) return segment.maxByPartition;
    const max = new Map<number, number>();
    if (segment.version === 1) {
      for (const [partition, lsn] of this.db.prepare(`SELECT partition, max(lsn) FROM ${segment.name} GROUP BY partition`).raw().all() as Array<[number, number]>) max.set(partition, lsn);
    } else {
      for (const entry of this.entriesOf(segment, 0, 500)) max.set(entry.partition, entry.lsn);
    }
    segment.maxByPartition = max;
    return max;
  }

  /**
   * Appends one batch's records as one row (inside the caller's transaction), numbered from `lsnFirst`;
   * a full segment is sealed first, and a v1 segment is never appended to.
   */
  append(lsnFirst: number, batch: number, records: readonly LogRecord[]): void {
    if (records.length === 0) return;
    const body = encodeLogBody(records);
    const crc = logRowChecksum(lsnFirst, records.length, batch, body);
    this.insertRow(lsnFirst, records.length, batch, body, crc, records);
    this.lastRow = { lsnFirst, n: records.length, batch, body, crc };
  }

  /** The row the last `append` wrote, as a replica ships it. */
  lastRow: EncodedRow | null = null;

  /** Appends a row exactly as another copy of the log holds it (a follower applying its owner's rows). */
  appendEncoded(row: EncodedRow): void {
    this.insertRow(row.lsnFirst, row.n, row.batch, row.body, row.crc, null);
  }

  /** Numbering and checksum of the v2 row that starts at `lsnFirst`, if one does. */
  rowHeader(lsnFirst: number): { n: number; batch: number; crc: number } | undefined {
    const segment = this.segments.find((s) => s.version === 2 && s.firstLsn !== null && s.lastLsn !== null && s.firstLsn <= lsnFirst && lsnFirst <= s.lastLsn);
    if (segment === undefined) return undefined;
    return this.db.prepare(`SELECT n, batch, crc FROM ${segment.name} WHERE lsn_first = ?`).get(lsnFirst) as { n: number; batch: number; crc: number } | undefined;
  }

  private insertRow(lsnFirst: number, n: number, batch: number, body: Buffer, crc: number, records: readonly LogRecord[] | null): void {
    let open = this.open;
    if (open.version === 1 || open.records >= this.segmentRecords) {
      if (open.version === 2) this.maxOf(open);
      const highest = this.segments.filter((s) => s.version === 2).map((s) => Number(V2_NAME.exec(s.name)![1]));
      const name = `log_${Math.max(0, ...highest) + 1}`;
      this.db.exec(logSegmentSql(name));
      this.segments.push({ name, version: 2, maxByPartition: new Map(), firstLsn: null, lastLsn: null, lastBatch: null, records: 0 });
      this.prepareInsert();
      open = this.open;
    }
    this.insert!.run(lsnFirst, n, batch, body, crc);
    open.records += n;
    open.firstLsn ??= lsnFirst;
    open.lastLsn = lsnFirst + n - 1;
    open.lastBatch = batch;
    if (records === null) {
      // A row applied as shipped: its partitions are read back when truncation asks.
      open.maxByPartition = null;
      return;
    }
    // Its derived rows are decided against these records right after the commit: no decode needed then.
    // Only the newest row is kept so: the decoded cache holding every appended row kept ~0.1 s of records
    // alive under load, past two scavenges, and promoted to the old generation (~30% of what each
    // scavenge promoted, bench/RESULTS.md). Rows read back are still cached by `recordAt`.
    this.appended = { first: lsnFirst, records };
    if (open.maxByPartition !== null) for (let i = 0; i < records.length; i += 1) open.maxByPartition.set(records[i]!.partition, lsnFirst + i);
  }

  /** The highest LSN and batch still recorded (null: none). */
  last(): { lsn: number | null; batch: number | null } {
    for (let i = this.segments.length - 1; i >= 0; i -= 1) {
      const segment = this.segments[i]!;
      if (segment.lastLsn !== null) return { lsn: segment.lastLsn, batch: segment.lastBatch };
    }
    return { lsn: null, batch: null };
  }

  first(): number | null {
    for (const segment of this.segments) {
      if (segment.lastLsn === null) continue;
      const sql = segment.version === 1 ? `SELECT min(lsn) FROM ${segment.name}` : `SELECT min(lsn_first) FROM ${segment.name}`;
      return this.db.prepare(sql).pluck().get() as number;
    }
    return null;
  }

  count(): number {
    return this.segments.reduce((n, s) => n + s.records, 0);
  }

  /** Records after `lsn`, in order, a page of rows at a time (no cursor stays open between pages). */
  *after(lsn: number, pageRows: number): IterableIterator<LogEntry> {
    for (const segment of [...this.segments]) {
      if (segment.lastLsn === null || segment.lastLsn <= lsn) continue;
      yield* this.entriesOf(segment, lsn, pageRows);
    }
  }

  private *entriesOf(segment: Segment, afterLsn: number, pageRows: number): IterableIterator<LogEntry> {
    if (segment.version === 1) {
      const page = this.db.prepare(`SELECT lsn, partition, batch, body, crc FROM ${segment.name} WHERE lsn > ? ORDER BY lsn LIMIT ?`);
      for (let after = afterLsn; ; ) {
        const rows = page.all(after, pageRows) as Array<{ lsn: number; partition: number; batch: number; body: string; crc: number }>;
        for (const row of rows) yield { lsn: row.lsn, partition: row.partition, batch: row.batch, body: row.body, ok: walChecksum(row.lsn, row.partition, row.body) === row.crc };
        if (rows.length < pageRows) return;
        after = rows[rows.length - 1]!.lsn;
      }
    }
    // The row holding afterLsn + 1 starts at or before it.
    const start = (this.db.prepare(`SELECT max(lsn_first) FROM ${segment.name} WHERE lsn_first <= ?`).pluck().get(afterLsn + 1) as number | null) ?? 0;
    const page = this.db.prepare(`SELECT lsn_first, n, batch, body, crc FROM ${segment.name} WHERE lsn_first >= ? ORDER BY lsn_first LIMIT ?`);
    for (let from = start; ; ) {
      const rows = page.all(from, pageRows) as Array<{ lsn_first: number; n: number; batch: number; body: Buffer; crc: number }>;
      for (const row of rows) yield* this.rowEntries(row, afterLsn);
      if (rows.length < pageRows) return;
      from = rows[rows.length - 1]!.lsn_first + 1;
    }
  }

  /** A v2 row's records after `afterLsn`; a row that fails its checksum or its decoding is one entry with ok false. */
  private *rowEntries(row: { lsn_first: number; n: number; batch: number; body: Buffer; crc: number }, afterLsn: number): IterableIterator<LogEntry> {
    let records: LogRecord[] | null = null;
    if (logRowChecksum(row.lsn_first, row.n, row.batch, row.body) === row.crc) {
      try {
        records = decodeLogBody(row.body, row.n);
      } catch {
        records = null;
      }
    }
    if (records === null) {
      yield { lsn: Math.max(row.lsn_first, afterLsn + 1), partition: -1, batch: row.batch, body: '', ok: false };
      return;
    }
    for (let i = 0; i < records.length; i += 1) {
      const lsn = row.lsn_first + i;
      if (lsn > afterLsn) yield { lsn, partition: records[i]!.partition, batch: row.batch, body: records[i]!.body, ok: true };
    }
  }

  /** Rows' records by `segment:lsn_first`, newest last: the batches just appended, and rows read back. */
  private readonly decoded = new Map<string, { first: number; records: readonly LogRecord[]; chars: number }>();
  /** The records of the row `append` wrote last, as given (the batch's derived rows point into them). */
  private appended: { first: number; records: readonly LogRecord[] } | null = null;
  /** recordAt's statement per segment. */
  private readonly rowAt = new Map<string, Database.Statement>();
  private decodedChars = 0;

  /**
   * The JSON of version-2 record `lsn`, or undefined when no v2 row holds it (a v1 record, or one
   * truncated away); a row that fails its checksum throws (a derived row points into damaged data).
   */
  recordAt(lsn: number): string | undefined {
    const appended = this.appended;
    if (appended !== null && lsn >= appended.first && lsn < appended.first + appended.records.length) return appended.records[lsn - appended.first]!.body;
    for (const entry of this.decoded.values()) if (lsn >= entry.first && lsn < entry.first + entry.records.length) return entry.records[lsn - entry.first]!.body;
    const archived = this.archive !== null && this.archive.firstLsn <= lsn && lsn <= this.archive.lastLsn;
    const segment = archived ? { name: ARCHIVE_TABLE } : this.segments.find((s) => s.version === 2 && s.firstLsn !== null && s.lastLsn !== null && s.firstLsn <= lsn && lsn <= s.lastLsn);
    if (segment === undefined) return undefined;
    let find = this.rowAt.get(segment.name);
    if (find === undefined) {
      find = this.db.prepare(`SELECT lsn_first, n, batch, body, crc FROM ${segment.name} WHERE lsn_first <= ? ORDER BY lsn_first DESC LIMIT 1`);
      this.rowAt.set(segment.name, find);
    }
    const row = find.get(lsn) as { lsn_first: number; n: number; batch: number; body: Buffer; crc: number } | undefined;
    if (row === undefined || lsn >= row.lsn_first + row.n) return undefined;
    if (logRowChecksum(row.lsn_first, row.n, row.batch, row.body) !== row.crc) throw new DamagedRowError('log', `of batch ${row.batch} (LSN ${row.lsn_first}..${row.lsn_first + row.n - 1})`);
    const records = decodeLogBody(row.body, row.n);
    this.remember(`${segment.name}:${row.lsn_first}`, row.lsn_first, records);
    return records[lsn - row.lsn_first]!.body;
  }

  /** Keeps a row's records for `recordAt`, dropping the oldest kept past DECODED_CHARS_MAX. */
  private remember(key: string, first: number, records: readonly LogRecord[]): void {
    let chars = 0;
    for (const record of records) chars += record.body.length;
    while (this.decoded.size > 0 && this.decodedChars + chars > DECODED_CHARS_MAX) {
      const [oldest, entry] = this.decoded.entries().next().value!;
      this.decoded.delete(oldest);
      this.decodedChars -= entry.chars;
    }
    this.decoded.set(key, { first, records, chars });
    this.decodedChars += chars;
  }

  /** Deletes records from `lsn` on (a torn tail: the newest batch); a v2 row holding `lsn` goes whole. */
  cutFrom(lsn: number): number {
    this.decoded.clear();
    this.decodedChars = 0;
    this.appended = null;
    let deleted = 0;
    for (let i = 0; i < this.segments.length; i += 1) {
      const segment = this.segments[i]!;
      if (segment.lastLsn === null || segment.lastLsn < lsn) continue;
      if (segment.version === 1) {
        deleted += this.db.prepare(`DELETE FROM ${segment.name} WHERE lsn >= ?`).run(lsn).changes;
        this.segments[i] = this.loadV1(segment.name);
      } else {
        const from = (this.db.prepare(`SELECT max(lsn_first) FROM ${segment.name} WHERE lsn_first <= ?`).pluck().get(lsn) as number | null) ?? lsn;
        deleted += (this.db.prepare(`SELECT coalesce(sum(n), 0) FROM ${segment.name} WHERE lsn_first >= ?`).pluck().get(from) as number);
        this.db.prepare(`DELETE FROM ${segment.name} WHERE lsn_first >= ?`).run(from);
        this.segments[i] = this.loadV2(segment.name);
      }
    }
    return deleted;
  }

  /**
   * Takes the oldest sealed segment out of the live log if no recovery needs it: each partition with
   * records in it has two kept images at or above its last record there, and the segment ends at or
   * below `ceilingLsn`. A v1 segment is dropped (no row points into one); a v2 segment's rows move into
   * `log_archive`, as cold, idempotency and event rows point into its records: its deflated rows are
   * copied once (~120 B a payment), where copying each entity's body into its row before a drop wrote
   * ~1 KB a payment and took ~10 µs of it.
   * Otherwise names the partitions that lack such images (an image more of each unblocks it).
   */
  dropOldest(ceilingLsn: number, imagesOf: (partition: number) => { count: number; minLsn: number }): { dropped: { records: number; lastLsn: number; lastBatch: number } | null; blockers: number[] } {
    const oldest = this.segments[0]!;
    if (this.segments.length < 2) return { dropped: null, blockers: [] };
    if (oldest.lastLsn !== null && oldest.lastLsn > ceilingLsn) return { dropped: null, blockers: [] };
    const blockers: number[] = [];
    for (const [partition, maxLsn] of this.maxOf(oldest)) {
      const images = imagesOf(partition);
      if (images.count < 2 || images.minLsn < maxLsn) blockers.push(partition);
    }
    if (blockers.length > 0) return { dropped: null, blockers };
    this.rowAt.delete(oldest.name);
    if (oldest.version === 2 && oldest.firstLsn !== null && oldest.lastLsn !== null) {
      this.db.exec(logSegmentSql(ARCHIVE_TABLE).replace('CREATE TABLE', 'CREATE TABLE IF NOT EXISTS'));
      this.db.exec(`INSERT INTO ${ARCHIVE_TABLE} (lsn_first, n, batch, body, crc) SELECT lsn_first, n, batch, body, crc FROM ${oldest.name}`);
      this.archive = { firstLsn: this.archive?.firstLsn ?? oldest.firstLsn, lastLsn: oldest.lastLsn };
      // Decoded rows stay valid (same records, same LSNs): only the table they are read from changes.
    } else {
      this.decoded.clear();
      this.decodedChars = 0;
    }
    this.db.exec(`DROP TABLE ${oldest.name}`);
    this.segments.shift();
    return { dropped: { records: oldest.records, lastLsn: oldest.lastLsn ?? 0, lastBatch: oldest.lastBatch ?? 0 }, blockers: [] };
  }

  /** Archived rows that fail their checksum (`kobo verify`), as [first LSN, batch]. */
  *damagedArchiveRows(): IterableIterator<{ lsnFirst: number; batch: number }> {
    if (this.archive === null) return;
    for (const row of this.db.prepare(`SELECT lsn_first, n, batch, body, crc FROM ${ARCHIVE_TABLE} ORDER BY lsn_first`).iterate() as IterableIterator<{ lsn_first: number; n: number; batch: number; body: Buffer; crc: number }>) {
      if (logRowChecksum(row.lsn_first, row.n, row.batch, row.body) !== row.crc) yield { lsnFirst: row.lsn_first, batch: row.batch };
    }
  }

  /** Records kept in the archive (verify and tests). */
  archivedRecords(): number {
    return this.archive === null ? 0 : this.archive.lastLsn - this.archive.firstLsn + 1;
  }

  /** Segment names and versions, oldest first (verify and tests). */
  list(): Array<{ name: string; version: 1 | 2; records: number }> {
    return this.segments.map((s) => ({ name: s.name, version: s.version, records: s.records }));
  }
}

// The WAL's records live in segment tables (wal_0, wal_1, …, in LSN order): the newest takes the
// appends, and truncation drops whole old segments. Runs in the shard (or CLI) that owns the file.
// Why: deleting old records row by row made sqlite rebalance b-tree pages (every kept cell moved again
// and again), ~50 µs of work per record and 100–300 ms commits; a DROP TABLE frees pages in bulk.
// Invariant: a segment is dropped only when every record in it is covered by both kept images of its
// partition and is older than the retained tail. A view named `wal` shows all segments (for operators).
import type Database from 'better-sqlite3';
import type { WalRow } from './shard-store.ts';

/** Records per segment by default (KOBO_WAL_SEGMENT_RECORDS): a drop frees ~3.5 MB of pages in 7–18 ms (measured; 10,000 took 30–48 ms). */
export const WAL_SEGMENT_RECORDS = 2_500;

const SEGMENT_NAME = /^wal_(\d+)$/;

interface Segment {
  name: string;
  /** Highest LSN in the segment per partition (null: not read yet; a sealed segment's never changes). */
  maxByPartition: Map<number, number> | null;
  lastLsn: number | null;
  records: number;
}

export class WalSegments {
  private segments: Segment[] = [];
  private insert: Database.Statement | null = null;

  private readonly segmentRecords: number;

  constructor(
    private readonly db: Database.Database,
    options: { readonly: boolean; segmentRecords: number },
  ) {
    this.segmentRecords = options.segmentRecords;
    const readonly = options.readonly;
    const names = this.tableNames();
    if (readonly) {
      // A file written before segments has one table named `wal`.
      const legacy = this.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'wal'").get() !== undefined;
      this.segments = (legacy ? ['wal', ...names] : names).map((name) => this.load(name));
      return;
    }
    if (this.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'wal'").get() !== undefined) {
      this.db.exec('ALTER TABLE wal RENAME TO wal_0');
      names.unshift('wal_0');
    }
    if (names.length === 0) {
      this.create('wal_1');
      names.push('wal_1');
    }
    this.segments = names.map((name) => this.load(name));
    this.writeView();
    this.prepareInsert();
  }

  private tableNames(): string[] {
    const rows = this.db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'wal\\_%' ESCAPE '\\'").pluck().all() as string[];
    return rows.filter((n) => SEGMENT_NAME.test(n)).sort((a, b) => Number(SEGMENT_NAME.exec(a)![1]) - Number(SEGMENT_NAME.exec(b)![1]));
  }

  /** A segment's LSNs are contiguous (a cut only shortens its tail): two b-tree seeks, no scan. */
  private load(name: string): Segment {
    const row = this.db.prepare(`SELECT min(lsn) AS firstLsn, max(lsn) AS lastLsn FROM ${name}`).get() as { firstLsn: number | null; lastLsn: number | null };
    return { name, maxByPartition: row.lastLsn === null ? new Map() : null, lastLsn: row.lastLsn, records: row.lastLsn === null ? 0 : row.lastLsn - row.firstLsn! + 1 };
  }

  private create(name: string): void {
    this.db.exec(walSegmentSql(name));
  }

  private writeView(): void {
    this.db.exec('DROP VIEW IF EXISTS wal');
    this.db.exec(`CREATE VIEW wal AS ${this.segments.map((s) => `SELECT lsn, partition, batch, body, crc FROM ${s.name}`).join(' UNION ALL ')}`);
  }

  private prepareInsert(): void {
    this.insert = this.db.prepare(`INSERT INTO ${this.open.name} (lsn, partition, batch, body, crc) VALUES (?, ?, ?, ?, ?)`);
  }

  private get open(): Segment {
    return this.segments[this.segments.length - 1]!;
  }

  private maxOf(segment: Segment): Map<number, number> {
    if (segment.maxByPartition === null) {
      const rows = this.db.prepare(`SELECT partition, max(lsn) AS m FROM ${segment.name} GROUP BY partition`).raw().all() as Array<[number, number]>;
      segment.maxByPartition = new Map(rows);
    }
    return segment.maxByPartition;
  }

  /** Appends one record (inside the caller's transaction); a full segment is sealed first. */
  append(lsn: number, partition: number, batch: number, body: string, crc: number): void {
    const open = this.open;
    if (open.records >= this.segmentRecords) {
      this.maxOf(open);
      const next = Number(SEGMENT_NAME.exec(open.name)![1]) + 1;
      this.create(`wal_${next}`);
      this.segments.push({ name: `wal_${next}`, maxByPartition: new Map(), lastLsn: null, records: 0 });
      this.writeView();
      this.prepareInsert();
      return this.append(lsn, partition, batch, body, crc);
    }
    this.insert!.run(lsn, partition, batch, body, crc);
    open.records += 1;
    open.lastLsn = lsn;
    open.maxByPartition?.set(partition, lsn);
  }

  /** The highest LSN and batch still recorded (null: none). */
  last(): { lsn: number | null; batch: number | null } {
    for (let i = this.segments.length - 1; i >= 0; i -= 1) {
      const row = this.db.prepare(`SELECT max(lsn) AS lsn, max(batch) AS batch FROM ${this.segments[i]!.name}`).get() as { lsn: number | null; batch: number | null };
      if (row.lsn !== null) return row;
    }
    return { lsn: null, batch: null };
  }

  first(): number | null {
    for (const segment of this.segments) {
      const row = this.db.prepare(`SELECT min(lsn) AS lsn FROM ${segment.name}`).get() as { lsn: number | null };
      if (row.lsn !== null) return row.lsn;
    }
    return null;
  }

  count(): number {
    return this.segments.reduce((n, s) => n + s.records, 0);
  }

  /** Records after `lsn`, in order, a page at a time (no cursor stays open between pages). */
  *after(lsn: number, pageRecords: number): IterableIterator<WalRow> {
    for (const segment of [...this.segments]) {
      if (segment.lastLsn !== null && segment.lastLsn <= lsn) continue;
      const page = this.db.prepare(`SELECT lsn, partition, batch, body, crc FROM ${segment.name} WHERE lsn > ? ORDER BY lsn LIMIT ?`);
      for (let after = lsn; ; ) {
        const rows = page.all(after, pageRecords) as WalRow[];
        yield* rows;
        if (rows.length < pageRecords) break;
        after = rows[rows.length - 1]!.lsn;
      }
    }
  }

  /** Deletes records from `lsn` on (a torn tail: the open segment's last batch). */
  cutFrom(lsn: number): number {
    let deleted = 0;
    for (const segment of this.segments) {
      if (segment.lastLsn === null || segment.lastLsn < lsn) continue;
      deleted += this.db.prepare(`DELETE FROM ${segment.name} WHERE lsn >= ?`).run(lsn).changes;
      Object.assign(segment, this.load(segment.name));
    }
    return deleted;
  }

  /**
   * Drops the oldest sealed segment if nothing needs it: each partition with records in it has two kept
   * images at or above its last record there, and the segment ends at or below `ceilingLsn`. Otherwise
   * names the partitions that lack such images (an image more of each unblocks it).
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
    // Batches grow with LSNs: the last record's batch is the segment's highest (a lookup, not a scan).
    const lastBatch = oldest.lastLsn === null ? 0 : ((this.db.prepare(`SELECT batch FROM ${oldest.name} WHERE lsn = ?`).get(oldest.lastLsn) as { batch: number } | undefined)?.batch ?? 0);
    this.db.exec(`DROP TABLE ${oldest.name}`);
    this.segments.shift();
    this.writeView();
    return { dropped: { records: oldest.records, lastLsn: oldest.lastLsn ?? 0, lastBatch }, blockers: [] };
  }
}

/** The DDL of one WAL segment table (also what bench/floor-uws.ts writes, so the floor's rows match). */
export function walSegmentSql(name: string): string {
  return `CREATE TABLE ${name} (lsn INTEGER PRIMARY KEY, partition INTEGER NOT NULL, batch INTEGER NOT NULL, body TEXT NOT NULL, crc INTEGER NOT NULL)`;
}

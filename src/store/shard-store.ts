// One shard's SQLite file: the log (one checksummed row per group commit, holding the batch's records) and
// partition snapshots. The rows derived from the log (list index, finished entities, idempotency records,
// expiries) live beside it in the derived file, reached through ShardDerived (shard-derived.ts). Runs inside
// the shard worker that owns the file (the CLI opens it read-only while a server runs, or alone).
// Invariant: a batch's log row is one sqlite transaction: all of it or none. Derived rows are written
// later (PendingDerived) and are always implied by durable log rows.
import type Database from 'better-sqlite3';
import { openDatabase, SHARD_PAGE_SIZE_BYTES } from './open-database.ts';
import type { ColdReader, EntityKind, IdempotencyRecord } from './tiers.ts';
import { Statements } from './statements.ts';
import type { IdemLog } from './idem-log.ts';
import type { DueLog } from './due-log.ts';
import { LogSegments, WAL_SEGMENT_RECORDS, walChecksum, type EncodedRow, type LogEntry } from '../journal/log-segments.ts';
import type { LogRecord } from '../journal/log-record.ts';
import type { DerivedBatch, DerivedPart } from './derived-rows.ts';
import type { ColdTable } from './cold-table.ts';
import { createdInLog, eventInLog, pointIntoLog, storedInLog, withoutBodies } from './log-pointers.ts';
import { JournalSync } from './journal-sync.ts';
import { prepareShardSchema } from './shard-schema.ts';
import { SnapshotTable, type SnapshotRow } from './snapshot-table.ts';
import { ShardDerived } from './shard-derived.ts';
import { LogCheckpoints } from './log-checkpoints.ts';
import type { EntryChange, EntryQuery, ListChange, ListIndex, ListKind, ListQuery, ListRow } from './list-index.ts';

export type { IdemChange } from './idem-log.ts';
export type { ColdRow } from './cold-table.ts';
export { snapshotChecksum, type SnapshotRow } from './snapshot-table.ts';
export { openDatabase, SHARD_PAGE_SIZE_BYTES, DERIVED_PAGE_SIZE_BYTES, WAL_CHECKPOINT_BYTES } from './open-database.ts';
export { walChecksum };
export type BatchExtras = DerivedBatch;
/** One log record as replay reads it (`ok`: its row passed its checksum). */
export type WalRow = LogEntry;

export class ShardStore implements ColdReader {
  readonly db: Database.Database;
  private nextLsn: number;
  private nextBatch: number;
  /** The log's segment tables. */
  private readonly wal: LogSegments;
  private readonly snapshots: SnapshotTable;
  private readonly appendTx: (records: readonly LogRecord[]) => void;
  private readonly statements: Statements;
  /** The rows derived from the log: waiting in memory, or in the derived file beside this one. */
  readonly derived: ShardDerived;
  /**
   * While recovery replays record L, a cold read must see the entity as it was before L (a later
   * version may already be on disk); Infinity when live.
   */
  asOfLsn = Number.POSITIVE_INFINITY;
  private readonly journalSync: JournalSync;
  private logCheckpoints: LogCheckpoints | null = null;

  /** `deferredSync`: commits are not fsynced by sqlite; the owner calls syncJournal before answering. */
  constructor(file: string, options: { readonly?: boolean; deferredSync?: boolean; walSegmentRecords?: number } = {}) {
    this.db = openDatabase(file, Object.assign({ pageSizeBytes: SHARD_PAGE_SIZE_BYTES }, options));
    this.statements = new Statements(this.db);
    this.journalSync = new JournalSync(`${file}-wal`);
    if (options.readonly !== true) prepareShardSchema(this.db);
    if (options.readonly === true) {
      // A reader (verify, while a server may be writing) sees one moment of the file throughout: the
      // server may drop a WAL segment or take an image meanwhile, which this read transaction never sees.
      this.db.exec('BEGIN');
      this.db.prepare('SELECT count(*) FROM sqlite_master').get();
    }
    this.wal = new LogSegments(this.db, { readonly: options.readonly === true, segmentRecords: options.walSegmentRecords ?? WAL_SEGMENT_RECORDS });
    const last = this.wal.last();
    this.derived = new ShardDerived(file, this.db, this.wal, options.readonly === true);
    const floor = this.walFloor();
    this.nextLsn = Math.max(last.lsn ?? 0, floor.lsn, Number(this.getMeta('base_lsn') ?? '0')) + 1;
    // The derived file commits apart from the log: after a power loss it may hold rows of records the log
    // never made durable (list rows run ahead of the log's fsync). They go, from every table (rare: a scan).
    if (options.readonly !== true && this.derived.lastLsn >= this.nextLsn) this.derived.cutFrom(this.nextLsn);
    this.nextBatch = Math.max(last.batch ?? 0, floor.batch) + 1;
    this.snapshots = new SnapshotTable(this.db);
    this.appendTx = this.db.transaction((records: readonly LogRecord[]) => this.wal.append(this.nextLsn, this.nextBatch, records));
  }

  /** False only for a read-only open of a file written before the cold and idempotency tables existed. */
  get tiered(): boolean {
    return this.derived.tiered;
  }

  get idem(): IdemLog {
    return this.derived.idem;
  }

  /** Finished entities, by id. */
  get cold(): ColdTable {
    return this.derived.cold;
  }

  /** Waiting sandbox collections by expiry (the sweep's index). */
  get due(): DueLog {
    return this.derived.due;
  }

  /** List rows and wallet ledger entries (null: a read-only open of a file from before lists). */
  get lists(): ListIndex | null {
    return this.derived.lists;
  }

  /** The connection holding the cold, idempotency and expiry tables (the derived file's, once moved). */
  get rowsDb(): Database.Database {
    return this.derived.rowsDb;
  }

  /** The derived file's connection (verify checks it; null: a read-only open of a dir that has none). */
  get derivedDb(): Database.Database | null {
    return this.derived.db;
  }

  /** The connection holding the list index (null: none). */
  get listsDb(): Database.Database | null {
    return this.derived.lists === null ? null : (this.derived.db ?? this.db);
  }

  private stmt(sql: string): Database.Statement {
    return this.statements.get(sql);
  }

  /** The highest LSN and batch ever truncated away, so numbering never goes back. */
  private walFloor(): { lsn: number; batch: number } {
    const [lsn, batch] = (this.getMeta('wal_floor') ?? '0:0').split(':').map(Number);
    return { lsn: lsn ?? 0, batch: batch ?? 0 };
  }

  read(kind: EntityKind, id: string): string | undefined {
    return this.derived.read(kind, id, this.asOfLsn);
  }

  readExact(kind: EntityKind, id: string, lsn: number): string | undefined {
    return this.derived.readExact(kind, id, lsn);
  }

  readIdemAt(scope: string, seq: number): IdempotencyRecord | undefined {
    return this.derived.readIdemAt(scope, seq);
  }

  /** Every stored key as flat pairs [hash, packed location, …] for the front end's index. */
  idemLocations(): Float64Array {
    return this.derived.idemLocations();
  }

  /** The entity as the log record at `lsn` created it (a cold row that points into the log). */
  createdInLog(kind: EntityKind, id: string, lsn: number): string {
    return createdInLog(this.wal, kind, id, lsn);
  }

  /** The stored reply of `scope` in the log record at `lsn` (an idempotency row that points into the log). */
  storedInLog(scope: string, lsn: number): { json?: string; error?: { code: string; message: string } } {
    return storedInLog(this.wal, scope, lsn);
  }

  /** Event `id` as the `outbox.added` of the log record at `lsn` holds it (a row stored empty; a backup copies it whole). */
  eventInLog(id: string, lsn: number): string {
    return eventInLog(this.wal, id, lsn);
  }

  /** A page of list rows, waiting ones merged with the index's (see ShardDerived.listPage). */
  listPage(q: ListQuery): ListRow[] {
    return this.derived.listPage(q);
  }

  /** One list row by id (an event), waiting or indexed. */
  listRow(owner: string, kind: ListKind, id: string): ListRow | undefined {
    return this.derived.listRow(owner, kind, id);
  }

  /** A page of a wallet's ledger entries: the index's range merged with the waiting ones. */
  entriesPage(q: EntryQuery): EntryChange[] {
    return this.derived.entriesPage(q);
  }

  /** List rows and entries written now and committed (a restore, a rebuild of the index). */
  writeListsNow(list: readonly ListChange[], entries: readonly EntryChange[]): void {
    this.derived.writeNow({ cold: [], idem: [], due: [], list, entries });
  }

  /** Rows waiting to be written. */
  get derivedPending(): number {
    return this.derived.pendingRows;
  }

  /** What the waiting rows hold, in characters (the runtime writes them when it passes its bound). */
  get derivedWeight(): number {
    return this.derived.pendingWeight;
  }

  /**
   * Writes the oldest waiting derived rows (all by default) into the derived file's open transaction;
   * cold, idempotency and expiry rows only of records up to `rowsLsnMax` (the log's durable end). Losing
   * them to a crash loses nothing: recovery derives them again from the log. Returns the rows written.
   */
  writeDerived(rowsMax = Number.POSITIVE_INFINITY, part: DerivedPart = 'all', rowsLsnMax = Number.POSITIVE_INFINITY): number {
    return this.derived.write(rowsMax, part, rowsLsnMax);
  }

  /** Writes derived rows at once and commits them (recovery: what replay derived). */
  writeDerivedNow(derived: DerivedBatch): void {
    this.derived.writeNow(derived);
  }

  /** Hands over (and forgets) every waiting derived row: a backup writes what a read-only replay derived. */
  takeHeldDerived(): DerivedBatch {
    return this.derived.takeHeld();
  }

  /** Derived rows a read-only replay found: kept in memory, where reads find them (nothing is written). */
  holdDerived(derived: DerivedBatch): void {
    this.derived.hold(derived);
  }

  /**
   * Commits the derived file and fsyncs it off this thread; afterwards an image of any LSN none of whose
   * rows waited in memory may be taken, and the keys it hands over (their deletion durable) may be reused.
   */
  derivedDurable(done: (error: Error | null, freed: Array<[number, number]>) => void): void {
    this.derived.durable(this.nextLsn, done);
  }

  /** The live shard's journal checkpoints on a worker thread from now on (log-checkpoints.ts). */
  checkpointLogInWorker(commitsBetween?: number): LogCheckpoints | null {
    if (this.db.readonly) return null;
    this.logCheckpoints ??= new LogCheckpoints(this.db, this.db.name, commitsBetween);
    return this.logCheckpoints;
  }

  /** Makes every commit so far durable (see journal-sync.ts); the shard answers only after `done`. */
  syncJournal(done: (error: Error | null) => void): void {
    this.journalSync.sync(done);
  }

  /**
   * Takes the oldest WAL segment out of the live log (archived: see LogSegments.dropOldest) if no kept
   * snapshot needs it: per partition, every record in it is at or below the OLDER of its two kept images
   * (so a damaged newest image can still fall back), and it holds none of the newest `retainRecords`.
   * One sqlite transaction per call (a kill -9 leaves the segment live or archived); the shard calls it
   * once per event-loop turn until it drops nothing. `blockers`: partitions that need another image first.
   * `lsnMax`: no record above it leaves (the owner passes what every copy of the log has acknowledged).
   */
  truncateWal(retainRecords: number, lsnMax = Number.POSITIVE_INFINITY): { dropped: number; blockers: number[] } {
    const ceiling = Math.min(this.nextLsn - 1 - retainRecords, lsnMax);
    if (ceiling <= 0) return { dropped: 0, blockers: [] };
    const images = new Map(
      (this.stmt('SELECT partition, min(lsn) AS lsn, count(*) AS n FROM snapshots GROUP BY partition').all() as Array<{ partition: number; lsn: number; n: number }>).map((r) => [r.partition, { count: r.n, minLsn: r.lsn }]),
    );
    return this.db.transaction(() => {
      const { dropped, blockers } = this.wal.dropOldest(ceiling, (partition) => images.get(partition) ?? { count: 0, minLsn: 0 });
      if (dropped === null) return { dropped: 0, blockers };
      const floor = this.walFloor();
      this.setMeta('wal_floor', `${Math.max(floor.lsn, dropped.lastLsn)}:${Math.max(floor.batch, dropped.lastBatch)}`);
      return { dropped: dropped.records, blockers };
    })();
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

  /**
   * Appends one batch as one log row, in one sqlite transaction (durable at return, or at the next
   * syncJournal when opened with `deferredSync`). Its derived rows wait in memory until `writeDerived`
   * puts them in the derived file; those that would repeat the records just appended wait without their
   * bodies (they point into them).
   */
  appendBatch(records: readonly LogRecord[], extras: BatchExtras = { cold: [], idem: [], due: [] }): void {
    if (records.length > 0) {
      this.appendTx(records);
      this.logCheckpoints?.afterCommit();
    }
    const derivedRows = extras.cold.length + extras.idem.length + extras.due.length + (extras.list?.length ?? 0) + (extras.entries?.length ?? 0);
    if (derivedRows > 0) this.derived.add(withoutBodies(pointIntoLog(this.wal, extras)));
    this.nextLsn += records.length;
    if (records.length > 0) {
      this.nextBatch += 1;
      if (this.onRow !== null) this.onRow(this.wal.lastRow!);
    }
  }

  /** Sees each log row appendBatch commits (a replicated journal ships it); null: nobody. */
  onRow: ((row: EncodedRow) => void) | null = null;

  /**
   * Appends rows exactly as another copy of the log holds them, with `meta` entries, in one sqlite
   * transaction (a follower applying what its owner shipped). Rows must continue the numbering.
   */
  appendShipped(rows: readonly EncodedRow[], meta: ReadonlyArray<[string, string]> = []): void {
    this.db.transaction(() => {
      for (const row of rows) {
        if (row.lsnFirst !== this.nextLsn) throw new Error(`appendShipped: row starts at LSN ${row.lsnFirst}, the log continues at ${this.nextLsn}`);
        this.wal.appendEncoded(row);
        this.nextLsn = row.lsnFirst + row.n;
        this.nextBatch = row.batch + 1;
      }
      for (const [key, value] of meta) this.setMeta(key, value);
    })();
  }

  /** Numbering and checksum of the log row that starts at `lsnFirst`, if this copy holds one. */
  rowAt(lsnFirst: number): { n: number; batch: number; crc: number } | undefined {
    return this.wal.rowHeader(lsnFirst);
  }

  /**
   * Drops everything from `lsn` on that another copy of the log does not hold: the rows, the rows
   * derived from them, and images taken at or after it (a former owner's unreplicated tail).
   */
  cutDiverged(lsn: number): number {
    const cut = this.cutFrom(lsn);
    this.db.prepare('DELETE FROM snapshots WHERE lsn >= ?').run(lsn);
    this.nextBatch = (this.wal.last().batch ?? this.walFloor().batch) + 1;
    return cut;
  }

  /**
   * WAL records after `lsn`, in order, read a page at a time: no cursor stays open between pages, so
   * the caller may write to the file while it walks (recovery writes what replay passivates).
   */
  *walAfter(lsn: number, pageRecords = 2_000): IterableIterator<WalRow> {
    yield* this.wal.after(lsn, pageRecords);
  }

  walCount(): number {
    return this.wal.count();
  }

  lastBatch(): number {
    return this.nextBatch - 1;
  }

  /**
   * Removes the records of a torn final batch (from `lsn` on), with the cold and idempotency rows they
   * wrote. Rare (start-up after a torn write), so the LSN scans of cold and idem need no index: every
   * request would pay for one.
   */
  cutFrom(lsn: number): number {
    const cut = this.wal.cutFrom(lsn);
    this.derived.cutFrom(lsn);
    this.nextLsn = Math.max(this.wal.last().lsn ?? 0, this.walFloor().lsn, Number(this.getMeta('base_lsn') ?? '0')) + 1;
    return cut;
  }

  /** Archived log rows that fail their checksum (rows of cold entities and stored replies point into them). */
  damagedArchiveRows(): IterableIterator<{ lsnFirst: number; batch: number }> {
    return this.wal.damagedArchiveRows();
  }

  /** Records truncation archived (out of the live log, kept for the rows pointing into them). */
  archivedRecords(): number {
    return this.wal.archivedRecords();
  }

  /** The oldest LSN still in the WAL, or null when it is empty. */
  walFirstLsn(): number | null {
    return this.wal.first();
  }

  /** Ids of every passivated entity of a kind (verify's whole-history checks). */
  coldIds(kind: EntityKind): IterableIterator<string> {
    return this.derived.coldIds(kind);
  }

  coldCount(): number {
    return this.derived.cold.count();
  }

  /**
   * Writes a partition image. Recovery starts from it and derives no row of a record at or below it
   * again, so those rows must all be durable in the derived file first: they are, after `derivedDurable`
   * (the shard's image rounds); otherwise the derived file is committed and fsynced here, on this thread.
   */
  writeSnapshot(row: SnapshotRow): void {
    this.derived.beforeImage(row.lsn, this.nextLsn);
    this.snapshots.write(row);
  }

  /** Snapshots of a partition, newest first. */
  snapshotsOf(partition: number): SnapshotRow[] {
    return this.snapshots.of(partition);
  }

  close(): void {
    this.logCheckpoints?.close();
    this.derived.close();
    this.db.close();
    this.journalSync.close();
  }
}

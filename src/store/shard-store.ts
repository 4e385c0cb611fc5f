// One shard's SQLite file: the log (one checksummed row per group commit, holding the batch's records),
// partition snapshots, and the tables derived from the log: finished entities (cold), idempotency
// records and collection expiries (due). Runs inside the shard worker that owns the file (the CLI opens
// it read-only while a server runs, or alone).
// Invariant: a batch's log row is one sqlite transaction: all of it or none. Derived rows are written
// later (PendingDerived) and are always implied by durable log rows.
import assert from 'node:assert/strict';
import type Database from 'better-sqlite3';
import { openDatabase, SHARD_PAGE_SIZE_BYTES } from './open-database.ts';
import type { ColdReader, EntityKind, IdempotencyRecord } from './tiers.ts';
import { Statements } from './statements.ts';
import { IdemLog, IN_LOG_JSON, type IdemChange } from './idem-log.ts';
import { DueLog } from './due-log.ts';
import { LogSegments, WAL_SEGMENT_RECORDS, walChecksum, type EncodedRow, type LogEntry } from '../journal/log-segments.ts';
import type { LogRecord } from '../journal/log-record.ts';
import { PendingDerived, type DerivedBatch, type DerivedPart } from './derived-rows.ts';
import { ColdTable, IN_LOG_BODY } from './cold-table.ts';
import { createdInLog, eventInLog, pointIntoLog, storedInLog, withoutBodies } from './log-pointers.ts';
import { JournalSync } from './journal-sync.ts';
import { prepareShardSchema } from './shard-schema.ts';
import { SnapshotTable, type SnapshotRow } from './snapshot-table.ts';
import { ListFile, shardHoldsLists } from './list-file.ts';
import { EVENT_IN_LOG_BODY, ListIndex, type EntryChange, type EntryQuery, type IndexedRow, type ListChange, type ListKind, type ListQuery, type ListRow } from './list-index.ts';

export type { IdemChange } from './idem-log.ts';
export type { ColdRow } from './cold-table.ts';
export { snapshotChecksum, type SnapshotRow } from './snapshot-table.ts';
export { openDatabase, SHARD_PAGE_SIZE_BYTES, WAL_CHECKPOINT_BYTES } from './open-database.ts';
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
  private readonly appendTx: (records: readonly LogRecord[], derived: DerivedBatch | null) => Array<[number, number]>;
  private readonly writeDerivedTx: (derived: DerivedBatch) => Array<[number, number]>;
  /** Derived rows of durable log rows, not yet in their tables (reads look here first). */
  private readonly pending = new PendingDerived();
  private readonly statements: Statements;
  /**
   * While recovery replays record L, a cold read must see the entity as it was before L (a later
   * version may already be on disk); Infinity when live.
   */
  asOfLsn = Number.POSITIVE_INFINITY;
  /** False only for a read-only open of a file written before the cold and idempotency tables existed. */
  readonly tiered: boolean;
  readonly idem: IdemLog;
  /** Finished entities, by id. */
  readonly cold: ColdTable;
  /** Waiting sandbox collections by expiry (the sweep's index). */
  readonly due: DueLog;
  /** List rows and wallet ledger entries (null: a read-only open of a file from before lists). */
  readonly lists: ListIndex | null;
  /**
   * The list index's own file (list-file.ts); null only for a read-only open of a shard file that still
   * holds its list tables itself (or has none), whose `lists` is then read from the shard file.
   */
  private readonly listFile: ListFile | null;
  /**
   * Every list row of the records up to this LSN is committed and fsynced in the list file (an image up
   * to it may be written). Set by each sync from what was written then and what still waited.
   */
  private listsDurableThrough = -1;
  /** False only for a read-only open of a file whose idempotency records predate `idem_log`. */
  private readonly idemLogged: boolean;
  private readonly journalSync: JournalSync;

  /** `deferredSync`: commits are not fsynced by sqlite; the owner calls syncJournal before answering. */
  constructor(file: string, options: { readonly?: boolean; deferredSync?: boolean; walSegmentRecords?: number } = {}) {
    this.db = openDatabase(file, Object.assign({ pageSizeBytes: SHARD_PAGE_SIZE_BYTES }, options));
    this.statements = new Statements(this.db);
    this.journalSync = new JournalSync(`${file}-wal`);
    this.idem = new IdemLog(this.db);
    this.due = new DueLog(this.db);
    this.cold = new ColdTable(this.db);
    if (options.readonly !== true) prepareShardSchema(this.db, this.idem);
    if (options.readonly === true) {
      // A reader (verify, while a server may be writing) sees one moment of the file throughout: the
      // server may drop a WAL segment or take an image meanwhile, which this read transaction never sees.
      this.db.exec('BEGIN');
      this.db.prepare('SELECT count(*) FROM sqlite_master').get();
    }
    this.wal = new LogSegments(this.db, { readonly: options.readonly === true, segmentRecords: options.walSegmentRecords ?? WAL_SEGMENT_RECORDS });
    const last = this.wal.last();
    this.tiered = this.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'cold'").get() !== undefined;
    this.idemLogged = this.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'idem_log'").get() !== undefined;
    if (options.readonly === true) {
      this.listFile = shardHoldsLists(this.db) ? null : ListFile.openReadonly(file);
      this.lists = this.listFile?.index ?? (shardHoldsLists(this.db) ? new ListIndex(this.db) : null);
    } else {
      this.listFile = ListFile.openWritable(file, this.db);
      this.lists = this.listFile.index;
    }
    const floor = this.walFloor();
    this.nextLsn = Math.max(last.lsn ?? 0, floor.lsn, Number(this.getMeta('base_lsn') ?? '0')) + 1;
    // The list file commits apart from the log: after a power loss it may hold rows of records the log
    // never made durable. They go (rare: a scan of its tables).
    if (options.readonly !== true && this.listFile !== null && this.listFile.lastLsn >= this.nextLsn) this.listFile.cutFrom(this.nextLsn);
    this.nextBatch = Math.max(last.batch ?? 0, floor.batch) + 1;
    this.snapshots = new SnapshotTable(this.db);
    const derivedTx = this.db.transaction((derived: DerivedBatch) => this.writeDerivedRows(derived));
    this.writeDerivedTx = (derived) => this.forgettingNumbersOnFailure(() => derivedTx(derived));
    const appendTx = this.db.transaction((records: readonly LogRecord[], derived: DerivedBatch | null) => {
      this.wal.append(this.nextLsn, this.nextBatch, records);
      return derived === null ? [] : this.writeDerivedRows(derived);
    });
    this.appendTx = (records, derived) => (derived === null ? appendTx(records, null) : this.forgettingNumbersOnFailure(() => appendTx(records, derived)));
  }

  /** Runs a write of list rows; if it throws (its transaction rolled back), the list index forgets the numbers it cached. */
  private forgettingNumbersOnFailure<T>(write: () => T): T {
    try {
      return write();
    } catch (error) {
      this.idem.forgetNumbers();
      this.due.forgetNumbers();
      throw error;
    }
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
    const waiting = this.pending.readCold(kind, id, this.asOfLsn);
    if (waiting !== undefined) return waiting.inLog === true ? this.createdInLog(kind, id, waiting.lsn) : waiting.body;
    if (!this.tiered) return undefined;
    const row = this.cold.readRow(kind, id, this.asOfLsn);
    if (row === undefined || row.body !== IN_LOG_BODY) return row?.body;
    return this.createdInLog(kind, id, row.lsn);
  }

  /** The entity as the log record at `lsn` created it (a cold row that points into the log). */
  createdInLog(kind: EntityKind, id: string, lsn: number): string {
    return createdInLog(this.wal, kind, id, lsn);
  }

  /** The stored reply of `scope` in the log record at `lsn` (an idempotency row that points into the log). */
  storedInLog(scope: string, lsn: number): { json?: string; error?: { code: string; message: string } } {
    return storedInLog(this.wal, scope, lsn);
  }

  readExact(kind: EntityKind, id: string, lsn: number): string | undefined {
    const waiting = this.pending.readColdExact(kind, id, lsn);
    if (waiting !== undefined) return waiting.inLog === true ? this.createdInLog(kind, id, lsn) : waiting.body;
    return this.tiered ? this.cold.readExact(kind, id, lsn) : undefined;
  }

  /** Writes derived rows into their tables (inside the caller's transaction); returns the freed idempotency keys. */
  private writeDerivedRows(derived: DerivedBatch): Array<[number, number]> {
    const pointed = pointIntoLog(this.wal, derived);
    this.cold.write(pointed.cold);
    this.due.apply(pointed.due);
    this.applyLists(pointed.list ?? [], pointed.entries ?? []);
    return this.applyIdem(pointed.idem);
  }

  /** List rows into the list file's open transaction (the legacy in-file index only for tests of old files). */
  private applyLists(list: readonly ListChange[], entries: readonly EntryChange[]): void {
    if (list.length === 0 && entries.length === 0) return;
    if (this.listFile !== null) this.listFile.apply(list, entries);
    else this.lists?.apply(list, entries);
  }

  /**
   * Writes list rows and entries now and commits them (a restore, a rebuild of the index): one
   * transaction of the list file, outside any of the shard file.
   */
  writeListsNow(list: readonly ListChange[], entries: readonly EntryChange[]): void {
    this.applyLists(list, entries);
    this.listFile?.commit();
  }

  /**
   * The list file's checkpoints run on a worker thread from now on (a server's shard); `resume` is called
   * when one ends, since list rows wait in memory while one runs (`listsCheckpointing`).
   */
  checkpointListsInWorker(resume: () => void): void {
    if (this.listFile === null) return;
    this.listFile.checkpointInWorker();
    this.listFile.onCheckpointed = resume;
  }

  get listsCheckpointing(): boolean {
    return this.listFile?.checkpointing === true;
  }

  /** The list file's connection (verify checks its rows; null: the lists are in the shard file, or none). */
  get listsDb(): Database.Database | null {
    return this.listFile?.db ?? (this.lists === null ? null : this.db);
  }

  /**
   * Commits the list file and fsyncs it on the libuv pool: afterwards an image of any LSN whose list rows
   * were all written (no list row at or below it waits in memory) may be taken.
   */
  listsDurable(done: (error: Error | null) => void): void {
    if (this.listFile === null) {
      done(null);
      return;
    }
    const through = this.listsCoveredLsn();
    this.listFile.durable((error) => {
      if (error === null && through > this.listsDurableThrough) this.listsDurableThrough = through;
      done(error);
    });
  }

  /** The LSN up to which every list row is written: none of a record up to it waits in memory. */
  private listsCoveredLsn(): number {
    return Math.min(this.nextLsn - 1, this.pending.oldestListLsn - 1);
  }

  /**
   * A page of list rows: the index's range merged with the rows still waiting in memory (a waiting row
   * is newer than the index's row of the same id). The index is asked for `rows` plus the waiting rows
   * of that owner and kind, so the rows a waiting one replaces never leave the page short.
   */
  listPage(q: ListQuery): ListRow[] {
    const waiting = this.pending.listWaiting(q.owner, q.kind);
    const indexed = this.lists === null ? [] : this.lists.page(Object.assign({}, q, { rows: q.rows + waiting.size })).filter((row) => !waiting.has(row.id)).map((row) => this.resolved(row));
    const merged = [...indexed, ...this.pending.listMatching(q)];
    merged.sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0) * (q.order === 'desc' ? 1 : -1));
    return merged.slice(0, q.rows);
  }

  /** One list row by id (an event), waiting or indexed. */
  listRow(owner: string, kind: ListKind, id: string): ListRow | undefined {
    const waiting = this.pending.listWaiting(owner, kind).get(id);
    if (waiting !== undefined) return waiting;
    const row = this.lists?.row(owner, kind, id);
    return row === undefined ? undefined : this.resolved(row);
  }

  /** An indexed row with its body: an event stored empty takes it from its log record. */
  private resolved(row: IndexedRow): ListRow {
    const { lsn, ...rest } = row;
    return row.kind === 'event' && row.body === EVENT_IN_LOG_BODY ? Object.assign({}, rest, { body: this.eventInLog(row.id, lsn) }) : rest;
  }

  /** Event `id` as the `outbox.added` of the log record at `lsn` holds it (a row stored empty; a backup copies it whole). */
  eventInLog(id: string, lsn: number): string {
    return eventInLog(this.wal, id, lsn);
  }

  /** A page of a wallet's ledger entries: the index's range merged with the waiting ones. */
  entriesPage(q: EntryQuery): EntryChange[] {
    const indexed = this.lists === null ? [] : this.lists.entries(q);
    const seen = new Set(indexed.map((e) => e.seq));
    const merged = [...indexed, ...this.pending.entriesMatching(q).filter((e) => !seen.has(e.seq))];
    merged.sort((a, b) => (b.seq - a.seq) * (q.order === 'desc' ? 1 : -1));
    return merged.slice(0, q.rows);
  }

  /** List rows and entries waiting to be written (the runtime hands them to the list file a chunk a turn). */
  get listPending(): number {
    return this.pending.listRows;
  }

  /** Rows waiting to be written. */
  get derivedPending(): number {
    return this.pending.rows;
  }

  /** Cold rows, idempotency changes and expiry rows waiting (the runtime writes them past ROWS_PENDING_MAX). */
  get otherPending(): number {
    return this.pending.otherRows;
  }

  /** What the waiting rows hold, in characters (the runtime writes them when it passes its bound). */
  get derivedWeight(): number {
    return this.pending.weight;
  }

  /**
   * Writes the oldest waiting derived rows of `part` (all of them by default) in one sqlite transaction
   * (made durable by the next syncJournal; losing it to a crash loses nothing, as recovery derives the
   * rows again from the log). Returns the idempotency keys that expiry freed, and whether anything was written.
   */
  writeDerived(rowsMax = Number.POSITIVE_INFINITY, part: DerivedPart = 'all'): { freed: Array<[number, number]>; wrote: boolean } {
    const waiting = part === 'all' ? this.pending.rows : part === 'lists' ? this.pending.listRows : this.pending.otherRows;
    if (waiting === 0) return { freed: [], wrote: false };
    if (part === 'lists') {
      // Only the list file: its open transaction takes them, nothing of the shard file changes.
      const taken = pointIntoLog(this.wal, this.pending.takeSome(rowsMax, part));
      this.applyLists(taken.list ?? [], taken.entries ?? []);
      this.listFile?.commitIfFull();
      return { freed: [], wrote: false };
    }
    const freed = this.writeDerivedTx(this.pending.takeSome(rowsMax, part));
    this.listFile?.commitIfFull();
    return { freed, wrote: true };
  }

  /** Writes derived rows at once, in one transaction (recovery: what replay derived), and commits the list file. */
  writeDerivedNow(derived: DerivedBatch): void {
    this.writeDerivedTx(derived);
    this.listFile?.commit();
  }

  /** Hands over (and forgets) every waiting derived row: a backup writes what a read-only replay derived. */
  takeHeldDerived(): DerivedBatch {
    return this.pending.take();
  }

  /** Derived rows a read-only replay found: kept in memory, where reads find them (nothing is written). */
  holdDerived(derived: DerivedBatch): void {
    this.pending.add(derived);
  }

  applyIdem(changes: readonly IdemChange[]): Array<[number, number]> {
    return this.idem.apply(changes);
  }

  readIdemAt(scope: string, seq: number): IdempotencyRecord | undefined {
    const waiting = this.pending.readIdem(scope, seq);
    if (waiting !== undefined) return waiting.inLog ? Object.assign({}, waiting.record, this.storedInLog(scope, seq)) : waiting.record;
    if (!this.idemLogged) return undefined;
    const record = this.idem.readAt(scope, seq);
    if (record === undefined || record.json !== IN_LOG_JSON) return record;
    const stored = this.storedInLog(scope, seq);
    const { json: _inLog, ...rest } = record;
    return Object.assign({}, rest, stored.json === undefined ? {} : { json: stored.json }, stored.error === undefined ? {} : { error: stored.error });
  }

  /** Every stored key as flat pairs [hash, packed location, …] for the front end's index. */
  idemLocations(): Float64Array {
    return this.idemLogged ? this.idem.locations() : new Float64Array(0);
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
   * syncJournal when opened with `deferredSync`). Its derived rows wait in memory (`writeDerived`),
   * except when the batch expires or forgets idempotency keys: then everything waiting is written with
   * it, so the keys it frees (returned as [hash, packed location]) are gone from the file as they are
   * freed in the front end.
   */
  appendBatch(records: readonly LogRecord[], extras: BatchExtras = { cold: [], idem: [], due: [] }): Array<[number, number]> {
    const derivedRows = extras.cold.length + extras.idem.length + extras.due.length;
    if (records.length === 0 && derivedRows === 0) return [];
    const frees = extras.idem.some((change) => change.op.op !== 'put');
    if (frees) this.pending.add(extras);
    const freed = this.appendTx(records, frees ? this.pending.take() : null);
    // Rows that would repeat the records just appended wait without their bodies (they point into them).
    if (!frees) this.pending.add(withoutBodies(pointIntoLog(this.wal, extras)));
    this.nextLsn += records.length;
    if (records.length > 0) {
      this.nextBatch += 1;
      if (this.onRow !== null) this.onRow(this.wal.lastRow!);
    }
    return freed;
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
    this.pending.take();
    const cut = this.wal.cutFrom(lsn);
    this.cold.cutFrom(lsn);
    this.idem.cutFrom(lsn);
    this.due.cutFrom(lsn);
    if (this.listFile !== null) this.listFile.cutFrom(lsn);
    else this.lists?.cutFrom(lsn);
    this.listsDurableThrough = Math.min(this.listsDurableThrough, lsn - 1);
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
  *coldIds(kind: EntityKind): IterableIterator<string> {
    const seen = new Set<string>();
    for (const id of this.pending.coldIds(kind)) {
      seen.add(id);
      yield id;
    }
    if (this.tiered) for (const id of this.cold.ids(kind)) if (!seen.has(id)) yield id;
  }

  coldCount(): number {
    return this.cold.count();
  }

  /**
   * Writes a partition image. Recovery starts from it and derives no list row of a record at or below
   * it again, so those rows must all be durable in the list file first: they are, after `listsDurable`
   * (the shard's image rounds); otherwise the list file is committed and fsynced here, on this thread.
   */
  writeSnapshot(row: SnapshotRow): void {
    assert(this.pending.oldestListLsn > row.lsn, `an image at LSN ${row.lsn} while list rows of its records wait in memory`);
    if (this.listFile !== null && this.listsDurableThrough < row.lsn) {
      const through = this.listsCoveredLsn();
      this.listFile.durableSync();
      this.listsDurableThrough = Math.max(this.listsDurableThrough, through);
    }
    this.snapshots.write(row);
  }

  /** Snapshots of a partition, newest first. */
  snapshotsOf(partition: number): SnapshotRow[] {
    return this.snapshots.of(partition);
  }

  close(): void {
    this.listFile?.close();
    this.db.close();
    this.journalSync.close();
  }
}

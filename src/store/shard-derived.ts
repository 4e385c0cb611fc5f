// A shard's derived rows: those waiting in memory (PendingDerived) and those in the derived file beside the
// shard file (derived-file.ts), with the reads that merge the two and the bookkeeping of which LSNs are
// covered durably. Runs in the shard worker that owns the files (the CLI opens them read-only, or alone).
// Invariant: an image at LSN L is written only when every derived row of records up to L is committed and
// fsynced in the derived file; a read sees waiting rows first, then the open transaction, then committed rows.
import assert from 'node:assert/strict';
import type Database from 'better-sqlite3';
import type { LogSegments } from '../journal/log-segments.ts';
import type { EntityKind, IdempotencyRecord } from './tiers.ts';
import { IdemLog, IN_LOG_JSON } from './idem-log.ts';
import { DueLog } from './due-log.ts';
import { ColdTable, IN_LOG_BODY } from './cold-table.ts';
import { PendingDerived, type DerivedBatch, type DerivedPart } from './derived-rows.ts';
import { createdInLog, eventInLog, pointIntoLog, storedInLog } from './log-pointers.ts';
import { DerivedFile, shardHoldsLists, shardHoldsRows } from './derived-file.ts';
import { EVENT_IN_LOG_BODY, ListIndex, type EntryChange, type EntryQuery, type IndexedRow, type ListKind, type ListQuery, type ListRow } from './list-index.ts';

function hasTable(db: Database.Database, table: string): boolean {
  return db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(table) !== undefined;
}

export class ShardDerived {
  /** Derived rows of log records, not yet in the derived file (reads look here first). */
  private readonly pending = new PendingDerived();
  /** The derived file; null only for a read-only open of a data dir that has none. */
  private readonly file: DerivedFile | null;
  /** The connection that holds cold, idem_log and due: the derived file's, or (read-only, before the move) the shard file's. */
  readonly rowsDb: Database.Database;
  readonly cold: ColdTable;
  readonly idem: IdemLog;
  readonly due: DueLog;
  /** List rows and wallet ledger entries (null: a read-only open of a file from before lists). */
  readonly lists: ListIndex | null;
  /** False only for a read-only open of a file written before the cold and idempotency tables existed. */
  readonly tiered: boolean;
  /** False only for a read-only open of a file whose idempotency records predate `idem_log`. */
  private readonly idemLogged: boolean;
  /** Every derived row of the records up to this LSN is committed and fsynced (an image up to it may be written). */
  private durableThrough = -1;

  constructor(shardFile: string, shardDb: Database.Database, private readonly wal: LogSegments, readonly: boolean) {
    if (readonly) {
      // A data dir a writable open has not yet moved: each group of tables is read where it still is.
      this.file = DerivedFile.openReadonly(shardFile);
      const rowsInShard = shardHoldsRows(shardDb) || this.file === null || !this.file.has('cold');
      this.rowsDb = rowsInShard ? shardDb : this.file!.db;
      this.cold = new ColdTable(this.rowsDb);
      this.idem = new IdemLog(this.rowsDb);
      this.due = new DueLog(this.rowsDb);
      this.lists = shardHoldsLists(shardDb) ? new ListIndex(shardDb) : (this.file?.has('lists') === true ? this.file.index : null);
    } else {
      this.file = DerivedFile.openWritable(shardFile, shardDb);
      this.rowsDb = this.file.db;
      this.cold = this.file.cold;
      this.idem = this.file.idem;
      this.due = this.file.due;
      this.lists = this.file.index;
    }
    this.tiered = hasTable(this.rowsDb, 'cold');
    this.idemLogged = hasTable(this.rowsDb, 'idem_log');
  }

  /** The derived file's connection (verify checks it), or null when there is none. */
  get db(): Database.Database | null {
    return this.file?.db ?? null;
  }

  /** Highest LSN of the rows the derived file holds (written there, committed or not). */
  get lastLsn(): number {
    return this.file?.lastLsn ?? -1;
  }

  read(kind: EntityKind, id: string, asOfLsn: number): string | undefined {
    const waiting = this.pending.readCold(kind, id, asOfLsn);
    if (waiting !== undefined) return waiting.inLog === true ? createdInLog(this.wal, kind, id, waiting.lsn) : waiting.body;
    if (!this.tiered) return undefined;
    const row = this.cold.readRow(kind, id, asOfLsn);
    if (row === undefined || row.body !== IN_LOG_BODY) return row?.body;
    return createdInLog(this.wal, kind, id, row.lsn);
  }

  readExact(kind: EntityKind, id: string, lsn: number): string | undefined {
    const waiting = this.pending.readColdExact(kind, id, lsn);
    if (waiting !== undefined) return waiting.inLog === true ? createdInLog(this.wal, kind, id, lsn) : waiting.body;
    return this.tiered ? this.cold.readExact(kind, id, lsn) : undefined;
  }

  readIdemAt(scope: string, seq: number): IdempotencyRecord | undefined {
    const waiting = this.pending.readIdem(scope, seq);
    if (waiting !== undefined) return waiting.inLog ? Object.assign({}, waiting.record, storedInLog(this.wal, scope, seq)) : waiting.record;
    if (!this.idemLogged) return undefined;
    const record = this.idem.readAt(scope, seq);
    if (record === undefined || record.json !== IN_LOG_JSON) return record;
    const stored = storedInLog(this.wal, scope, seq);
    const { json: _inLog, ...rest } = record;
    return Object.assign({}, rest, stored.json === undefined ? {} : { json: stored.json }, stored.error === undefined ? {} : { error: stored.error });
  }

  /**
   * Every stored key as flat pairs [hash, packed location, …] for the front end's index: the rows in the
   * file (its open transaction included). Callers write what waits first (the shard's start and index).
   */
  idemLocations(): Float64Array {
    return this.idemLogged ? this.idem.locations() : new Float64Array(0);
  }

  /** Ids of every passivated entity of a kind, waiting or stored (verify's whole-history checks). */
  *coldIds(kind: EntityKind): IterableIterator<string> {
    const seen = new Set<string>();
    for (const id of this.pending.coldIds(kind)) {
      seen.add(id);
      yield id;
    }
    if (this.tiered) for (const id of this.cold.ids(kind)) if (!seen.has(id)) yield id;
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
    return row.kind === 'event' && row.body === EVENT_IN_LOG_BODY ? Object.assign({}, rest, { body: eventInLog(this.wal, row.id, lsn) }) : rest;
  }

  /** A page of a wallet's ledger entries: the index's range merged with the waiting ones. */
  entriesPage(q: EntryQuery): EntryChange[] {
    const indexed = this.lists === null ? [] : this.lists.entries(q);
    const seen = new Set(indexed.map((e) => e.seq));
    const merged = [...indexed, ...this.pending.entriesMatching(q).filter((e) => !seen.has(e.seq))];
    merged.sort((a, b) => (b.seq - a.seq) * (q.order === 'desc' ? 1 : -1));
    return merged.slice(0, q.rows);
  }

  /** A group commit's rows: they wait in memory (the caller has dropped bodies the log holds). */
  add(derived: DerivedBatch): void {
    this.pending.add(derived);
  }

  /** Derived rows a read-only replay found: kept in memory, where reads find them (nothing is written). */
  hold(derived: DerivedBatch): void {
    this.pending.add(derived);
  }

  /** Hands over (and forgets) every waiting row: a backup writes what a read-only replay derived. */
  takeHeld(): DerivedBatch {
    return this.pending.take();
  }

  get pendingRows(): number {
    return this.pending.rows;
  }

  get listPending(): number {
    return this.pending.listRows;
  }

  get pendingWeight(): number {
    return this.pending.weight;
  }

  private get writable(): DerivedFile {
    assert(this.file !== null && !this.file.db.readonly, 'derived rows: a read-only open writes nothing');
    return this.file;
  }

  /**
   * Writes the oldest waiting rows of `part` into the derived file's open transaction, at most `rowsMax`,
   * none of cold, idempotency or expiry rows of a record past `rowsLsnMax` (the log's durable end: a row
   * that deletes, once in the file, cannot be cut back); commits every DERIVED_TX_ROWS_MAX rows, or at once
   * when asked for every row (images, sweeps, stop, the CLI). Returns the rows written.
   */
  write(rowsMax = Number.POSITIVE_INFINITY, part: DerivedPart = 'all', rowsLsnMax = Number.POSITIVE_INFINITY): number {
    const taken = this.pending.takeSome(rowsMax, part, rowsLsnMax);
    const file = this.writable;
    file.apply(pointIntoLog(this.wal, taken));
    if (rowsMax === Number.POSITIVE_INFINITY) file.commit();
    else file.commitIfFull();
    return taken.cold.length + taken.idem.length + taken.due.length + (taken.list?.length ?? 0) + (taken.entries?.length ?? 0);
  }

  /** Writes rows at once and commits them (recovery: what replay derived; restore: a backup's rows). */
  writeNow(derived: DerivedBatch): void {
    const file = this.writable;
    file.apply(pointIntoLog(this.wal, derived));
    file.commit();
  }

  /** Idempotency keys expiry freed in the file that `durable` has not handed over yet. */
  get freedWaiting(): number {
    return this.file?.freedWaiting ?? 0;
  }

  get checkpointing(): boolean {
    return this.file?.checkpointing === true;
  }

  /** Checkpoints of the derived file on a worker thread; `resume` runs when one ends (rows wait meanwhile). */
  checkpointInWorker(resume: () => void): void {
    const file = this.writable;
    file.checkpointInWorker();
    file.onCheckpointed = resume;
  }

  /**
   * Commits the derived file and fsyncs it on the libuv pool, then calls back with the keys whose deletion
   * that made durable. `lsnNext`: the log's next LSN (every record below it has its rows waiting or written).
   */
  durable(lsnNext: number, done: (error: Error | null, freed: Array<[number, number]>) => void): void {
    if (this.file === null || this.file.db.readonly) {
      done(null, []);
      return;
    }
    const through = this.coveredLsn(lsnNext);
    this.file.durable((error, freed) => {
      if (error === null && through > this.durableThrough) this.durableThrough = through;
      done(error, freed);
    });
  }

  /** The LSN up to which every derived row is in the file: none of a record up to it waits in memory (drops aside). */
  private coveredLsn(lsnNext: number): number {
    return Math.min(lsnNext - 1, this.pending.oldestImageLsn - 1);
  }

  /**
   * Before an image at `lsn`: no row of its records may wait in memory (a bug if one does), and every one
   * must be durable in the file: after `durable` it is; otherwise the file is committed and fsynced here.
   */
  beforeImage(lsn: number, lsnNext: number): void {
    assert(this.pending.oldestImageLsn > lsn, `an image at LSN ${lsn} while derived rows of its records wait in memory`);
    if (this.file === null || this.file.db.readonly || this.durableThrough >= lsn) return;
    const through = this.coveredLsn(lsnNext);
    this.file.durableSync();
    this.durableThrough = Math.max(this.durableThrough, through);
  }

  /** Rows of records from `lsn` on go: those waiting, and those in the file (every table). */
  cutFrom(lsn: number): void {
    this.pending.take();
    if (this.file !== null && !this.file.db.readonly) this.file.cutFrom(lsn);
    this.durableThrough = Math.min(this.durableThrough, lsn - 1);
  }

  close(): void {
    this.file?.close();
  }
}

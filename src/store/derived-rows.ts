// Derived rows not yet written: the cold rows, idempotency changes and expiry rows that a group commit's
// records imply. Log v2 writes only the log row on the request path; these follow after the fsync, in
// bulk (before every snapshot image, at stop, and whenever too many wait), and until then reads find
// them here. Runs in the shard worker (and the CLI's read-only replay) that owns the file.
// Invariant: every row here is implied by a durable log record, so losing this memory loses nothing:
// recovery replays the records after each partition's image and derives the same rows again.
import type { ColdRow } from './cold-table.ts';
import type { IdemChange } from './idem-log.ts';
import type { DueChange } from './due-log.ts';
import type { EntityKind, IdempotencyRecord } from './tiers.ts';

export interface DerivedBatch {
  cold: readonly ColdRow[];
  idem: readonly IdemChange[];
  due: readonly DueChange[];
}

/**
 * What may wait before the shard writes it, whatever the snapshot cadence (bounds the heap): the
 * characters the waiting rows hold, each row counted at least ROW_WEIGHT_MIN. A row that points into
 * the log holds no body, so a run of waiting sandbox collections costs ~100 B a row, not ~600.
 */
export const DERIVED_PENDING_WEIGHT_MAX = 16_000_000;
const ROW_WEIGHT_MIN = 100;
/** Rows one turn of the shard writes when too many wait: a slice, so no batch waits long behind it. */
export const DERIVED_SLICE_ROWS = 500;

/**
 * A queue whose front is taken in slices: Array.prototype.splice(0, n) moves every row behind the
 * slice, so writing 50,000 waiting rows 500 at a time cost O(rows²); here a slice costs its own length.
 */
class Fifo<T> {
  private items: T[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(item: T): void {
    this.items.push(item);
  }

  /** Removes and returns the oldest `countMax` items (all of them for Infinity), in order. */
  shift(countMax: number): T[] {
    if (this.head === 0 && countMax >= this.items.length) {
      const all = this.items;
      this.items = [];
      return all;
    }
    const end = Math.min(this.items.length, this.head + Math.max(0, countMax));
    const taken = this.items.slice(this.head, end);
    this.head = end;
    // Compact once the taken front outweighs what waits, so the array never grows without bound.
    if (this.head >= this.items.length - this.head) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return taken;
  }
}

export class PendingDerived {
  private readonly cold = new Fifo<ColdRow>();
  private readonly idem = new Fifo<IdemChange>();
  private readonly due = new Fifo<DueChange>();
  /** `kind id` → its waiting versions, oldest first. */
  private readonly coldByKey = new Map<string, ColdRow[]>();
  /** Waiting idempotency records by seq (the LSN of the record that stored them). */
  private readonly idemBySeq = new Map<number, { record: IdempotencyRecord; inLog: boolean }>();
  private weightNow = 0;

  add(batch: DerivedBatch): void {
    for (const row of batch.cold) {
      this.cold.push(row);
      const key = `${row.kind} ${row.id}`;
      const versions = this.coldByKey.get(key);
      if (versions === undefined) this.coldByKey.set(key, [row]);
      else versions.push(row);
      this.weightNow += Math.max(ROW_WEIGHT_MIN, row.body.length);
    }
    for (const change of batch.idem) {
      this.idem.push(change);
      if (change.op.op === 'put') this.idemBySeq.set(change.lsn, { record: change.op.record, inLog: change.inLog === true });
      this.weightNow += Math.max(ROW_WEIGHT_MIN, change.op.op === 'put' ? (change.op.record.json?.length ?? 0) : 0);
    }
    for (const change of batch.due) this.due.push(change);
    this.weightNow += ROW_WEIGHT_MIN * batch.due.length;
  }

  /** The characters the waiting rows hold (see DERIVED_PENDING_WEIGHT_MAX). */
  get weight(): number {
    return this.weightNow;
  }

  get rows(): number {
    return this.cold.length + this.idem.length + this.due.length;
  }

  /** The newest waiting version of an entity written before `beforeLsn` (Infinity: the newest); its body may be in the log. */
  readCold(kind: EntityKind, id: string, beforeLsn: number): ColdRow | undefined {
    const versions = this.coldByKey.get(`${kind} ${id}`);
    if (versions === undefined) return undefined;
    for (let i = versions.length - 1; i >= 0; i -= 1) if (versions[i]!.lsn < beforeLsn) return versions[i];
    return undefined;
  }

  readColdExact(kind: EntityKind, id: string, lsn: number): ColdRow | undefined {
    return this.coldByKey.get(`${kind} ${id}`)?.find((row) => row.lsn === lsn);
  }

  /** Ids of the waiting entities of a kind. */
  *coldIds(kind: EntityKind): IterableIterator<string> {
    for (const [key, versions] of this.coldByKey) if (versions[0]!.kind === kind) yield key.slice(key.indexOf(' ') + 1);
  }

  /** The waiting record at `seq` if it has this scope (`inLog`: its reply is in the log record). */
  readIdem(scope: string, seq: number): { record: IdempotencyRecord; inLog: boolean } | undefined {
    const waiting = this.idemBySeq.get(seq);
    return waiting !== undefined && waiting.record.scope === scope ? waiting : undefined;
  }

  /**
   * The oldest waiting rows, at most `rowsMax` (each table's rows stay in their order: a slice takes a
   * prefix of each); the memory lets go of them (the caller writes them at once).
   */
  takeSome(rowsMax: number): DerivedBatch {
    if (rowsMax >= this.rows) return this.take();
    const cold = this.cold.shift(rowsMax);
    const idem = this.idem.shift(rowsMax - cold.length);
    const due = this.due.shift(rowsMax - cold.length - idem.length);
    for (const row of cold) {
      const key = `${row.kind} ${row.id}`;
      const versions = this.coldByKey.get(key)!;
      versions.shift();
      if (versions.length === 0) this.coldByKey.delete(key);
    }
    for (const change of idem) if (change.op.op === 'put' && this.idemBySeq.get(change.lsn)?.record === change.op.record) this.idemBySeq.delete(change.lsn);
    this.weightNow = Math.max(0, this.weightNow - cold.reduce((w, r) => w + Math.max(ROW_WEIGHT_MIN, r.body.length), 0) - idem.reduce((w, c) => w + Math.max(ROW_WEIGHT_MIN, c.op.op === 'put' ? (c.op.record.json?.length ?? 0) : 0), 0) - ROW_WEIGHT_MIN * due.length);
    return { cold, idem, due };
  }

  /** Everything waiting, in order; the memory lets go of it (the caller writes it at once). */
  take(): DerivedBatch {
    const taken = { cold: this.cold.shift(Infinity), idem: this.idem.shift(Infinity), due: this.due.shift(Infinity) };
    this.coldByKey.clear();
    this.idemBySeq.clear();
    this.weightNow = 0;
    return taken;
  }
}

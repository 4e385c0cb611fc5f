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
import type { EntryChange, ListChange, ListKind, ListQuery, EntryQuery } from './list-index.ts';

export interface DerivedBatch {
  cold: readonly ColdRow[];
  idem: readonly IdemChange[];
  due: readonly DueChange[];
  /** List index rows and wallet ledger entries (absent: none). */
  list?: readonly ListChange[];
  entries?: readonly EntryChange[];
}

/**
 * What may wait before the shard writes it, whatever the snapshot cadence (bounds the heap): the
 * characters the waiting rows hold, each row counted at least ROW_WEIGHT_MIN. A row that points into
 * the log holds no body, so a run of waiting sandbox collections costs ~100 B a row, not ~600.
 */
export const DERIVED_PENDING_WEIGHT_MAX = 16_000_000;
const ROW_WEIGHT_MIN = 100;
/**
 * Rows one turn of the shard writes when too many wait: a slice, so no batch waits long behind it. Each
 * slice's transaction rewrites the partly filled last page of every b-tree it touches, so fewer, larger
 * slices write fewer bytes and cost less CPU a row: 2,000 against 500 wrote ~15% fewer bytes a payment
 * and ~5% less CPU a durable POST with the same p99; 5,000 wrote no fewer and doubled the p99 at 64
 * connections (bench/RESULTS.md, "Fewer, larger derived slices").
 */
export const DERIVED_SLICE_ROWS = 2_000;
/**
 * List rows and ledger entries that may wait: a list page merges the waiting ones of its owner and kind
 * (or wallet) with the index, so this bounds what a page reads from memory. Past it the shard writes them.
 */
export const LIST_PENDING_ROWS_MAX = 2_000;

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
  private readonly list = new Fifo<ListChange>();
  private readonly entries = new Fifo<EntryChange>();
  /** `owner kind` → id → the newest waiting row (it overrides the index's row of that id). */
  private readonly listByKey = new Map<string, Map<string, ListChange>>();
  /** wallet id → its waiting entries, in seq order. */
  private readonly entriesByWallet = new Map<string, EntryChange[]>();
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
    for (const row of batch.list ?? []) {
      this.list.push(row);
      const key = `${row.owner} ${row.kind}`;
      let rows = this.listByKey.get(key);
      if (rows === undefined) this.listByKey.set(key, (rows = new Map()));
      rows.set(row.id, row);
      this.weightNow += Math.max(ROW_WEIGHT_MIN, row.body?.length ?? 0);
    }
    for (const entry of batch.entries ?? []) {
      this.entries.push(entry);
      const rows = this.entriesByWallet.get(entry.walletId);
      if (rows === undefined) this.entriesByWallet.set(entry.walletId, [entry]);
      else rows.push(entry);
      this.weightNow += ROW_WEIGHT_MIN;
    }
  }

  /** List rows and ledger entries waiting (see LIST_PENDING_ROWS_MAX). */
  get listRows(): number {
    return this.list.length + this.entries.length;
  }

  /** The waiting list rows of an owner and kind, newest version of each id (bounded by LIST_PENDING_ROWS_MAX). */
  listWaiting(owner: string, kind: ListKind): ReadonlyMap<string, ListChange> {
    return this.listByKey.get(`${owner} ${kind}`) ?? new Map();
  }

  /** The waiting list rows a query would find, in no order. */
  listMatching(q: ListQuery): ListChange[] {
    const out: ListChange[] = [];
    for (const row of this.listWaiting(q.owner, q.kind).values()) {
      if (q.customerId !== null && row.customerId !== q.customerId) continue;
      if (q.status !== null && row.status !== q.status) continue;
      if (row.id > q.idAbove && row.id < q.idBelow) out.push(row);
    }
    return out;
  }

  /** The waiting entries of a wallet in a seq range, in no order. */
  entriesMatching(q: EntryQuery): EntryChange[] {
    return (this.entriesByWallet.get(q.walletId) ?? []).filter((e) => e.seq > q.seqAbove && e.seq < q.seqBelow);
  }

  /** The characters the waiting rows hold (see DERIVED_PENDING_WEIGHT_MAX). */
  get weight(): number {
    return this.weightNow;
  }

  get rows(): number {
    return this.cold.length + this.idem.length + this.due.length + this.list.length + this.entries.length;
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
    // List rows first: they are the ones a list page merges from memory (the smaller that set, the cheaper).
    const list = this.list.shift(rowsMax);
    const entries = this.entries.shift(rowsMax - list.length);
    this.forgetListed(list, entries);
    rowsMax -= list.length + entries.length;
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
    return { cold, idem, due, list, entries };
  }

  private forgetListed(list: readonly ListChange[], entries: readonly EntryChange[]): void {
    for (const row of list) {
      const key = `${row.owner} ${row.kind}`;
      const rows = this.listByKey.get(key);
      if (rows?.get(row.id) === row) rows.delete(row.id);
      if (rows?.size === 0) this.listByKey.delete(key);
      this.weightNow = Math.max(0, this.weightNow - Math.max(ROW_WEIGHT_MIN, row.body?.length ?? 0));
    }
    for (const entry of entries) {
      const rows = this.entriesByWallet.get(entry.walletId);
      if (rows?.[0] === entry) rows.shift();
      if (rows?.length === 0) this.entriesByWallet.delete(entry.walletId);
      this.weightNow = Math.max(0, this.weightNow - ROW_WEIGHT_MIN);
    }
  }

  /** Everything waiting, in order; the memory lets go of it (the caller writes it at once). */
  take(): DerivedBatch {
    const taken = { cold: this.cold.shift(Infinity), idem: this.idem.shift(Infinity), due: this.due.shift(Infinity), list: this.list.shift(Infinity), entries: this.entries.shift(Infinity) };
    this.listByKey.clear();
    this.entriesByWallet.clear();
    this.coldByKey.clear();
    this.idemBySeq.clear();
    this.weightNow = 0;
    return taken;
  }
}

// Derived rows not yet written: the list rows, cold rows, idempotency changes and expiry rows that a group
// commit's records imply. Log v2 writes only the log row on the request path; these follow into the derived
// file (derived-file.ts) a chunk a turn, and until then reads find them here. Runs in the shard worker (and the CLI's read-only replay) that owns the file.
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
 * Rows one turn writes when the waiting rows pass half their weight bound (a checkpoint of the derived
 * file ran long, or the log's fsync lagged), and what an image round writes a turn from a backlog: a
 * slice, so no batch waits long behind it. Rows otherwise go a chunk a turn (derived-writes.ts).
 */
export const DERIVED_SLICE_ROWS = 2_000;

/**
 * Which waiting rows a slice takes: the list index's (list rows and ledger entries: three b-trees a row),
 * the others (cold, idempotency, expiry), or both. A slice of one part dirties fewer b-tree pages than a
 * slice of both, and every page a commit dirties goes to the journal whole.
 */
export type DerivedPart = 'lists' | 'rows' | 'all';

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

  /** The item `index` places behind the oldest (undefined past the end). */
  at(index: number): T | undefined {
    return this.items[this.head + index];
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
    // The taken front lets go of its items now, not at the next compaction (see PendingDerived's maps).
    (this.items as Array<T | undefined>).fill(undefined, this.head, end);
    this.head = end;
    // Compact once the taken front outweighs what waits, so the array never grows without bound.
    if (this.head >= this.items.length - this.head) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return taken;
  }
}

/** The weight a waiting row counts towards DERIVED_PENDING_WEIGHT_MAX. */
function coldWeight(row: ColdRow): number {
  return row.body.length > ROW_WEIGHT_MIN ? row.body.length : ROW_WEIGHT_MIN;
}

function idemWeight(change: IdemChange): number {
  const length = change.op.op === 'put' ? (change.op.record.json?.length ?? 0) : 0;
  return length > ROW_WEIGHT_MIN ? length : ROW_WEIGHT_MIN;
}

function listWeight(row: ListChange): number {
  const length = row.body?.length ?? 0;
  return length > ROW_WEIGHT_MIN ? length : ROW_WEIGHT_MIN;
}

const NO_LIST_ROWS: ReadonlyMap<string, ListChange> = new Map();

/**
 * The waiting rows and their lookups. Maps are nested by kind or owner rather than keyed by a joined
 * string: a key built per row cost a string and its hash on every add and every take (~40% of the
 * queue's time; bench/RESULTS.md, "Where a durable POST's time goes").
 */
export class PendingDerived {
  private readonly cold = new Fifo<ColdRow>();
  private readonly idem = new Fifo<IdemChange>();
  private readonly due = new Fifo<DueChange>();
  private readonly list = new Fifo<ListChange>();
  private readonly entries = new Fifo<EntryChange>();
  // The lookups below are replaced by new maps whenever they empty, never cleared: rows wait a turn or two,
  // and a long-lived map that is cleared or rehashed leaves its old table, rows included, in the old
  // generation, where the scavenger keeps them alive until a full collection (docs/decisions.md).
  /** owner → kind → id → the newest waiting row (it overrides the index's row of that id). */
  private listByOwner = new Map<string, Map<ListKind, Map<string, ListChange>>>();
  /** wallet id → its waiting entries, in seq order. */
  private entriesByWallet = new Map<string, EntryChange[]>();
  /** kind → id → its waiting versions, oldest first (one row alone until a second one waits). */
  private coldByKind = new Map<EntityKind, Map<string, ColdRow | ColdRow[]>>();
  /** Waiting idempotency records by seq (the LSN of the record that stored them). */
  private idemBySeq = new Map<number, IdemChange>();
  private weightNow = 0;

  add(batch: DerivedBatch): void {
    for (const row of batch.cold) {
      this.cold.push(row);
      let ids = this.coldByKind.get(row.kind);
      if (ids === undefined) this.coldByKind.set(row.kind, (ids = new Map()));
      const versions = ids.get(row.id);
      if (versions === undefined) ids.set(row.id, row);
      else if (Array.isArray(versions)) versions.push(row);
      else ids.set(row.id, [versions, row]);
      this.weightNow += coldWeight(row);
    }
    for (const change of batch.idem) {
      this.idem.push(change);
      if (change.op.op === 'put') this.idemBySeq.set(change.lsn, change);
      this.weightNow += idemWeight(change);
    }
    for (const change of batch.due) this.due.push(change);
    this.weightNow += ROW_WEIGHT_MIN * batch.due.length;
    const list = batch.list ?? [];
    for (const row of list) {
      this.list.push(row);
      this.listRowsOf(row.owner, row.kind, true).set(row.id, row);
      this.weightNow += listWeight(row);
    }
    for (const entry of batch.entries ?? []) {
      this.entries.push(entry);
      const rows = this.entriesByWallet.get(entry.walletId);
      if (rows === undefined) this.entriesByWallet.set(entry.walletId, [entry]);
      else rows.push(entry);
      this.weightNow += ROW_WEIGHT_MIN;
    }
  }

  private listRowsOf(owner: string, kind: ListKind, create: true): Map<string, ListChange>;
  private listRowsOf(owner: string, kind: ListKind, create: false): Map<string, ListChange> | undefined;
  private listRowsOf(owner: string, kind: ListKind, create: boolean): Map<string, ListChange> | undefined {
    let kinds = this.listByOwner.get(owner);
    if (kinds === undefined) {
      if (!create) return undefined;
      this.listByOwner.set(owner, (kinds = new Map()));
    }
    let rows = kinds.get(kind);
    if (rows === undefined && create) kinds.set(kind, (rows = new Map()));
    return rows;
  }

  /**
   * The LSN of the oldest waiting row an image must not pass (Infinity: none waits): any row but an expiry
   * row's drop. A drop is a hint's removal, and a batch whose sweep drops stale rows without a record gives
   * them the LSN of the record before it, which an image may already cover; lost, the next sweep finds the
   * row and drops it again (it decides from the payment). Scans the waiting expiry rows (few) for a set.
   */
  get oldestImageLsn(): number {
    const none = Number.POSITIVE_INFINITY;
    let due = none;
    for (let i = 0; i < this.due.length; i += 1) {
      const change = this.due.at(i)!;
      if (change.op === 'set') {
        due = change.lsn;
        break;
      }
    }
    return Math.min(this.list.at(0)?.lsn ?? none, this.entries.at(0)?.lsn ?? none, this.cold.at(0)?.lsn ?? none, this.idem.at(0)?.lsn ?? none, due);
  }

  /** List rows and ledger entries waiting (the runtime hands them to the list file a chunk a turn). */
  get listRows(): number {
    return this.list.length + this.entries.length;
  }

  /** Cold rows, idempotency changes and expiry rows waiting. */
  get otherRows(): number {
    return this.cold.length + this.idem.length + this.due.length;
  }

  /** The waiting list rows of an owner and kind, newest version of each id (about a turn's worth). */
  listWaiting(owner: string, kind: ListKind): ReadonlyMap<string, ListChange> {
    return this.listRowsOf(owner, kind, false) ?? NO_LIST_ROWS;
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
    const versions = this.coldByKind.get(kind)?.get(id);
    if (versions === undefined) return undefined;
    if (!Array.isArray(versions)) return versions.lsn < beforeLsn ? versions : undefined;
    for (let i = versions.length - 1; i >= 0; i -= 1) if (versions[i]!.lsn < beforeLsn) return versions[i];
    return undefined;
  }

  readColdExact(kind: EntityKind, id: string, lsn: number): ColdRow | undefined {
    const versions = this.coldByKind.get(kind)?.get(id);
    if (versions === undefined) return undefined;
    if (!Array.isArray(versions)) return versions.lsn === lsn ? versions : undefined;
    return versions.find((row) => row.lsn === lsn);
  }

  /** Ids of the waiting entities of a kind. */
  coldIds(kind: EntityKind): IterableIterator<string> {
    return (this.coldByKind.get(kind) ?? new Map<string, ColdRow>()).keys();
  }

  /** The waiting record at `seq` if it has this scope (`inLog`: its reply is in the log record). */
  readIdem(scope: string, seq: number): { record: IdempotencyRecord; inLog: boolean } | undefined {
    const waiting = this.idemBySeq.get(seq);
    if (waiting === undefined || waiting.op.op !== 'put' || waiting.op.record.scope !== scope) return undefined;
    return { record: waiting.op.record, inLog: waiting.inLog === true };
  }

  /**
   * The oldest waiting rows of `part`, at most `rowsMax`; the memory lets go of them (the caller writes
   * them at once). List rows go first; the cold, idempotency and expiry rows are taken oldest LSN first
   * across the three tables, so every table's rows keep pace (each table's rows stay in their order: a
   * slice takes a prefix of each), and none of a record past `rowsLsnMax` (the log's durable end).
   */
  takeSome(rowsMax: number, part: DerivedPart = 'all', rowsLsnMax = Number.POSITIVE_INFINITY): DerivedBatch {
    if (part === 'all' && rowsMax >= this.rows && rowsLsnMax === Number.POSITIVE_INFINITY) return this.take();
    // List rows first: they are the ones a list page merges from memory (the smaller that set, the cheaper).
    const list = part === 'rows' ? [] : this.list.shift(rowsMax);
    const entries = part === 'rows' ? [] : this.entries.shift(rowsMax - list.length);
    this.forgetListed(list, entries);
    const othersMax = part === 'lists' ? 0 : rowsMax - list.length - entries.length;
    let coldCount = 0;
    let idemCount = 0;
    let dueCount = 0;
    while (coldCount + idemCount + dueCount < othersMax) {
      const coldLsn = this.cold.at(coldCount)?.lsn ?? Number.POSITIVE_INFINITY;
      const idemLsn = this.idem.at(idemCount)?.lsn ?? Number.POSITIVE_INFINITY;
      const dueLsn = this.due.at(dueCount)?.lsn ?? Number.POSITIVE_INFINITY;
      if (coldLsn <= idemLsn && coldLsn <= dueLsn) {
        if (coldLsn === Number.POSITIVE_INFINITY || coldLsn > rowsLsnMax) break;
        coldCount += 1;
      } else if (idemLsn <= dueLsn) {
        if (idemLsn > rowsLsnMax) break;
        idemCount += 1;
      } else if (dueLsn > rowsLsnMax) break;
      else dueCount += 1;
    }
    const cold = this.cold.shift(coldCount);
    const idem = this.idem.shift(idemCount);
    const due = this.due.shift(dueCount);
    let weight = ROW_WEIGHT_MIN * due.length;
    for (const row of cold) {
      weight += coldWeight(row);
      const ids = this.coldByKind.get(row.kind)!;
      const versions = ids.get(row.id)!;
      if (!Array.isArray(versions)) {
        ids.delete(row.id);
        if (ids.size === 0) this.coldByKind.delete(row.kind);
      } else {
        versions.shift();
        if (versions.length === 1) ids.set(row.id, versions[0]!);
      }
    }
    for (const change of idem) {
      weight += idemWeight(change);
      if (change.op.op === 'put' && this.idemBySeq.get(change.lsn) === change) this.idemBySeq.delete(change.lsn);
    }
    this.weightNow = Math.max(0, this.weightNow - weight);
    this.renewEmptied();
    return { cold, idem, due, list, entries };
  }

  /** New maps for the lookups that emptied (see the fields). */
  private renewEmptied(): void {
    if (this.listByOwner.size === 0) this.listByOwner = new Map();
    if (this.entriesByWallet.size === 0) this.entriesByWallet = new Map();
    if (this.coldByKind.size === 0) this.coldByKind = new Map();
    if (this.idemBySeq.size === 0) this.idemBySeq = new Map();
  }

  private forgetListed(list: readonly ListChange[], entries: readonly EntryChange[]): void {
    let weight = ROW_WEIGHT_MIN * entries.length;
    for (const row of list) {
      weight += listWeight(row);
      const rows = this.listRowsOf(row.owner, row.kind, false);
      if (rows === undefined || rows.get(row.id) !== row) continue;
      rows.delete(row.id);
      if (rows.size > 0) continue;
      const kinds = this.listByOwner.get(row.owner)!;
      kinds.delete(row.kind);
      if (kinds.size === 0) this.listByOwner.delete(row.owner);
    }
    for (const entry of entries) {
      const rows = this.entriesByWallet.get(entry.walletId);
      if (rows?.[0] === entry) rows.shift();
      if (rows?.length === 0) this.entriesByWallet.delete(entry.walletId);
    }
    this.weightNow = Math.max(0, this.weightNow - weight);
  }

  /** Everything waiting, in order; the memory lets go of it (the caller writes it at once). */
  take(): DerivedBatch {
    const taken = { cold: this.cold.shift(Infinity), idem: this.idem.shift(Infinity), due: this.due.shift(Infinity), list: this.list.shift(Infinity), entries: this.entries.shift(Infinity) };
    // New maps, not clear() (see the fields).
    this.listByOwner = new Map();
    this.entriesByWallet = new Map();
    this.coldByKind = new Map();
    this.idemBySeq = new Map();
    this.weightNow = 0;
    return taken;
  }
}

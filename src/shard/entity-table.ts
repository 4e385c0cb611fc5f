// Hot/cold tables of a partition's entities: the heap keeps what commands still need, a finished
// entity lives in the shard file's `cold` table and is read back by id. Runs inside shard workers
// (and the CLI's recovery). Without a cold store (unit tests, benches) every entity simply stays hot.
// Invariant: only applyEvent changes an entity, through mutable()/set(), which mark it touched.
import { ownerOfScope, type ColdReader, type EntityKind, type IdempotencyRecord, type IdemOp, type IdemReader } from '../store/tiers.ts';

export type { ColdReader, EntityKind, IdemOp, IdemReader } from '../store/tiers.ts';

export class EntityTable<T> {
  private hot = new Map<string, T>();
  /** Ids changed by applyEvent since the shard last looked: the candidates to leave the heap. */
  touched = new Set<string>();
  /**
   * Of those, the ids a creation event put here (`set`) and nothing changed since: the entity is, field
   * for field, the one that event carries in the command's log record.
   */
  created = new Set<string>();

  constructor(
    readonly kind: EntityKind,
    private readonly cold: ColdReader | null,
    /** True once nothing but a rare late event (a retry, a refund) can change the entity again. */
    readonly isFinished: (entity: T) => boolean,
  ) {}

  /** The entity, hot or passivated. A passivated one is a fresh parsed copy: read it, never change it. */
  get(id: string): T | undefined {
    const hot = this.hot.get(id);
    if (hot !== undefined || this.cold === null) return hot;
    const body = this.cold.read(this.kind, id);
    return body === undefined ? undefined : (JSON.parse(body) as T);
  }

  has(id: string): boolean {
    return this.get(id) !== undefined;
  }

  /** The version written with the WAL record at `lsn` (a parsed copy), if there is a cold store. */
  coldVersion(id: string, lsn: number): T | undefined {
    const body = this.cold?.readExact(this.kind, id, lsn);
    return body === undefined ? undefined : (JSON.parse(body) as T);
  }

  /** Only the heap: used by creation guards, which must not cost a disk read per new id. */
  hasHot(id: string): boolean {
    return this.hot.has(id);
  }

  /** For applyEvent: the entity to change, brought back into the heap if it had been passivated. */
  mutable(id: string): T | undefined {
    let entity = this.hot.get(id);
    if (entity === undefined) {
      entity = this.get(id);
      if (entity !== undefined) this.hot.set(id, entity);
    }
    if (entity !== undefined) {
      this.touched.add(id);
      this.created.delete(id);
    }
    return entity;
  }

  /** A creation: the entity is a copy of what its creation event carries. */
  set(id: string, entity: T): void {
    this.hot.set(id, entity);
    this.touched.add(id);
    this.created.add(id);
  }

  /**
   * Drops an entity from the heap (after its cold row is written, or when it is no longer wanted). A table
   * left empty starts a new map: entities created and passivated in every batch make the map rehash often,
   * and each rehash of a map in the old generation leaves its old table there with the entities it held,
   * which the scavenger then keeps alive until a full collection (docs/decisions.md, eighth session).
   */
  evict(id: string): void {
    this.hot.delete(id);
    if (this.hot.size === 0) this.hot = new Map();
  }

  /** Hot entities only: in-flight work, unexpired quotes, and everything when there is no cold store. */
  values(): IterableIterator<T> {
    return this.hot.values();
  }

  keys(): IterableIterator<string> {
    return this.hot.keys();
  }

  get size(): number {
    return this.hot.size;
  }

  /**
   * The shard has looked at what changed: both sets start again. New sets rather than clear(): V8 leaves
   * a cleared Map or Set's old table, with every entry, in the old generation, and the next scavenge
   * treats those entries as live, so each batch's ids were promoted (bench/RESULTS.md).
   */
  forgetTouched(): void {
    if (this.touched.size > 0) this.touched = new Set();
    if (this.created.size > 0) this.created = new Set();
  }

  /** The entity if it is hot and finished: what passivation writes out. */
  finishedHot(id: string): T | undefined {
    const entity = this.hot.get(id);
    return entity !== undefined && this.isFinished(entity) ? entity : undefined;
  }

  get passivates(): boolean {
    return this.cold !== null;
  }
}


/**
 * Idempotency records: the heap holds only those stored since the last group commit (so a second
 * command with the same key in one batch sees the first); the shard file holds the rest.
 */
export class IdemTable {
  private recent = new Map<string, IdempotencyRecord>();
  private ops: IdemOp[] = [];

  constructor(private readonly store: IdemReader | null) {}

  /**
   * A record stored by this batch (still in the heap). Older records are reached only through
   * `getAt`: the front end's index knows every stored key, and sends a command on as new only when it
   * knows none with this hash, so looking in the file here would find nothing.
   */
  get(scope: string): IdempotencyRecord | undefined {
    return this.recent.get(scope);
  }

  /** The record at `seq` in the shard file (where the front end's index placed it), if it has this scope. */
  getAt(scope: string, seq: number): IdempotencyRecord | undefined {
    return this.recent.get(scope) ?? this.store?.readAt(scope, seq);
  }

  set(record: IdempotencyRecord): void {
    this.recent.set(record.scope, record);
    if (this.store !== null) this.ops.push({ op: 'put', record });
  }

  expire(cutoffMs: Record<string, number>, defaultCutoffMs: number): void {
    for (const [scope, record] of this.recent) {
      if (record.atMs < (cutoffMs[ownerOfScope(scope)] ?? defaultCutoffMs)) this.recent.delete(scope);
    }
    if (this.store !== null) this.ops.push({ op: 'expire', cutoffMs, defaultCutoffMs });
  }

  forget(scopes: readonly string[]): void {
    for (const scope of scopes) this.recent.delete(scope);
    if (this.store !== null) this.ops.push({ op: 'forget', scopes: [...scopes] });
  }

  /** The changes since the last call, in order, for the shard to write in its group commit. */
  drain(): IdemOp[] {
    if (this.ops.length === 0) return [];
    const ops = this.ops;
    this.ops = [];
    return ops;
  }

  /** After the group commit: the store holds every drained record, so the heap lets them go. */
  settle(): void {
    // A new map, not clear(): see forgetTouched (the records and their replies were promoted).
    if (this.store !== null && this.recent.size > 0) this.recent = new Map();
  }

  /** Records in the heap (all of them when there is no store). */
  values(): IterableIterator<IdempotencyRecord> {
    return this.recent.values();
  }

  get size(): number {
    return this.recent.size;
  }
}

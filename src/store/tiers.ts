// The record formats of a shard file's tiered tables (finished entities, idempotency records) as the
// store reads and writes them. Store layer: imported by the shard, never importing it.
// Invariant: a kind's code (its index in ENTITY_KINDS) never changes once written to disk.

export const ENTITY_KINDS = ['txn', 'payment', 'transfer', 'order', 'exchange', 'credit', 'fx_quote', 'service_quote'] as const;
export type EntityKind = (typeof ENTITY_KINDS)[number];

/** Where passivated entities are read from. Recovery reads "as of" the record it replays. */
export interface ColdReader {
  read(kind: EntityKind, id: string): string | undefined;
  /** The version written with the WAL record at exactly `lsn`. */
  readExact(kind: EntityKind, id: string, lsn: number): string | undefined;
}

/** A stored result for an idempotency scope (`env:account:key`): replayed byte for byte or by code. */
export interface IdempotencyRecord {
  scope: string;
  fingerprint: string;
  atMs: number;
  status: number;
  json?: string;
  error?: { code: string; message: string };
  miss?: true;
  /** scopeHash(scope), when the front end sent it along (saves the shard computing it again). */
  h?: number;
  /**
   * In a log record only, instead of `json`: the reply is this entity's view as the record left it
   * (shard/reply-views.ts), so the record does not carry the reply a second time.
   */
  view?: ReplyView;
}

/** A reply that is exactly one entity's view, rebuilt from the state the record leaves. */
export interface ReplyView {
  kind: 'payment';
  id: string;
}

/** Reads the record stored at `seq` (the LSN of the WAL record that stored it), if it has this scope. */
export interface IdemReader {
  readAt(scope: string, seq: number): IdempotencyRecord | undefined;
}

/**
 * Where a stored idempotency record lives, packed in one number for the front end's index: its
 * partition and its row (`seq`) in that partition's shard file. Exact while |seq| < 2^42.
 */
const IDEM_PARTITIONS_MAX = 1024;

export function packIdemAt(partition: number, seq: number): number {
  return seq * IDEM_PARTITIONS_MAX + partition;
}

export function unpackIdemAt(packed: number): { partition: number; seq: number } {
  const partition = ((packed % IDEM_PARTITIONS_MAX) + IDEM_PARTITIONS_MAX) % IDEM_PARTITIONS_MAX;
  return { partition, seq: (packed - partition) / IDEM_PARTITIONS_MAX };
}

/** A change to the idempotency table, applied by the shard inside the group commit that made it. */
export type IdemOp =
  | { op: 'put'; record: IdempotencyRecord }
  | { op: 'expire'; cutoffMs: Record<string, number>; defaultCutoffMs: number }
  | { op: 'forget'; scopes: string[] };

/** The owner (`env:account`) of an idempotency scope `env:account:key`. */
export function ownerOfScope(scope: string): string {
  return scope.slice(0, scope.indexOf(':', scope.indexOf(':') + 1));
}

// The rows of control.db and webhooks.db a cluster replicates (API keys, sandbox clocks, operator
// actions, webhook subscriptions, front-idempotency records), as whole rows: how one is read after a
// change and written on another node. Main thread of the owning server and of the node supervisor.
// Invariant: applying a change upserts the whole row, so re-applying changes in order ends in the same state.
import type Database from 'better-sqlite3';

export type RowValue = string | number | null;

/** Every replicated table: its file, its primary key and its columns (as the stores create them). */
export const REPLICATED_TABLES = {
  api_keys: { db: 'control', key: 'id', columns: ['id', 'hash', 'prefix', 'account', 'env', 'scopes', 'ip_allow', 'customer_id', 'status', 'created_at_ms', 'expires_at_ms', 'label'] },
  clocks: { db: 'control', key: 'owner', columns: ['owner', 'offset_ms'] },
  operator_actions: { db: 'control', key: 'id', columns: ['id', 'kind', 'target', 'payload', 'created_at_ms', 'done_at_ms', 'result'] },
  subscriptions: { db: 'webhooks', key: 'id', columns: ['id', 'owner', 'url', 'events', 'secret', 'status', 'consecutive_failures', 'created_at_ms', 'updated_at_ms'] },
  front_idempotency: { db: 'webhooks', key: 'scope', columns: ['scope', 'fingerprint', 'status', 'body', 'at_ms', 'crc'] },
} as const;

export type ReplicatedTable = keyof typeof REPLICATED_TABLES;

/** One acknowledged mutation: the whole row after it. */
export interface ReplicaChange {
  table: ReplicatedTable;
  row: Record<string, RowValue>;
}

/** Where a store reports its changes in cluster mode (null: the single-node default, nothing reported). */
export interface ReplicaSink {
  record(change: ReplicaChange): void;
}

export function isReplicatedTable(name: string): name is ReplicatedTable {
  return Object.hasOwn(REPLICATED_TABLES, name);
}

/** The whole row of `table` whose key is `key`, as a change (undefined: no such row). */
export function changeOf(db: Database.Database, table: ReplicatedTable, key: RowValue): ReplicaChange | undefined {
  const spec = REPLICATED_TABLES[table];
  const row = db.prepare(`SELECT ${spec.columns.join(', ')} FROM ${table} WHERE ${spec.key} = ?`).get(key) as Record<string, RowValue> | undefined;
  return row === undefined ? undefined : { table, row };
}

/**
 * Writes a change's row (INSERT OR REPLACE: a row with the same key, or the same unique key hash,
 * goes). The caller holds the transaction.
 */
export function upsertRow(db: Database.Database, change: ReplicaChange): void {
  const spec = REPLICATED_TABLES[change.table];
  const values = spec.columns.map((c) => {
    const v = change.row[c];
    if (v === undefined) throw new Error(`replica: a ${change.table} row without ${c}`);
    return v;
  });
  db.prepare(`INSERT OR REPLACE INTO ${change.table} (${spec.columns.join(', ')}) VALUES (${spec.columns.map(() => '?').join(', ')})`).run(...values);
}

/** Empties the replicated tables of one file (a copy about to be rebuilt from the stream). */
export function clearReplicated(db: Database.Database, file: 'control' | 'webhooks'): void {
  for (const [table, spec] of Object.entries(REPLICATED_TABLES)) if (spec.db === file) db.prepare(`DELETE FROM ${table}`).run();
}

/** Every replicated row of one file, as changes (a first owner's seed of the stream). */
export function allRows(db: Database.Database, file: 'control' | 'webhooks'): ReplicaChange[] {
  const changes: ReplicaChange[] = [];
  for (const [table, spec] of Object.entries(REPLICATED_TABLES)) {
    if (spec.db !== file || !isReplicatedTable(table)) continue;
    for (const row of db.prepare(`SELECT ${spec.columns.join(', ')} FROM ${table}`).all() as Array<Record<string, RowValue>>) changes.push({ table, row });
  }
  return changes;
}

/**
 * The rows another process may change behind a running server's back (the kobo CLI): keys, clocks,
 * subscriptions and the operator actions not yet done. Front-idempotency records are the server's own.
 */
export function scannedRows(db: Database.Database, file: 'control' | 'webhooks'): ReplicaChange[] {
  const changes: ReplicaChange[] = [];
  for (const [table, spec] of Object.entries(REPLICATED_TABLES)) {
    if (spec.db !== file || !isReplicatedTable(table) || table === 'front_idempotency') continue;
    const where = table === 'operator_actions' ? ' WHERE done_at_ms IS NULL' : '';
    for (const row of db.prepare(`SELECT ${spec.columns.join(', ')} FROM ${table}${where}`).all() as Array<Record<string, RowValue>>) changes.push({ table, row });
  }
  return changes;
}

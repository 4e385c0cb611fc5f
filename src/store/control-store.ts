// The control database (control.db): API keys (hashed) and each account's sandbox clock offset.
// Main thread and the operator CLI (sqlite WAL lets both open it at once).
// Invariant: no secret key is ever stored; only its SHA-256, looked up and compared in constant time.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import path from 'node:path';
import type Database from 'better-sqlite3';
import { ulid } from 'ulid';
import { openDatabase } from './shard-store.ts';
import { makeDir } from './private-files.ts';
import { changeOf, type ReplicaSink, type ReplicatedTable, type RowValue } from './replica-rows.ts';

export type Environment = 'test' | 'live';

export interface KeyRecord {
  id: string;
  hash: string;
  prefix: string;
  account: string;
  env: Environment;
  scopes: string[];
  ipAllow: string[];
  customerId: string | null;
  status: 'active' | 'revoked';
  createdAtMs: number;
  expiresAtMs: number | null;
  label: string | null;
}

interface KeyRow {
  id: string;
  hash: string;
  prefix: string;
  account: string;
  env: Environment;
  scopes: string;
  ip_allow: string;
  customer_id: string | null;
  status: 'active' | 'revoked';
  created_at_ms: number;
  expires_at_ms: number | null;
  label: string | null;
}

/** The control tables; a backup file carries the same two, so restore copies rows as they are. */
export const CONTROL_SCHEMA_SQL = `
  CREATE TABLE IF NOT EXISTS api_keys (
    id TEXT PRIMARY KEY, hash TEXT NOT NULL UNIQUE, prefix TEXT NOT NULL, account TEXT NOT NULL,
    env TEXT NOT NULL, scopes TEXT NOT NULL, ip_allow TEXT NOT NULL, customer_id TEXT,
    status TEXT NOT NULL, created_at_ms INTEGER NOT NULL, expires_at_ms INTEGER, label TEXT);
  CREATE TABLE IF NOT EXISTS clocks (owner TEXT PRIMARY KEY, offset_ms INTEGER NOT NULL);
  CREATE TABLE IF NOT EXISTS operator_actions (
    id TEXT PRIMARY KEY, kind TEXT NOT NULL, target TEXT NOT NULL, payload TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL, done_at_ms INTEGER, result TEXT);
`;

export type OperatorActionKind = 'order.resolve' | 'reconcile.resolve' | 'forwards.hold' | 'forwards.release';

/**
 * An operator's decision queued by the CLI and applied by the running server (durable, in order):
 * resolving an order held for manual fulfilment or a transaction a rail contradicted, or holding (and
 * releasing) cross-shard steps while an online backup takes its cut (`target` names the hold; `holdMs`
 * bounds it).
 */
export interface OperatorAction {
  id: string;
  kind: OperatorActionKind;
  target: string;
  payload: { outcome?: 'delivered' | 'failed' | 'recorded' | 'reported'; note?: string; holdMs?: number };
  createdAtMs: number;
  doneAtMs: number | null;
  result: string | null;
}

interface ActionRow {
  id: string;
  kind: OperatorActionKind;
  target: string;
  payload: string;
  created_at_ms: number;
  done_at_ms: number | null;
  result: string | null;
}

function actionOf(r: ActionRow): OperatorAction {
  return { id: r.id, kind: r.kind, target: r.target, payload: JSON.parse(r.payload) as OperatorAction['payload'], createdAtMs: r.created_at_ms, doneAtMs: r.done_at_ms, result: r.result };
}

/** A rotated key past its grace: refused (401), never rotated again, shown as `expired`. */
export function keyExpired(key: Pick<KeyRecord, 'expiresAtMs'>, nowMs: number): boolean {
  return key.expiresAtMs !== null && key.expiresAtMs <= nowMs;
}

export function hashKey(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

export function envOfSecret(secret: string): Environment | null {
  if (secret.startsWith('sk_test_')) return 'test';
  if (secret.startsWith('sk_live_')) return 'live';
  return null;
}

export function generateSecret(env: Environment): string {
  return `sk_${env}_${randomBytes(24).toString('base64url')}`;
}

function fromRow(row: KeyRow): KeyRecord {
  return {
    id: row.id,
    hash: row.hash,
    prefix: row.prefix,
    account: row.account,
    env: row.env,
    scopes: JSON.parse(row.scopes) as string[],
    ipAllow: JSON.parse(row.ip_allow) as string[],
    customerId: row.customer_id,
    status: row.status,
    createdAtMs: row.created_at_ms,
    expiresAtMs: row.expires_at_ms,
    label: row.label,
  };
}

export interface NewKey {
  secret: string;
  account: string;
  scopes?: string[];
  ipAllow?: string[];
  customerId?: string | null;
  label?: string | null;
  nowMs: number;
}

/**
 * What a key record shows of its secret: `sk_test_` / `sk_live_` and two characters, enough to tell
 * keys apart in `keys list`. Secrets may be as short as 8 characters after the prefix, and the record
 * also holds the secret's SHA-256: every character shown is one fewer to guess.
 */
const KEY_PREFIX_CHARS = 10;

export class ControlStore {
  readonly db: Database.Database;
  private readonly byHash: Database.Statement;
  /** Cluster mode: every change is reported here to be replicated (null: single node, nothing reported). */
  replica: ReplicaSink | null = null;

  constructor(dataDir: string) {
    makeDir(dataDir);
    this.db = openDatabase(path.join(dataDir, 'control.db'));
    this.db.exec(CONTROL_SCHEMA_SQL);
    // Prefixes kept by older versions showed four characters of the secret (half of a minimum-length key).
    if (this.db.prepare(`SELECT 1 FROM api_keys WHERE length(prefix) > ${KEY_PREFIX_CHARS} LIMIT 1`).get() !== undefined) {
      this.db.prepare(`UPDATE api_keys SET prefix = substr(prefix, 1, ${KEY_PREFIX_CHARS}) WHERE length(prefix) > ${KEY_PREFIX_CHARS}`).run();
    }
    this.byHash = this.db.prepare('SELECT * FROM api_keys WHERE hash = ?');
  }

  /** The key whose hash matches, compared in constant time after the indexed lookup. */
  findBySecret(secret: string): KeyRecord | undefined {
    const hash = hashKey(secret);
    const row = this.byHash.get(hash) as KeyRow | undefined;
    if (row === undefined) return undefined;
    if (!timingSafeEqual(Buffer.from(row.hash, 'hex'), Buffer.from(hash, 'hex'))) return undefined;
    return fromRow(row);
  }

  insertKey(key: NewKey): KeyRecord {
    const env = envOfSecret(key.secret);
    if (env === null) throw new Error('keys: a secret key starts with sk_test_ or sk_live_');
    const record: KeyRecord = {
      id: `key_${ulid(key.nowMs)}`,
      hash: hashKey(key.secret),
      prefix: key.secret.slice(0, KEY_PREFIX_CHARS),
      account: key.account,
      env,
      scopes: key.scopes ?? ['*'],
      ipAllow: key.ipAllow ?? [],
      customerId: key.customerId ?? null,
      status: 'active',
      createdAtMs: key.nowMs,
      expiresAtMs: null,
      label: key.label ?? null,
    };
    const inserted = this.db
      .prepare(
        `INSERT INTO api_keys (id, hash, prefix, account, env, scopes, ip_allow, customer_id, status, created_at_ms, expires_at_ms, label)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(hash) DO NOTHING`,
      )
      .run(record.id, record.hash, record.prefix, record.account, record.env, JSON.stringify(record.scopes), JSON.stringify(record.ipAllow), record.customerId, record.status, record.createdAtMs, record.expiresAtMs, record.label);
    if (inserted.changes === 1) this.report('api_keys', record.id);
    return this.findBySecret(key.secret)!;
  }

  listKeys(): KeyRecord[] {
    return (this.db.prepare('SELECT * FROM api_keys ORDER BY created_at_ms').all() as KeyRow[]).map(fromRow);
  }

  countKeys(): number {
    return (this.db.prepare('SELECT count(*) AS n FROM api_keys').get() as { n: number }).n;
  }

  findById(id: string): KeyRecord | undefined {
    const row = this.db.prepare('SELECT * FROM api_keys WHERE id = ?').get(id) as KeyRow | undefined;
    return row === undefined ? undefined : fromRow(row);
  }

  revoke(id: string): boolean {
    const done = this.db.prepare("UPDATE api_keys SET status = 'revoked' WHERE id = ?").run(id).changes === 1;
    if (done) this.report('api_keys', id);
    return done;
  }

  /** A new key with the old one's grants; the old one keeps working until `graceMs` has passed. */
  rotate(id: string, options: { graceMs: number; nowMs: number }): { secret: string; record: KeyRecord } {
    const old = this.findById(id);
    if (old === undefined || old.status !== 'active') throw new Error(`keys: no active key ${id}`);
    // An expired key stays dead: rotating it again must not bring its secret back.
    if (keyExpired(old, options.nowMs)) throw new Error(`keys: key ${id} has expired (rotated); rotate its replacement instead`);
    const secret = generateSecret(old.env);
    const record = this.insertKey({ secret, account: old.account, scopes: old.scopes, ipAllow: old.ipAllow, customerId: old.customerId, label: old.label, nowMs: options.nowMs });
    // A second rotation during the grace may shorten the old key's life, never lengthen it.
    const expiresAtMs = Math.min(old.expiresAtMs ?? Number.POSITIVE_INFINITY, options.nowMs + options.graceMs);
    this.db.prepare('UPDATE api_keys SET expires_at_ms = ? WHERE id = ?').run(expiresAtMs, id);
    this.report('api_keys', id);
    return { secret, record };
  }

  clockOffsets(): Array<[string, number]> {
    return (this.db.prepare('SELECT owner, offset_ms FROM clocks').all() as Array<{ owner: string; offset_ms: number }>).map((r) => [r.owner, r.offset_ms]);
  }

  setClockOffset(owner: string, offsetMs: number): void {
    this.db.prepare('INSERT INTO clocks (owner, offset_ms) VALUES (?, ?) ON CONFLICT(owner) DO UPDATE SET offset_ms = excluded.offset_ms').run(owner, offsetMs);
    this.report('clocks', owner);
  }

  queueAction(action: Pick<OperatorAction, 'kind' | 'target' | 'payload'>, nowMs: number): string {
    const id = `act_${ulid(nowMs)}`;
    this.db.prepare('INSERT INTO operator_actions (id, kind, target, payload, created_at_ms) VALUES (?, ?, ?, ?, ?)').run(id, action.kind, action.target, JSON.stringify(action.payload), nowMs);
    this.report('operator_actions', id);
    return id;
  }

  pendingActions(limit = 100): OperatorAction[] {
    return (this.db.prepare('SELECT * FROM operator_actions WHERE done_at_ms IS NULL ORDER BY id LIMIT ?').all(limit) as ActionRow[]).map(actionOf);
  }

  action(id: string): OperatorAction | undefined {
    const row = this.db.prepare('SELECT * FROM operator_actions WHERE id = ?').get(id) as ActionRow | undefined;
    return row === undefined ? undefined : actionOf(row);
  }

  /** The action once the server has applied it, or undefined if it has not within `timeoutMs`. */
  async appliedAction(id: string, timeoutMs: number, pollMs = 50): Promise<OperatorAction | undefined> {
    for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, pollMs))) {
      const action = this.action(id);
      if (action?.doneAtMs != null) return action;
    }
    return undefined;
  }

  completeAction(id: string, result: string, nowMs: number): void {
    this.db.prepare('UPDATE operator_actions SET done_at_ms = ?, result = ? WHERE id = ?').run(nowMs, result, id);
    this.report('operator_actions', id);
  }

  /** Hands the row as it now is to the replica (cluster mode only). */
  report(table: ReplicatedTable, key: RowValue): void {
    if (this.replica === null) return;
    const change = changeOf(this.db, table, key);
    if (change !== undefined) this.replica.record(change);
  }

  close(): void {
    this.db.close();
  }
}

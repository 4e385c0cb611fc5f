// webhooks.db: subscriptions (with their signing secrets), the events handed over by the shards'
// outboxes, and deliveries with every attempt. Main thread (the dispatcher) and the operator CLI.
// Invariant: an event is stored once (by id) and gets one delivery per subscription that was active
// and subscribed to its type when it arrived; events fired while a subscription is disabled are not queued.
// Statuses and failure counters move only as the webhook subscription and delivery machines' tables say.
import path from 'node:path';
import type Database from 'better-sqlite3';
import { ulid } from 'ulid';
import { webhookDeliveryTable, type DeliveryEvent } from '../../machines/webhook-delivery.machine.ts';
import { webhookSubscriptionTable, type SubscriptionEffect, type SubscriptionEvent } from '../../machines/webhook-subscription.machine.ts';
import { openDatabase } from '../store/shard-store.ts';
import type { OutboxEvent } from '../shard/state.ts';
import { changeOf, type ReplicaSink } from '../store/replica-rows.ts';
import { Statements } from '../store/statements.ts';

export interface Subscription {
  id: string;
  owner: string;
  url: string;
  events: string[];
  secret: string;
  status: 'active' | 'disabled';
  consecutiveFailures: number;
  createdAtMs: number;
  updatedAtMs: number;
}

export interface Attempt {
  n: number;
  atMs: number;
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  ok: boolean;
}

export interface Delivery {
  id: string;
  eventId: string;
  subscriptionId: string;
  owner: string;
  eventType: string;
  eventKey: string;
  status: 'pending' | 'succeeded' | 'failed';
  attempts: number;
  nextAttemptAtMs: number | null;
  lastStatusCode: number | null;
  lastDurationMs: number | null;
  lastError: string | null;
  createdAtMs: number;
  updatedAtMs: number;
}

interface SubscriptionRow {
  id: string;
  owner: string;
  url: string;
  events: string;
  secret: string;
  status: 'active' | 'disabled';
  consecutive_failures: number;
  created_at_ms: number;
  updated_at_ms: number;
}

interface DeliveryRow {
  id: string;
  event_id: string;
  subscription_id: string;
  owner: string;
  event_type: string;
  event_key: string;
  status: Delivery['status'];
  attempts: number;
  next_attempt_at_ms: number | null;
  last_status_code: number | null;
  last_duration_ms: number | null;
  last_error: string | null;
  created_at_ms: number;
  updated_at_ms: number;
}

const fromSubscription = (r: SubscriptionRow): Subscription => ({
  id: r.id,
  owner: r.owner,
  url: r.url,
  events: JSON.parse(r.events) as string[],
  secret: r.secret,
  status: r.status,
  consecutiveFailures: r.consecutive_failures,
  createdAtMs: r.created_at_ms,
  updatedAtMs: r.updated_at_ms,
});

/** consecutive_failures after a subscription step's effects. */
function failuresAfter(failures: number, effects: readonly SubscriptionEffect[]): number {
  if (effects.includes('resetFailures')) return 0;
  return effects.includes('countFailure') ? failures + 1 : failures;
}

const NO_CONTEXT: Record<string, never> = {};

const fromDelivery = (r: DeliveryRow): Delivery => ({
  id: r.id,
  eventId: r.event_id,
  subscriptionId: r.subscription_id,
  owner: r.owner,
  eventType: r.event_type,
  eventKey: r.event_key,
  status: r.status,
  attempts: r.attempts,
  nextAttemptAtMs: r.next_attempt_at_ms,
  lastStatusCode: r.last_status_code,
  lastDurationMs: r.last_duration_ms,
  lastError: r.last_error,
  createdAtMs: r.created_at_ms,
  updatedAtMs: r.updated_at_ms,
});

export interface AttemptResult {
  deliveryId: string;
  subscriptionId: string;
  attempt: Attempt;
  nextAttemptAtMs: number | null;
  disableAfter: number;
}

export class WebhookStore {
  readonly db: Database.Database;
  /** Cluster mode: subscription changes are reported here to be replicated (null: single node). */
  replica: ReplicaSink | null = null;
  /**
   * Each statement prepared once: every shard batch with outbox events runs `ingest` and the dispatcher's
   * tick (`due`), and preparing them per call was ~1.5 % of a wallet payment's CPU.
   */
  private readonly statements: Statements;

  constructor(dataDir: string) {
    this.db = openDatabase(path.join(dataDir, 'webhooks.db'));
    this.statements = new Statements(this.db);
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS subscriptions (
        id TEXT PRIMARY KEY, owner TEXT NOT NULL, url TEXT NOT NULL, events TEXT NOT NULL, secret TEXT NOT NULL,
        status TEXT NOT NULL, consecutive_failures INTEGER NOT NULL, created_at_ms INTEGER NOT NULL, updated_at_ms INTEGER NOT NULL);
      CREATE TABLE IF NOT EXISTS events (
        id TEXT PRIMARY KEY, owner TEXT NOT NULL, type TEXT NOT NULL, key TEXT NOT NULL, occurred_at_ms INTEGER NOT NULL, data TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS deliveries (
        id TEXT PRIMARY KEY, event_id TEXT NOT NULL, subscription_id TEXT NOT NULL, owner TEXT NOT NULL,
        event_type TEXT NOT NULL, event_key TEXT NOT NULL, status TEXT NOT NULL, attempts INTEGER NOT NULL,
        next_attempt_at_ms INTEGER, last_status_code INTEGER, last_duration_ms INTEGER, last_error TEXT,
        created_at_ms INTEGER NOT NULL, updated_at_ms INTEGER NOT NULL);
      CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries (status, next_attempt_at_ms);
      CREATE INDEX IF NOT EXISTS deliveries_owner ON deliveries (owner, created_at_ms);
      CREATE TABLE IF NOT EXISTS attempts (
        delivery_id TEXT NOT NULL, n INTEGER NOT NULL, at_ms INTEGER NOT NULL, status_code INTEGER,
        duration_ms INTEGER NOT NULL, error TEXT, ok INTEGER NOT NULL, PRIMARY KEY (delivery_id, n));
    `);
  }

  createSubscription(fields: { owner: string; url: string; events: string[]; secret: string; nowMs: number }): Subscription {
    const id = ulid(fields.nowMs);
    this.statements
      .get('INSERT INTO subscriptions VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?)')
      .run(id, fields.owner, fields.url, JSON.stringify(fields.events), fields.secret, 'active', fields.nowMs, fields.nowMs);
    this.report(id);
    return this.subscription(id)!;
  }

  subscription(id: string): Subscription | undefined {
    const row = this.statements.get('SELECT * FROM subscriptions WHERE id = ?').get(id) as SubscriptionRow | undefined;
    return row === undefined ? undefined : fromSubscription(row);
  }

  subscriptions(owner?: string): Subscription[] {
    const rows = (owner === undefined
      ? this.statements.get('SELECT * FROM subscriptions ORDER BY created_at_ms').all()
      : this.statements.get('SELECT * FROM subscriptions WHERE owner = ? ORDER BY created_at_ms').all(owner)) as SubscriptionRow[];
    return rows.map(fromSubscription);
  }

  /** An operator's enable or disable (failures reset to 0); one already in that status just has its failures reset. */
  setStatus(id: string, status: 'active' | 'disabled', nowMs: number): boolean {
    const sub = this.subscription(id);
    if (sub === undefined) return false;
    const step = webhookSubscriptionTable.step(sub.status, sub, { type: status === 'active' ? 'enable' : 'disable', atMs: nowMs });
    const done = this.statements.get('UPDATE subscriptions SET status = ?, consecutive_failures = 0, updated_at_ms = ? WHERE id = ?').run(step?.target ?? sub.status, nowMs, id).changes === 1;
    if (done) this.report(id);
    return done;
  }

  /** Hands a subscription's row as it now is to the replica (cluster mode only). */
  private report(id: string): void {
    if (this.replica === null) return;
    const change = changeOf(this.db, 'subscriptions', id);
    if (change !== undefined) this.replica.record(change);
  }

  /**
   * Stores events (ignoring ones already stored) and queues a delivery for each active subscription of
   * the event's owner that lists its type. One transaction: the shard is acknowledged only after it.
   */
  ingest(events: readonly OutboxEvent[], nowMsOf: (owner: string) => number): number {
    // Events nobody is subscribed to are not stored: there is nothing to deliver, and storing them would
    // cost the main thread an fsync per batch (the shard's WAL keeps the change itself in any case).
    const active = this.subscriptions().filter((s) => s.status === 'active');
    const wanted = events.filter((e) => active.some((s) => s.owner === e.owner && s.events.includes(e.type)));
    if (wanted.length === 0) return 0;
    let queued = 0;
    const insertEvent = this.statements.get('INSERT OR IGNORE INTO events VALUES (?, ?, ?, ?, ?, ?)');
    const insertDelivery = this.statements.get(
      "INSERT INTO deliveries VALUES (?, ?, ?, ?, ?, ?, 'pending', 0, ?, NULL, NULL, NULL, ?, ?)",
    );
    this.db.transaction(() => {
      for (const event of wanted) {
        if (insertEvent.run(event.id, event.owner, event.type, event.key, event.occurredAtMs, JSON.stringify(event.data)).changes === 0) continue;
        for (const sub of active) {
          if (sub.owner !== event.owner || !sub.events.includes(event.type)) continue;
          const now = nowMsOf(event.owner);
          insertDelivery.run(ulid(), event.id, sub.id, event.owner, event.type, event.key, now, now, now);
          queued += 1;
        }
      }
    })();
    return queued;
  }

  /** Pending deliveries of active subscriptions, earliest due first. */
  due(limit: number): Array<Delivery & { subscription: Subscription }> {
    const rows = this.statements
      .get(
        `SELECT d.* FROM deliveries d JOIN subscriptions s ON s.id = d.subscription_id
         WHERE d.status = 'pending' AND s.status = 'active' ORDER BY d.next_attempt_at_ms LIMIT ?`,
      )
      .all(limit) as DeliveryRow[];
    const subs = new Map(this.subscriptions().map((s) => [s.id, s]));
    return rows.map((r) => Object.assign({}, fromDelivery(r), { subscription: subs.get(r.subscription_id)! }));
  }

  event(id: string): { id: string; type: string; key: string; occurredAtMs: number; data: Record<string, unknown> } | undefined {
    const row = this.statements.get('SELECT * FROM events WHERE id = ?').get(id) as { id: string; type: string; key: string; occurred_at_ms: number; data: string } | undefined;
    return row === undefined ? undefined : { id: row.id, type: row.type, key: row.key, occurredAtMs: row.occurred_at_ms, data: JSON.parse(row.data) as Record<string, unknown> };
  }

  /**
   * Records attempt outcomes (one transaction) and moves subscriptions' failure counters. `updated_at`
   * is each attempt's own time, on its owner's clock, like the delivery's `created_at` and attempt log.
   * Returns the subscriptions these failures disabled, with their failure count, for the operator's log.
   */
  record(results: readonly AttemptResult[]): Array<{ subscriptionId: string; consecutiveFailures: number }> {
    const disabled: Array<{ subscriptionId: string; consecutiveFailures: number }> = [];
    this.db.transaction(() => {
      for (const r of results) {
        const a = r.attempt;
        this.statements.get('INSERT INTO attempts VALUES (?, ?, ?, ?, ?, ?, ?)').run(r.deliveryId, a.n, a.atMs, a.statusCode, a.durationMs, a.error, a.ok ? 1 : 0);
        const delivery = this.statements.get('SELECT status FROM deliveries WHERE id = ?').get(r.deliveryId) as Pick<DeliveryRow, 'status'> | undefined;
        const attempted: DeliveryEvent = a.ok ? { type: 'attempt.succeeded', atMs: a.atMs } : { type: 'attempt.failed', atMs: a.atMs, nextAttemptAtMs: r.nextAttemptAtMs };
        // A delivery that is no longer pending keeps its outcome: the attempt is logged, nothing moves.
        const moved = delivery === undefined ? null : webhookDeliveryTable.step(delivery.status, NO_CONTEXT, attempted);
        if (moved !== null) {
          this.statements
            .get('UPDATE deliveries SET status = ?, attempts = ?, next_attempt_at_ms = ?, last_status_code = ?, last_duration_ms = ?, last_error = ?, updated_at_ms = ? WHERE id = ?')
            .run(moved.target, a.n, moved.actions.includes('scheduleAttempt') ? r.nextAttemptAtMs : null, a.statusCode, a.durationMs, a.error, a.atMs, r.deliveryId);
        }
        const sub = this.statements.get('SELECT status, consecutive_failures FROM subscriptions WHERE id = ?').get(r.subscriptionId) as Pick<SubscriptionRow, 'status' | 'consecutive_failures'> | undefined;
        const outcome: SubscriptionEvent = a.ok ? { type: 'delivery.succeeded', atMs: a.atMs } : { type: 'delivery.failed', atMs: a.atMs, disableAfter: r.disableAfter };
        const step = sub === undefined ? null : webhookSubscriptionTable.step(sub.status, { consecutiveFailures: sub.consecutive_failures }, outcome);
        if (sub !== undefined && step !== null) {
          const failures = failuresAfter(sub.consecutive_failures, step.actions);
          this.statements
            .get('UPDATE subscriptions SET status = ?, consecutive_failures = ?, updated_at_ms = ? WHERE id = ?')
            .run(step.target, failures, a.atMs, r.subscriptionId);
          if (sub.status === 'active' && step.target === 'disabled') disabled.push({ subscriptionId: r.subscriptionId, consecutiveFailures: failures });
        }
      }
    })();
    // A subscription the failures disabled stays disabled on every node; failure counts stay local.
    for (const d of disabled) this.report(d.subscriptionId);
    return disabled;
  }

  /**
   * Pending deliveries by their subscription's status, with the oldest one's age on its owner's clock
   * (a disabled subscription's deliveries wait for an operator). Read at scrape time: one grouped query.
   */
  backlog(nowMsOf: (owner: string) => number): Array<{ subscriptionStatus: Subscription['status']; pending: number; oldestAgeMs: number }> {
    const rows = this.statements
      .get(
        `SELECT s.status AS status, d.owner AS owner, COUNT(*) AS n, MIN(d.created_at_ms) AS oldest
         FROM deliveries d JOIN subscriptions s ON s.id = d.subscription_id WHERE d.status = 'pending' GROUP BY s.status, d.owner`,
      )
      .all() as Array<{ status: Subscription['status']; owner: string; n: number; oldest: number }>;
    const byStatus = new Map<Subscription['status'], { pending: number; oldestAgeMs: number }>([['active', { pending: 0, oldestAgeMs: 0 }], ['disabled', { pending: 0, oldestAgeMs: 0 }]]);
    for (const row of rows) {
      const total = byStatus.get(row.status);
      if (total === undefined) continue;
      total.pending += row.n;
      total.oldestAgeMs = Math.max(total.oldestAgeMs, nowMsOf(row.owner) - row.oldest);
    }
    return [...byStatus].map(([subscriptionStatus, total]) => ({ subscriptionStatus, ...total }));
  }

  delivery(id: string): Delivery | undefined {
    const row = this.statements.get('SELECT * FROM deliveries WHERE id = ?').get(id) as DeliveryRow | undefined;
    return row === undefined ? undefined : fromDelivery(row);
  }

  attemptsOf(deliveryId: string): Attempt[] {
    return (this.statements.get('SELECT * FROM attempts WHERE delivery_id = ? ORDER BY n').all(deliveryId) as Array<{ n: number; at_ms: number; status_code: number | null; duration_ms: number; error: string | null; ok: number }>).map(
      (r) => ({ n: r.n, atMs: r.at_ms, statusCode: r.status_code, durationMs: r.duration_ms, error: r.error, ok: r.ok === 1 }),
    );
  }

  deliveries(filter: { owner: string; subscriptionId?: string; eventType?: string; status?: string; limit: number }): Delivery[] {
    const where = ['owner = ?'];
    const args: Array<string | number> = [filter.owner];
    if (filter.subscriptionId !== undefined) (where.push('subscription_id = ?'), args.push(filter.subscriptionId));
    if (filter.eventType !== undefined) (where.push('event_type = ?'), args.push(filter.eventType));
    if (filter.status !== undefined) (where.push('status = ?'), args.push(filter.status));
    const rows = this.statements.get(`SELECT * FROM deliveries WHERE ${where.join(' AND ')} ORDER BY created_at_ms DESC, id DESC LIMIT ?`).all(...args, filter.limit) as DeliveryRow[];
    return rows.map(fromDelivery);
  }

  /** A fresh delivery of the same event to the same subscription, due now. */
  redeliver(original: Delivery, nowMs: number): Delivery {
    const id = ulid();
    this.statements
      .get("INSERT INTO deliveries VALUES (?, ?, ?, ?, ?, ?, 'pending', 0, ?, NULL, NULL, NULL, ?, ?)")
      .run(id, original.eventId, original.subscriptionId, original.owner, original.eventType, original.eventKey, nowMs, nowMs, nowMs);
    return this.delivery(id)!;
  }

  close(): void {
    this.db.close();
  }
}

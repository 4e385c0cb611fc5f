// The webhook dispatcher: takes outbox events from the shards (stores them, then acknowledges),
// delivers them signed to each subscription, and retries on the spec's schedule on the sandbox clock.
// Main thread, off the shards' critical path; at most `perEndpointMax` attempts in flight per
// subscription, so a dead receiver delays only its own deliveries.
// Invariant: at-least-once: a delivery is marked done only after a 200/201/202/204 within the timeout.
import type { OutboxEvent } from '../shard/state.ts';
import { partitionOfId } from '../ids.ts';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { resolveDelivery, systemLookup, type LookupAll, type ResolvedTarget, type UrlPolicyOptions } from './url-policy.ts';
import { ATTEMPTS_MAX, SUCCESS_STATUSES, nextAttemptAtMs } from './schedule.ts';
import { signature } from './verify-webhook.ts';
import type { AttemptResult, Delivery, Subscription, WebhookStore } from './store.ts';
import { isoTime } from '../iso-time.ts';

export interface DispatcherOptions {
  store: WebhookStore;
  /** Sandbox-clock now for an owner (wall time for live). */
  nowMsOf: (owner: string) => number;
  /** Acknowledge outbox events to the partition that holds them. */
  ack: (partition: number, ids: string[]) => Promise<unknown>;
  timeoutMs: number;
  perEndpointMax: number;
  disableAfter: number;
  tickMs: number;
  dueBatchMax?: number;
  /** Name resolution for deliveries (injectable: tests need no DNS). */
  lookup?: LookupAll;
  urlPolicy?: UrlPolicyOptions;
  log: (message: string) => void;
  /** Failed attempts and subscriptions disabled by failures: each one line at warn, for the operator. */
  warn?: (message: string, fields: Record<string, unknown>) => void;
  /** Each attempt's outcome (delivered, rejected, timeout, error), for metrics. */
  onAttempt?: (outcome: 'delivered' | 'rejected' | 'timeout' | 'error') => void;
}

export class Dispatcher {
  private readonly inFlight = new Map<string, number>();
  private readonly running = new Set<string>();
  private readonly results: AttemptResult[] = [];
  private timer: NodeJS.Timeout | null = null;
  private flushScheduled = false;
  private stopped = false;

  constructor(private readonly options: DispatcherOptions) {}

  start(): void {
    this.timer = setInterval(() => this.tick(), this.options.tickMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearInterval(this.timer);
    const deadline = Date.now() + this.options.timeoutMs;
    while (this.running.size > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    this.flush();
  }

  /** Stores events durably, then acknowledges them to their partitions (which drop them from the outbox). */
  ingest(events: readonly OutboxEvent[]): void {
    const queued = this.options.store.ingest(events, this.options.nowMsOf);
    const byPartition = new Map<number, string[]>();
    for (const event of events) {
      const partition = partitionOfId(event.id);
      const ids = byPartition.get(partition);
      if (ids === undefined) byPartition.set(partition, [event.id]);
      else ids.push(event.id);
    }
    for (const [partition, ids] of byPartition) void this.options.ack(partition, ids);
    // New deliveries start now; without any, the periodic tick has nothing new to find (the query is not free).
    if (queued > 0) this.tick();
  }

  /** Starts every due attempt that fits its endpoint's concurrency bound. */
  tick(): void {
    if (this.stopped) return;
    for (const delivery of this.options.store.due(this.options.dueBatchMax ?? 500)) {
      if (this.running.has(delivery.id)) continue;
      if ((delivery.nextAttemptAtMs ?? 0) > this.options.nowMsOf(delivery.owner)) continue;
      const busy = this.inFlight.get(delivery.subscriptionId) ?? 0;
      if (busy >= this.options.perEndpointMax) continue;
      this.inFlight.set(delivery.subscriptionId, busy + 1);
      this.running.add(delivery.id);
      // Released when the outcome is written (flush), so no tick can start the same attempt twice.
      void this.attempt(delivery, delivery.subscription);
    }
  }

  private async attempt(delivery: Delivery, subscription: Subscription): Promise<void> {
    const event = this.options.store.event(delivery.eventId);
    if (event === undefined) {
      this.release(delivery.id, delivery.subscriptionId);
      return;
    }
    const body = JSON.stringify({
      id: event.id,
      event_type: event.type,
      event_key: event.key,
      occurred_at: isoTime(event.occurredAtMs),
      data: event.data,
    });
    // Wall-clock seconds: receivers compare the timestamp with their own clock, not the sandbox's.
    const timestamp = String(Math.floor(Date.now() / 1000));
    const started = performance.now();
    let statusCode: number | null = null;
    let error: string | null = null;
    const env = subscription.owner.startsWith('test:') ? 'test' : 'live';
    try {
      const target = await resolveDelivery(subscription.url, env, this.options.lookup ?? systemLookup, this.options.urlPolicy);
      if (typeof target === 'string') throw new Error(target);
      statusCode = await post(target, {
        'content-type': 'application/json',
        'user-agent': 'kobo-webhooks/1',
        'x-service-signature': signature(subscription.secret, timestamp, body),
        'x-service-timestamp': timestamp,
      }, body, this.options.timeoutMs);
      if (!SUCCESS_STATUSES.has(statusCode)) error = statusCode >= 300 && statusCode < 400 ? 'redirects are not followed' : `HTTP ${statusCode}`;
    } catch (cause) {
      const e = cause as Error;
      const timedOut = e.name === 'TimeoutError' || (e.name === 'AbortError' && (e.cause as Error | undefined)?.name === 'TimeoutError');
      error = timedOut ? `no answer within ${this.options.timeoutMs} ms` : e.message;
    }
    const ok = error === null;
    this.options.onAttempt?.(ok ? 'delivered' : statusCode !== null ? 'rejected' : error?.startsWith('no answer within') === true ? 'timeout' : 'error');
    const atMs = this.options.nowMsOf(delivery.owner);
    const n = delivery.attempts + 1;
    const next = ok ? null : n >= ATTEMPTS_MAX ? null : nextAttemptAtMs(n, atMs);
    this.results.push({
      deliveryId: delivery.id,
      subscriptionId: subscription.id,
      attempt: { n, atMs, statusCode, durationMs: Math.round(performance.now() - started), error, ok },
      nextAttemptAtMs: next,
      disableAfter: this.options.disableAfter,
    });
    if (!ok) this.warnFailed(delivery, subscription, { n, statusCode, error: error ?? '', next });
    this.scheduleFlush();
  }

  /** One warn line per failed attempt: which delivery, where (the host only: a URL may carry a token), why, what next. */
  private warnFailed(delivery: Delivery, subscription: Subscription, failed: { n: number; statusCode: number | null; error: string; next: number | null }): void {
    let host = '';
    try {
      host = new URL(subscription.url).host;
    } catch {
      host = '(unparsable URL)';
    }
    const then = failed.next === null ? 'no attempt is left: the delivery has failed' : `next attempt at ${new Date(failed.next).toISOString()}`;
    this.options.warn?.(`webhook delivery failed: ${delivery.id} (${delivery.eventType}) to ${host}, attempt ${failed.n} of ${ATTEMPTS_MAX}: ${failed.error}; ${then}`, {
      delivery_id: delivery.id,
      subscription_id: subscription.id,
      event_type: delivery.eventType,
      host,
      attempt: failed.n,
      status_code: failed.statusCode,
      error: failed.error,
      next_attempt_at: failed.next === null ? null : new Date(failed.next).toISOString(),
    });
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    // Outcomes of one turn are written in one sqlite transaction: one fsync, not one per attempt.
    setImmediate(() => {
      this.flushScheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    if (this.results.length === 0) return;
    const batch = this.results.splice(0);
    for (const { subscriptionId, consecutiveFailures } of this.options.store.record(batch)) {
      this.options.warn?.(
        `webhook subscription ${subscriptionId} disabled after ${consecutiveFailures} consecutive failed deliveries; its new events are not queued until an operator re-enables it (kobo webhooks enable ${subscriptionId})`,
        { subscription_id: subscriptionId, consecutive_failures: consecutiveFailures },
      );
    }
    for (const r of batch) this.release(r.deliveryId, r.subscriptionId);
    // A freed slot takes the next due delivery now, not at the next timer tick (which would cap a
    // subscription at perEndpointMax deliveries per tick: 16 a second, measured in bench/webhooks).
    this.tick();
  }

  private release(deliveryId: string, subscriptionId: string): void {
    this.running.delete(deliveryId);
    this.inFlight.set(subscriptionId, Math.max(0, (this.inFlight.get(subscriptionId) ?? 1) - 1));
  }
}

/**
 * POSTs `body` to the approved address: the socket connects to `target.address` (a lookup that
 * answers only that), while Host and TLS SNI carry the name. Redirects are never followed; the
 * response body is discarded. Resolves with the status code.
 */
export function post(target: ResolvedTarget, headers: Record<string, string>, body: string, timeoutMs: number): Promise<number> {
  const pinned: LookupFunction = (_host, options, callback) => {
    if (options.all === true) callback(null, target.addresses);
    else callback(null, target.address, target.family);
  };
  const client = target.url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    // `localhost` may answer ::1 first while the receiver listens on 127.0.0.1: each approved address is tried.
    const options: http.RequestOptions & { autoSelectFamily: boolean } = {
      method: 'POST',
      protocol: target.url.protocol,
      hostname: target.host,
      port: target.url.port === '' ? undefined : Number(target.url.port),
      path: `${target.url.pathname}${target.url.search}`,
      headers: Object.assign({}, headers, { host: target.url.host, 'content-length': String(Buffer.byteLength(body)) }),
      lookup: pinned,
      autoSelectFamily: true,
      ...(target.url.protocol === 'https:' && !/^[\d.:]+$/.test(target.host) ? { servername: target.host } : {}),
      agent: false,
      signal: AbortSignal.timeout(timeoutMs),
    };
    const request = client.request(options, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    request.on('error', reject);
    request.end(body);
  });
}

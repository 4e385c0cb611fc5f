// The server's Prometheus metrics (prom-client, one registry per running app): HTTP requests by route
// and status with latency, shard queue depth, group commits and fsync latency, WAL records, snapshot
// duration, webhook deliveries, rail answers by outcome, calls to and callbacks from operator
// connectors, and live FX rates refused. Main thread; shards report once a second.
// Invariant: labels are templates and outcomes (never ids or amounts), so series stay bounded.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { ConnectorCallSample, ShardMetricsMessage } from './shard-metrics.ts';
import { RequestMetrics } from './request-metrics.ts';
import type { BuildInfo } from '../ops/build-info.ts';

const SECONDS_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const BATCH_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];

export class Metrics {
  readonly registry = new Registry();
  /** kobo_http_requests_total and kobo_http_request_duration_seconds, kept outside prom-client until a scrape. */
  private readonly requests = new RequestMetrics(this.registry, SECONDS_BUCKETS);
  private readonly batchSize = new Histogram({ name: 'kobo_group_commit_commands', help: 'Commands per group commit.', labelNames: ['shard'] as const, buckets: BATCH_BUCKETS, registers: [this.registry] });
  private readonly commitSeconds = new Histogram({ name: 'kobo_group_commit_seconds', help: 'Duration of a group commit\'s SQLite transaction (its fsync is kobo_journal_fsync_seconds).', labelNames: ['shard'] as const, buckets: SECONDS_BUCKETS, registers: [this.registry] });
  private readonly syncSeconds = new Histogram({ name: 'kobo_journal_fsync_seconds', help: 'Duration of an fsync of a shard\'s sqlite journal; each covers every group commit before it, and no reply leaves before its own.', labelNames: ['shard'] as const, buckets: SECONDS_BUCKETS, registers: [this.registry] });
  private readonly walRecords = new Counter({ name: 'kobo_wal_records_total', help: 'WAL records appended.', labelNames: ['shard'] as const, registers: [this.registry] });
  private readonly snapshotSeconds = new Histogram({ name: 'kobo_snapshot_duration_seconds', help: 'Time to snapshot a shard\'s changed partitions.', labelNames: ['shard'] as const, buckets: SECONDS_BUCKETS, registers: [this.registry] });
  private readonly rails = new Counter({ name: 'kobo_rail_calls_total', help: 'Rail answers applied, by rail and outcome.', labelNames: ['rail', 'outcome'] as const, registers: [this.registry] });
  private readonly webhooks = new Counter({ name: 'kobo_webhook_deliveries_total', help: 'Webhook delivery attempts, by outcome.', labelNames: ['outcome'] as const, registers: [this.registry] });
  private readonly connectorCalls = new Counter({ name: 'kobo_connector_calls_total', help: 'Requests to operator connectors, by connector, rail kind, op (submit, requery) and outcome (the answer, or unknown/retryable/terminal).', labelNames: ['connector', 'kind', 'op', 'outcome'] as const, registers: [this.registry] });
  private readonly connectorSeconds = new Histogram({ name: 'kobo_connector_call_duration_seconds', help: 'Time from a connector request sent to its answer (or timeout), by connector, kind and op.', labelNames: ['connector', 'kind', 'op'] as const, buckets: SECONDS_BUCKETS, registers: [this.registry] });
  private readonly connectorCallbacks = new Counter({ name: 'kobo_connector_callbacks_total', help: 'Callbacks from operator connectors: accepted (verified; applied or a harmless duplicate) or rejected (bad signature, stale, malformed).', labelNames: ['connector', 'result'] as const, registers: [this.registry] });
  private readonly fxRefused = new Counter({ name: 'kobo_fx_rates_refused_total', help: 'Live FX mid rates refused before pricing anything: outside_band (too far from kobo\'s reference rate) or unusable (not a plain positive decimal), by connector and pair.', labelNames: ['connector', 'pair', 'reason'] as const, registers: [this.registry] });
  private readonly reconciliations = new Counter({ name: 'kobo_reconciliations_total', help: 'Transactions a rail contradicted (event required: an outcome reported after a different final one was recorded; retry is refused until an operator resolves it) and operator resolutions (event resolved), by rail kind.', labelNames: ['kind', 'event'] as const, registers: [this.registry] });
  private readonly workerQueued = new Gauge({ name: 'kobo_shard_worker_queued_commands', help: 'Commands waiting inside a shard worker at its last report.', labelNames: ['shard'] as const, registers: [this.registry] });

  constructor(queueDepths: () => readonly number[]) {
    new Gauge({
      name: 'kobo_shard_queue_depth',
      help: 'Commands sent to a shard and not yet answered (503 UNAVAILABLE past KOBO_SHARD_QUEUE_MAX).',
      labelNames: ['shard'] as const,
      registers: [this.registry],
      collect() {
        queueDepths().forEach((depth, shard) => this.set({ shard: String(shard) }, depth));
      },
    });
    collectDefaultMetrics({ register: this.registry, prefix: 'kobo_' });
  }

  /** The front end's wallet views: how many it keeps and how many reads they answered (read at scrape time). */
  walletViews(views: { size: number; hits: number }): void {
    new Gauge({ name: 'kobo_wallet_views', help: 'Wallet views the front end keeps (wallets changed since start, bounded).', registers: [this.registry], collect() { this.set(views.size); } });
    new Counter({
      name: 'kobo_wallet_view_reads_total',
      help: 'Wallet reads answered from the front end\'s views, without a shard hop.',
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(views.hits);
      },
    });
  }

  /** kobo_build_info: always 1, labelled with the version, the Node version and the commit built. */
  buildInfo(info: BuildInfo): void {
    new Gauge({ name: 'kobo_build_info', help: 'Always 1: what this server is (version, Node version, commit dist/ was built from, or unknown).', labelNames: ['version', 'node_version', 'commit'] as const, registers: [this.registry] })
      .set({ version: info.version, node_version: info.nodeVersion, commit: info.commit }, 1);
  }

  /** The webhook backlog, read at scrape time: pending deliveries and the oldest one's age, by subscription status. */
  webhookBacklog(read: () => ReadonlyArray<{ subscriptionStatus: string; pending: number; oldestAgeMs: number }>): void {
    type Rows = ReturnType<typeof read>;
    // Both gauges are collected in the same turn of one scrape: one query serves the two.
    let turn: Rows | null = null;
    const rows = (): Rows => {
      if (turn === null) {
        turn = read();
        setImmediate(() => (turn = null));
      }
      return turn;
    };
    new Gauge({
      name: 'kobo_webhook_backlog_deliveries',
      help: 'Webhook deliveries pending (not yet delivered nor failed for good), by subscription status (a disabled subscription\'s wait for an operator).',
      labelNames: ['subscription_status'] as const,
      registers: [this.registry],
      collect() {
        for (const row of rows()) this.set({ subscription_status: row.subscriptionStatus }, row.pending);
      },
    });
    new Gauge({
      name: 'kobo_webhook_oldest_pending_age_seconds',
      help: 'Age of the oldest pending webhook delivery (0 when none), on its owner\'s clock, by subscription status.',
      labelNames: ['subscription_status'] as const,
      registers: [this.registry],
      collect() {
        for (const row of rows()) this.set({ subscription_status: row.subscriptionStatus }, row.oldestAgeMs / 1000);
      },
    });
  }

  request(method: string, route: string, status: number, seconds: number): void {
    this.requests.observe(method, route === '' ? 'unmatched' : route, status, seconds);
  }

  shard(message: ShardMetricsMessage): void {
    const shard = String(message.shard);
    for (const size of message.batchSizes) this.batchSize.observe({ shard }, size);
    for (const seconds of message.commitSeconds) this.commitSeconds.observe({ shard }, seconds);
    for (const seconds of message.syncSeconds) this.syncSeconds.observe({ shard }, seconds);
    for (const seconds of message.snapshotSeconds) this.snapshotSeconds.observe({ shard }, seconds);
    if (message.walRecords > 0) this.walRecords.inc({ shard }, message.walRecords);
    for (const [key, count] of Object.entries(message.rails)) {
      const at = key.indexOf(':');
      this.rails.inc({ rail: key.slice(0, at), outcome: key.slice(at + 1) }, count);
    }
    this.workerQueued.set({ shard }, message.queued);
    for (const sample of message.connectorCalls) this.connectorCall(sample);
    for (const { reconciliation } of message.reconciliations) this.reconciliations.inc({ kind: reconciliation.kind, event: reconciliation.status });
  }

  connectorCall(sample: ConnectorCallSample): void {
    const labels = { connector: sample.connector, kind: sample.kind, op: sample.op };
    this.connectorCalls.inc(Object.assign({}, labels, { outcome: sample.outcome }));
    this.connectorSeconds.observe(labels, sample.seconds);
  }

  /** `connector` is a configured name, or `unknown` for a path naming none (the label set stays bounded). */
  connectorCallback(connector: string, result: 'accepted' | 'rejected'): void {
    this.connectorCallbacks.inc({ connector, result });
  }

  /** `pair` is FROM/TO of kobo's reference currencies (a rate for any other pair is never asked for). */
  fxRateRefused(connector: string, pair: string, reason: string): void {
    this.fxRefused.inc({ connector, pair, reason });
  }

  webhook(outcome: string): void {
    this.webhooks.inc({ outcome });
  }

  async text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}

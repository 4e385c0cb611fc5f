// Composition of the server: data dir layout, control store and keys, shard pool, indexes, routes,
// HTTP front end. Main thread. Used by src/main.ts and by tests and benches that start a real server.
// Invariant: the server listens only after every shard has recovered and the indexes are rebuilt.
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { keyEntry, PARTITIONS, SECRET_KEY_PATTERN, type Config } from './config.ts';
import assert from 'node:assert/strict';
import { connectorRoutes } from './api/connectors.ts';
import { coverageOf } from './connectors/connector-config.ts';
import { setConnectors } from './rails/coverage.ts';
import { setLiveRails } from './rails/rails.ts';
import { connectorRail } from './connectors/client.ts';
import { partitionOfId } from './ids.ts';
import { ensureLayout, readLayout } from './shard/layout.ts';
import { ownerCluster } from './cluster/owner-child.ts';
import { replicateControlRows } from './cluster/control-log.ts';
import { restrictDataDir } from './store/private-files.ts';
import { describeHolder, RESTORE_MARKER, tryLockDataDir } from './store/dir-lock.ts';
import type { ReconciliationNotice } from './metrics/shard-metrics.ts';
import { ShardPool } from './shard/pool.ts';
import type { IndexMessage } from './shard/protocol.ts';
import { ControlStore, generateSecret, type OperatorAction } from './store/control-store.ts';
import type { Command } from './shard/protocol.ts';
import { Authenticator } from './http/auth.ts';
import { RateLimiter } from './http/rate-limit.ts';
import { IdempotencyIndex } from './http/idempotency.ts';
import { Router } from './http/router.ts';
import { HttpServer } from './http/server.ts';
import { TrustProxy } from './http/trust-proxy.ts';
import { FrontIdempotencyStore } from './http/idempotency-store.ts';
import { CustomerIndex } from './api/customer-index.ts';
import { SandboxClocks } from './api/clocks.ts';
import type { ApiDeps } from './api/deps.ts';
import type { FxTrust } from './api/live-fx.ts';
import { WalletViews } from './api/wallet-views.ts';
import { countryRoutes } from './api/countries.ts';
import { customerRoutes } from './api/customers.ts';
import { transactionRoutes } from './api/transactions.ts';
import { paymentRoutes } from './api/payments.ts';
import { exchangeRoutes } from './api/exchange.ts';
import { transferRoutes } from './api/transfers.ts';
import { checkoutRoutes } from './api/checkout.ts';
import { serviceOrderRoutes } from './api/service-orders.ts';
import { serviceCatalogueRoutes } from './api/services-catalogue.ts';
import { webhookRoutes } from './api/webhooks.ts';
import { keyRoutes } from './api/keys.ts';
import { listRoutes } from './api/lists.ts';
import { EventStream } from './api/event-stream.ts';
import { WebhookStore } from './webhooks/store.ts';
import { Dispatcher } from './webhooks/dispatcher.ts';
import { testHelperRoutes } from './api/test-helpers.ts';
import { buildOpenApi, openApiRoute } from './api/openapi.ts';
import { Metrics } from './metrics/metrics.ts';
import { opsRoutes } from './ops/routes.ts';
import { renderDocsPage } from './ops/docs-page.ts';
import { consoleRoutes } from './console/routes.ts';
import type { Logging } from './ops/logger.ts';
import { BUILD_INFO } from './ops/build-info.ts';

export interface RunningApp {
  port: number;
  /** The sandbox key created on first start when none was configured (shown once). */
  createdKey: string | null;
  /** The shard count in use: KOBO_SHARDS, or the data dir's recorded count when KOBO_SHARDS is unset. */
  shards: number;
  /** Where the shards run: worker threads, or inline on the main thread (KOBO_SHARD_MODE). */
  shardMode: 'threads' | 'inline';
  /**
   * Graceful stop: refuse new connections, let requests already received finish (at most `drainMs`,
   * default KOBO_DRAIN_MS), then snapshot every partition and close. Resolves with requests cut off.
   */
  stop: (drainMs?: number) => Promise<number>;
}

/** How long a stop waits for webhook attempts in flight to record their outcome. */
const DISPATCHER_STOP_MS = 1_000;
/** Wallet views the front end keeps (~500 B each: ~10 MB), evicted by CLOCK (src/api/wallet-views.ts). */
const WALLET_VIEWS_MAX = 20_000;

export type Log = (message: string, fields?: Record<string, unknown>) => void;

/** Registers KOBO_API_KEYS entries (`key` or `key@account`); creates a sandbox key on a fresh data dir. */
export function bootstrapKeys(control: ControlStore, entries: readonly string[], nowMs: number): string | null {
  for (const entry of entries) {
    const { secret, account: named } = keyEntry(entry);
    const account = named ?? `acct_${createHash('sha256').update(secret).digest('hex').slice(0, 12)}`;
    assert(SECRET_KEY_PATTERN.test(secret), 'bootstrapKeys: loadConfig checked every KOBO_API_KEYS entry');
    control.insertKey({ secret, account, nowMs, label: 'KOBO_API_KEYS' });
  }
  if (entries.length > 0 || control.countKeys() > 0) return null;
  const secret = generateSecret('test');
  control.insertKey({ secret, account: 'default', nowMs, label: 'created at first start' });
  return secret;
}

/**
 * Takes the data dir's lock (see dir-lock.ts) before anything in the dir is read or written: a restore or
 * an offline snapshot holds it for its whole run. server.pid then names this process for operators.
 */
function lockDataDir(dataDir: string): () => void {
  const file = path.join(dataDir, 'server.pid');
  const lock = tryLockDataDir(dataDir, 'server');
  if (lock === null) throw new Error(`data dir ${dataDir} is in use by ${describeHolder(dataDir, 'server')}`);
  if (fs.existsSync(path.join(dataDir, RESTORE_MARKER))) {
    lock.release();
    // A restore stopped between moving the old files out and the backup's in: neither set is whole.
    throw new Error(`data dir ${dataDir} holds an interrupted restore (${RESTORE_MARKER}); run \`kobo restore FILE\` again (what was there is kept beside the dir)`);
  }
  fs.writeFileSync(file, String(process.pid));
  return () => {
    fs.rmSync(file, { force: true });
    lock.release();
  };
}

/** A contradiction a rail reported (or an operator's resolution of one), in the operator's words. */
function logReconciliation(warn: Log, { transactionId, reconciliation: r }: ReconciliationNotice): void {
  const fields = { transaction_id: transactionId, kind: r.kind, entity_id: r.entityId, attempt: r.attempt, rail: r.rail, recorded: r.recorded, reported: r.reported, provider_reference: r.providerReference };
  if (r.status === 'required') {
    warn(`reconciliation required: the ${r.kind} rail ${r.rail} reported ${r.reported} for ${r.entityId} (attempt ${r.attempt}) after kobo recorded ${r.recorded}; transaction ${transactionId} cannot be retried until an operator resolves it (kobo reconcile list)`, fields);
  } else {
    warn(`reconciliation resolved: transaction ${transactionId} keeps the ${r.resolution === 'recorded' ? `recorded outcome (${r.recorded})` : `rail's outcome (${r.reported})`}${r.note === undefined ? '' : `: ${r.note}`}`, { ...fields, resolution: r.resolution });
  }
}

/** How long an online backup may hold cross-shard steps, whatever its CLI asks. */
const FORWARDS_HOLD_MS_MAX = 30_000;
/** A hold asked longer ago than this (say, before a restart) is refused: its backup has given up waiting. */
const FORWARDS_HOLD_STALE_MS = 20_000;

/** A backup's hold on cross-shard steps (see ForwardGate): the result the CLI waits for. */
async function forwardsAction(pool: ShardPool, action: OperatorAction): Promise<string> {
  if (action.kind === 'forwards.release') return pool.releaseForwards(action.target) ? 'ok' : 'NOT_HELD: the hold had already ended';
  if (Date.now() - action.createdAtMs > FORWARDS_HOLD_STALE_MS) return 'STALE: the backup that asked for this hold has given up';
  const holdMs = Math.min(Math.max(action.payload.holdMs ?? 0, 1), FORWARDS_HOLD_MS_MAX);
  return (await pool.holdForwards(action.target, holdMs)) ? 'ok' : 'TIMEOUT: cross-shard steps did not settle in time';
}

/**
 * Applies operator decisions the CLI queued in control.db (resolving an order held for manual
 * fulfilment, a backup's hold on cross-shard steps), in order; the result is written back.
 */
function applyOperatorActions(control: ControlStore, pool: ShardPool, log: Log, replica: { settled(): Promise<void> } | null): () => void {
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    void (async () => {
      for (const action of control.pendingActions()) {
        if (replica !== null) {
          // A cluster owner: an action queued on this node's file is replicated before it is applied.
          control.report('operator_actions', action.id);
          await replica.settled();
        }
        if (action.kind !== 'order.resolve' && action.kind !== 'reconcile.resolve') {
          control.completeAction(action.id, await forwardsAction(pool, action), Date.now());
          continue;
        }
        const partition = partitionOfId(action.target);
        const outcome = action.payload.outcome;
        const command = commandOfAction(action, partition);
        if (typeof command === 'string') {
          control.completeAction(action.id, command, Date.now());
          continue;
        }
        const reply = await pool.send(command);
        const result = reply.error === undefined ? 'ok' : `${reply.error.code}: ${reply.error.message}`;
        control.completeAction(action.id, result, Date.now());
        log(`operator action ${action.id} (${action.kind} ${action.target} ${outcome ?? ''}): ${result}`);
      }
    })().finally(() => {
      busy = false;
    });
  }, 250);
  timer.unref();
  return () => clearInterval(timer);
}

/** The shard command an operator's decision becomes, or why it cannot (the action's result). */
function commandOfAction(action: OperatorAction, partition: number): Command | string {
  const outcome = action.payload.outcome;
  if (partition < 0 || partition >= PARTITIONS) return `NOT_FOUND: not ${action.kind === 'order.resolve' ? 'an order' : 'a transaction'} id`;
  const base = { owner: 'system:operator', nowMs: Date.now(), partition };
  if (action.kind === 'order.resolve') {
    if (outcome !== 'delivered' && outcome !== 'failed') return 'VALIDATION: no outcome';
    return { ...base, k: 'order.resolve', id: action.target, outcome };
  }
  if (outcome !== 'recorded' && outcome !== 'reported') return 'VALIDATION: no outcome';
  return { ...base, k: 'txn.reconcile', id: action.target, outcome, note: action.payload.note ?? null };
}

/**
 * Fails fast when the port is taken, before recovery (which can take seconds on a large data dir) and
 * before a data dir is created. The exclusive bind after recovery is still what guarantees it.
 */
async function assertPortFree(host: string, port: number): Promise<void> {
  if (port === 0) return;
  const probe = net.createServer();
  const free = await new Promise<boolean>((resolve) => {
    probe.once('error', () => resolve(false));
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve(true)));
  });
  if (!free) throw new Error(`cannot listen on ${host}:${port}: the port is in use (or the address is not this machine's); set PORT or HOST`);
}

/** The address the console reaches this server's API at: loopback when listening on every address. */
function loopbackOf(host: string): string {
  if (host === '0.0.0.0' || host === '') return '127.0.0.1';
  if (host === '::' || host === '::1') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}

/** KOBO_SHARDS when given; else the count an existing data dir was created with; else the default. */
export function shardsFor(config: Readonly<Config>): number {
  if (config.shardsGiven || !fs.existsSync(path.join(config.dataDir, 'layout.json'))) return config.shards;
  return readLayout(config.dataDir).shards;
}

export async function startApp(config_: Readonly<Config>, log: Log, logging?: Logging): Promise<RunningApp> {
  await assertPortFree(config_.host, config_.port);
  const config: Readonly<Config> = { ...config_, shards: shardsFor(config_) };
  const debug: Log = logging?.debug ?? (() => {});
  restrictDataDir(config.dataDir);
  const unlock = lockDataDir(config.dataDir);
  try {
    ensureLayout(config.dataDir, config.shards);
  } catch (error) {
    unlock();
    throw error;
  }
  const control = new ControlStore(config.dataDir);
  const webhookStore = new WebhookStore(config.dataDir);
  const frontIdempotency = new FrontIdempotencyStore(webhookStore.db, config.idempotencyRetentionHours * 3_600_000);
  const fatal = (message: string): never => {
    // Memory or a reply can no longer be trusted: stop now; a restart (or the next owner) recovers.
    (logging?.fatal ?? log)(`fatal: ${message}`);
    logging?.flush(); // the JSON log is written asynchronously: keep the reason
    process.exit(70);
  };
  const owned = ownerCluster().cluster;
  // A cluster owner replicates the rows of control.db and webhooks.db before it answers for them.
  const controlLog = owned === undefined ? null : await replicateControlRows(owned, { control, webhooks: webhookStore, front: frontIdempotency }, { idempotencyRetentionMs: config.idempotencyRetentionHours * 3_600_000, onFatal: fatal });
  const createdKey = bootstrapKeys(control, config.apiKeys, Date.now());
  const clocks = new SandboxClocks(control);
  const nowMsOf = (owner: string): number => Date.now() + clocks.offsetOf(owner);
  const idempotency = new IdempotencyIndex();
  // Bound late: the dispatcher acknowledges through the pool, and the pool hands it the outbox.
  let dispatcher: Dispatcher | undefined;
  let pool: ShardPool | undefined;
  /** `kobo listen`'s WebSocket: it hears each event the outbox hands over, after the dispatcher stored it. */
  let eventStream: EventStream | undefined;
  const metrics = new Metrics(() => pool?.queueDepths() ?? []);
  // One CPU for the process (its affinity: taskset, a cpuset): a worker thread would only add hops.
  const shardsInline = config.shardMode === 'inline' || (config.shardMode === 'auto' && os.availableParallelism() === 1);
  const walletViews = new WalletViews(WALLET_VIEWS_MAX);
  metrics.walletViews(walletViews);
  metrics.buildInfo(BUILD_INFO);
  metrics.webhookBacklog(() => webhookStore.backlog(nowMsOf));
  pool = new ShardPool({
    shards: config.shards,
    inline: shardsInline,
    dataDir: config.dataDir,
    railLatencyMs: config.railLatencyMs,
    batchCommandsMax: config.batchCommandsMax,
    shardQueueMax: config.shardQueueMax,
    snapshotIntervalMs: config.snapshotIntervalMs,
    idempotencyRetentionMs: config.idempotencyRetentionHours * 3_600_000,
    idempotencySweepMs: config.idempotencySweepMs,
    onIdempotencyExpired: (pairs) => idempotency.forget(pairs),
    snapshotEveryRecords: config.snapshotEveryRecords,
    walRetainRecords: config.walRetainRecords,
    walSegmentRecords: config.walSegmentRecords,
    quoteSweepMs: config.quoteSweepMs,
    collectionSweepMs: config.collectionSweepMs,
    clockOffsets: clocks.entries(),
    connectors: config.connectors,
    requeryAfterMs: config.requeryAfterMs,
    crashAt: config.testCrashAt,
    ...(owned === undefined ? {} : { cluster: owned }),
    ...(owned?.remote === undefined ? {} : { remote: { routeOf: (shard: number) => owned.remote?.routes[shard] ?? null, secret: owned.remote.secret, epoch: owned.epoch, onIndex: (report: IndexMessage) => restoreIndex(report) } }),
    onOutbox: (events) => {
      dispatcher?.ingest(events);
      eventStream?.publish(events);
    },
    onWallets: (updates) => walletViews.update(updates),
    onMetrics: (message) => {
      metrics.shard(message);
      for (const notice of message.reconciliations) logReconciliation(logging?.warn ?? log, notice);
      if (message.batchSizes.length > 0 || message.queued > 0) {
        debug(`shard ${message.shard}: ${message.batchSizes.length} group commit(s), ${message.walRecords} WAL record(s), ${message.queued} queued`);
      }
    },
    log,
    // A shard's memory can no longer be trusted: a restart replays the WAL.
    onFatal: fatal,
  });
  dispatcher = new Dispatcher({
    store: webhookStore,
    nowMsOf,
    ack: (partition, ids) => pool.send({ k: 'outbox.ack', ids, owner: 'system:webhooks', nowMs: Date.now(), partition }),
    timeoutMs: config.webhookTimeoutMs,
    perEndpointMax: config.webhookPerEndpointMax,
    disableAfter: config.webhookDisableAfter,
    tickMs: config.webhookTickMs,
    urlPolicy: { livePorts: config.webhookLivePorts },
    log,
    warn: logging?.warn ?? log,
    onAttempt: (outcome) => {
      metrics.webhook(outcome);
      debug(`webhook attempt: ${outcome}`);
    },
  });
  const started = Date.now();
  const customers = new CustomerIndex();
  /** A shard's customers and stored idempotency keys, into the front's indexes (again after a shard moved: they only add). */
  const restoreIndex = (report: IndexMessage): void => {
    for (const [owner, email, phone, id] of report.customers) customers.restore(owner, email, phone, id);
    const pairs = report.idempotencyScopes;
    for (let i = 0; i + 1 < pairs.length; i += 2) idempotency.restore(pairs[i]!, pairs[i + 1]!);
  };
  const reports = await pool.start();
  dispatcher.start();
  let replayed = 0;
  for (const report of reports) {
    restoreIndex(report);
    replayed += report.recovered.replayed;
    debug(`shard ${report.shard} recovered`, { replayed: report.recovered.replayed, cut: report.recovered.cut, last_lsn: report.recovered.lastLsn });
    if (report.recovered.cut > 0) log(`shard ${report.shard}: cut ${report.recovered.cut} torn WAL record(s) at the tail`);
  }
  log(`recovered ${config.shards} shard(s) in ${Date.now() - started} ms (${replayed} WAL records replayed)`);

  setConnectors(config.connectors.map(coverageOf));
  // Lookups that move no money (account names, recipients, FX rates) are asked from the main thread.
  let publicUrl = config.publicUrl;
  setLiveRails(config.connectors.map((c) => connectorRail(c, () => publicUrl, (sample) => metrics.connectorCall(sample))));
  const warn: Log = logging?.warn ?? log;
  const fx: FxTrust = {
    bandBps: config.fxBandBps,
    pairBandsBps: config.fxPairBandsBps,
    refused: (r) => {
      metrics.fxRateRefused(r.connector, r.pair, r.reason);
      const why = r.reason === 'outside_band' ? `${r.deviationBps ?? '?'} bps from the reference rate, outside the ±${r.bandBps} bps band` : 'not a plain positive decimal';
      warn(`FX rate refused: connector ${r.connector} answered ${r.pair} ${r.rate}, ${why}`, { connector: r.connector, pair: r.pair, reason: r.reason, rate: r.rate, deviation_bps: r.deviationBps ?? null, band_bps: r.bandBps });
    },
  };
  const deps: ApiDeps = { pool, idempotency, customers, control, clocks, walletViews, fx, pinPolicy: { attemptsMax: config.pinAttemptsMax, lockMs: config.pinLockMinutes * 60_000 } };
  const router = new Router();
  router.add([
    ...countryRoutes(),
    ...customerRoutes(deps),
    ...transactionRoutes(deps),
    ...listRoutes(deps),
    ...paymentRoutes(deps),
    ...exchangeRoutes(deps),
    ...transferRoutes(deps),
    ...checkoutRoutes(deps),
    ...serviceOrderRoutes(deps),
    ...serviceCatalogueRoutes(deps),
    ...webhookRoutes({ store: webhookStore, dispatcher, clocks, subscriptionsMax: config.webhookSubscriptionsMax, urlPolicy: { livePorts: config.webhookLivePorts } }),
    ...testHelperRoutes(deps),
    ...keyRoutes(deps),
    ...connectorRoutes(deps, config.connectors, (connector, result) => metrics.connectorCallback(connector, result)),
  ]);
  let openApiJson = '';
  router.add([openApiRoute(() => openApiJson)]);
  const openApi = buildOpenApi(router.all(), '0.1.0');
  openApiJson = JSON.stringify(openApi);
  // Operator endpoints are added after the document: they are part of running kobo, not of the API.
  let accepting = true;
  const docsHtml = renderDocsPage(openApi);
  // The console is a client of the API above, over HTTP on this host (src/console/): not part of the document.
  let apiBaseUrl = '';
  router.add(consoleRoutes({
    apiBaseUrl: () => apiBaseUrl,
    publicUrl: () => config.publicUrl,
    limits: { idleMsMax: config.consoleIdleSecondsMax * 1000, ageMsMax: config.consoleSessionSecondsMax * 1000, sessionsMax: config.consoleSessionsMax },
  }));
  router.add(opsRoutes({ accepting: () => accepting, ping: (ms) => pool.ping(ms), metrics, metricsToken: config.metricsToken, docsHtml: () => docsHtml }));

  const server = new HttpServer({
    router,
    auth: new Authenticator(control),
    rateLimiter: new RateLimiter({ readPerMin: config.rateLimitReadPerMin, writePerMin: config.rateLimitWritePerMin }),
    // Connector callbacks (writes, one window per connector) and the metrics token (reads, a key's read
    // budget): senders that proved who they are, never sharing an IP's window.
    verifiedRateLimiter: new RateLimiter({ readPerMin: config.rateLimitReadPerMin, writePerMin: config.rateLimitCallbacksPerMin }),
    bodyBytesMax: config.bodyBytesMax,
    frontIdempotency,
    ...(controlLog === null ? {} : { replica: controlLog }),
    jsonPolicy: { depthMax: config.jsonDepthMax, membersMax: config.jsonMembersMax },
    responseBufferedBytesMax: config.responseBufferedBytesMax,
    clockOf: (owner) => clocks.offsetOf(owner),
    // Without a structured logger (benches, embedding) the stack is kept in the line itself.
    log: (message, fields) => (logging === undefined ? log(`${message}\n${(fields?.err as Error | undefined)?.stack ?? ''}`) : logging.error(message, fields?.err, fields)),
    wantsIp: () => logging?.logger.isLevelEnabled('info') === true,
    trustProxy: TrustProxy.of(config.trustProxy),
    onResponse: (done) => {
      metrics.request(done.method, done.route, done.status, done.durationMs / 1000);
      logging?.request({ reqId: done.requestId, method: done.method, route: done.route, path: done.path, status: done.status, ms: Math.round(done.durationMs * 100) / 100, ip: done.ip, keyId: done.keyId, account: done.account });
    },
  });
  eventStream = new EventStream(pool);
  eventStream.attach(server);
  const stopActions = applyOperatorActions(control, pool, log, controlLog);
  await controlLog?.settled();
  const port = await server.listen(config.host, config.port);
  publicUrl = config.publicUrl !== '' ? config.publicUrl : `http://${config.host}:${port}`;
  apiBaseUrl = `http://${loopbackOf(config.host)}:${port}`;
  pool.setPublicUrl(publicUrl);
  return {
    port,
    createdKey,
    shards: config.shards,
    shardMode: shardsInline ? 'inline' : 'threads',
    stop: async (drainMs = config.drainMs) => {
      accepting = false;
      eventStream?.closeAll();
      const cut = await server.drain(drainMs);
      stopActions();
      // Attempts still in flight are retried after a restart (at least once): do not wait them out.
      await Promise.race([dispatcher?.stop(), new Promise((resolve) => setTimeout(resolve, DISPATCHER_STOP_MS).unref())]);
      await pool.stop();
      await controlLog?.settled();
      await controlLog?.close();
      webhookStore.close();
      control.close();
      unlock();
      return cut;
    },
  };
}

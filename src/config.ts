// The one reader of process.env: a frozen, TypeBox-checked config object.
// Runs on the main thread; shards receive the parts they need as worker data.
// Invariant: every number names its unit, and an invalid setting stops start-up with one line naming
// the variable and its allowed values (ConfigError: no stack trace is printed for it).
import os from 'node:os';
import path from 'node:path';
import Type, { type Static } from 'typebox';
import { Compile } from 'typebox/compile';
import { ConnectorSchema, loadConnectorsFile, type ConnectorConfig } from './connectors/connector-config.ts';
import { WAL_SEGMENT_RECORDS } from './journal/log-segments.ts';
import { fxCurrencies, supportsPair } from './catalogue/fx.ts';
import { nearestName } from './ops/nearest-name.ts';
import { FORWARDED_HOPS_MAX, trustEntryProblem, type TrustProxyConfig } from './http/trust-proxy.ts';
import { parseCrashAt } from './shard/crash-points.ts';

export const PARTITIONS = 64;

const ConfigSchema = Type.Object({
  port: Type.Integer({ minimum: 0, maximum: 65535 }),
  host: Type.String({ minLength: 1 }),
  /** Where clients reach this server, for links it hands out (hosted checkout); '' = http://HOST:PORT. */
  publicUrl: Type.String({ pattern: '^(https?://[^\\s/?#]+(/[^\\s?#]*)?)?$', description: 'an http:// or https:// base URL without query or fragment' }),
  dataDir: Type.String({ minLength: 1 }),
  shards: Type.Integer({ minimum: 1, maximum: PARTITIONS }),
  /** False when KOBO_SHARDS was not set: an existing data dir then keeps the count it was created with. */
  shardsGiven: Type.Boolean(),
  /**
   * Where shards run: `threads` (a worker thread each), `inline` (on the main thread's event loop),
   * `auto` (inline when the process may use one CPU only, where a thread adds hops and no parallelism).
   */
  shardMode: Type.Union([Type.Literal('auto'), Type.Literal('threads'), Type.Literal('inline')]),
  apiKeys: Type.Array(Type.String()),
  rateLimitReadPerMin: Type.Integer({ minimum: 1 }),
  rateLimitWritePerMin: Type.Integer({ minimum: 1 }),
  /** Signed callbacks a minute per connector: a budget of their own, apart from keys and source IPs. */
  rateLimitCallbacksPerMin: Type.Integer({ minimum: 1 }),
  bodyBytesMax: Type.Integer({ minimum: 256, maximum: 16 * 1024 * 1024 }),
  /** 0: no periodic snapshots; else at least 100 ms apart (a snapshot every few ms would leave the shard no time for requests). */
  snapshotIntervalMs: Type.Union([Type.Literal(0), Type.Integer({ minimum: 100, maximum: 86_400_000 })]),
  /** Idempotency records are kept at least this long (PRODUCT.md promises 24 h). */
  idempotencyRetentionHours: Type.Integer({ minimum: 24, maximum: 24 * 365 }),
  idempotencySweepMs: Type.Integer({ minimum: 10, maximum: 86_400_000 }),
  snapshotEveryRecords: Type.Integer({ minimum: 0 }),
  /** WAL records kept after the snapshots that cover them, for audit and verify. */
  walRetainRecords: Type.Integer({ minimum: 0 }),
  /** Records per WAL segment table (truncation drops whole segments). */
  walSegmentRecords: Type.Integer({ minimum: 1, maximum: 10_000_000 }),
  quoteSweepMs: Type.Integer({ minimum: 10, maximum: 86_400_000 }),
  collectionSweepMs: Type.Integer({ minimum: 10, maximum: 86_400_000 }),
  shardQueueMax: Type.Integer({ minimum: 1 }),
  batchCommandsMax: Type.Integer({ minimum: 1 }),
  railLatencyMs: Type.Integer({ minimum: 0, maximum: 60_000 }),
  /** A rail that timed out is asked again this long after, on the owner's (sandbox) clock. */
  requeryAfterMs: Type.Integer({ minimum: 100, maximum: 86_400_000 }),
  /** Test-only: kill the process at a step of a batch (`<point>:<n>`, see shard/crash-points.ts); '' = never. */
  testCrashAt: Type.String(),
  webhookTimeoutMs: Type.Integer({ minimum: 100, maximum: 60_000 }),
  webhookPerEndpointMax: Type.Integer({ minimum: 1, maximum: 64 }),
  webhookDisableAfter: Type.Integer({ minimum: 1, maximum: 10_000 }),
  webhookTickMs: Type.Integer({ minimum: 10, maximum: 60_000 }),
  jsonDepthMax: Type.Integer({ minimum: 2, maximum: 256 }),
  jsonMembersMax: Type.Integer({ minimum: 16, maximum: 1_000_000 }),
  webhookSubscriptionsMax: Type.Integer({ minimum: 1, maximum: 10_000 }),
  /** Ports a live webhook URL may name besides 443. */
  webhookLivePorts: Type.Array(Type.Integer({ minimum: 1, maximum: 65535 })),
  responseBufferedBytesMax: Type.Integer({ minimum: 64 * 1024, maximum: 1024 * 1024 * 1024 }),
  /** Console sessions: signed out after this long without a request, and this long after sign-in whatever happens. */
  consoleIdleSecondsMax: Type.Integer({ minimum: 1, maximum: 86_400 }),
  consoleSessionSecondsMax: Type.Integer({ minimum: 1, maximum: 7 * 86_400 }),
  /** Console sessions kept at once; beyond, the one seen longest ago is signed out. */
  consoleSessionsMax: Type.Integer({ minimum: 1, maximum: 100_000 }),
  pinAttemptsMax: Type.Integer({ minimum: 1, maximum: 100 }),
  pinLockMinutes: Type.Integer({ minimum: 1, maximum: 24 * 60 }),
  /** A live FX mid rate further than this from kobo's reference rate is refused (basis points, both ways). */
  fxBandBps: Type.Integer({ minimum: 1, maximum: 10_000 }),
  /** Pairs with a band of their own (`GBP/NGN` also covers NGN/GBP); the others have fxBandBps. */
  fxPairBandsBps: Type.Array(Type.Object({ pair: Type.String({ pattern: '^[A-Z]{3}/[A-Z]{3}$' }), bps: Type.Integer({ minimum: 1, maximum: 10_000 }) })),
  /** Operator connectors serving live rails (KOBO_CONNECTORS_FILE); none: live offers no external rail. */
  connectors: Type.Array(ConnectorSchema),
  logLevel: Type.Union([Type.Literal('silent'), Type.Literal('error'), Type.Literal('warn'), Type.Literal('info'), Type.Literal('debug')]),
  /** SIGTERM/SIGINT: how long in-flight requests may take to finish before the snapshot and exit. */
  drainMs: Type.Integer({ minimum: 0, maximum: 600_000 }),
  /** When set, GET /metrics needs `Authorization: Bearer <token>`; '' = open on the listen address. */
  metricsToken: Type.String({ pattern: '^(|\\S(.*\\S)?)$', description: 'a token without leading or trailing whitespace (empty: none)' }),
  /**
   * Reverse proxies whose forwarding header is believed (KOBO_TRUST_PROXY: a hop count, or their
   * addresses and CIDR blocks) and which header they write (KOBO_TRUST_PROXY_HEADER); 0 and none: off.
   */
  trustProxy: Type.Object({
    hops: Type.Integer({ minimum: 0, maximum: FORWARDED_HOPS_MAX }),
    cidrs: Type.Array(Type.String()),
    header: Type.Union([Type.Literal('x-forwarded-for'), Type.Literal('forwarded')]),
  }),
});
export type Config = Static<typeof ConfigSchema>;
const checkConfig = Compile(ConfigSchema);

/** A configuration mistake: main and the CLI print its message alone (no stack), then exit non-zero. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** The connectors file, its problems reported as the operator mistake they are (one line, exit 78). */
function connectorsOf(file: string): ConnectorConfig[] {
  try {
    return loadConnectorsFile(file);
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
}

/** KOBO_TEST_CRASH_AT: for the crash tests only; a malformed value stops start-up like any other. */
function crashAtFrom(env: NodeJS.ProcessEnv): string {
  const raw = env.KOBO_TEST_CRASH_AT;
  if (raw === undefined) return '';
  const parsed = parseCrashAt(raw);
  if (typeof parsed === 'string') throw new ConfigError(`config: ${parsed}, got "${raw}"`);
  return raw;
}

/** Unset means the default; set-but-empty is refused (an empty PORT must not quietly become 8080). */
function intFrom(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined) return fallback;
  if (raw.trim() === '') throw new ConfigError(`config: ${name} is set but empty; unset it to use the default (${fallback}) or give an integer`);
  const value = Number(raw);
  if (!Number.isInteger(value)) throw new ConfigError(`config: ${name} must be an integer, got "${raw}"`);
  return value;
}

/** A path or name that must not be empty when set ('' would resolve to the working directory). */
function nonEmpty(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const raw = env[name];
  if (raw !== undefined && raw.trim() === '') throw new ConfigError(`config: ${name} is set but empty; unset it to use the default or give a value`);
  return raw;
}

/** The environment variable behind a config field: PORT, HOST, else KOBO_ + UPPER_SNAKE of the field. */
function envNameOf(field: string): string {
  if (field === 'port' || field === 'host') return field.toUpperCase();
  return `KOBO_${field.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}`;
}

/** "an integer from 1 to 64", "one of silent, info, debug": what the schema allows, in words. */
function allowedOf(schema: unknown): string {
  const s = schema as { type?: string; minimum?: number; maximum?: number; minLength?: number; description?: string; anyOf?: Array<{ const?: unknown }> };
  if (s.type === 'string' && s.description !== undefined) return s.description;
  if (Array.isArray(s.anyOf)) return `one of ${s.anyOf.map((o) => (o.const === undefined ? allowedOf(o) : String(o.const))).join(', ')}`;
  if (s.type === 'integer') {
    if (s.minimum !== undefined && s.maximum !== undefined) return `an integer from ${s.minimum} to ${s.maximum}`;
    if (s.minimum !== undefined) return `an integer of at least ${s.minimum}`;
    return 'an integer';
  }
  if (s.type === 'string' && (s.minLength ?? 0) > 0) return 'a non-empty string';
  return `a ${s.type ?? 'value'}`;
}

function portsFrom(env: NodeJS.ProcessEnv, name: string): number[] {
  const raw = env[name] ?? '';
  return raw.split(',').map((s) => s.trim()).filter((s) => s.length > 0).map((s) => {
    const port = Number(s);
    if (!Number.isInteger(port)) throw new ConfigError(`config: ${name} must be a comma-separated list of ports, got "${raw}"`);
    return port;
  });
}

/**
 * `GBP/NGN:1500,NGN/USD:500`: FX pairs with a band of their own, in basis points (1 to 10000). Each
 * pair must be one kobo has reference rates for (a band needs a reference) and appear once, in either
 * direction (a band is the same both ways).
 */
function pairBandsFrom(env: NodeJS.ProcessEnv, name: string): Array<{ pair: string; bps: number }> {
  const raw = env[name] ?? '';
  const seen = new Set<string>();
  return raw.split(',').map((s) => s.trim()).filter((s) => s.length > 0).map((entry) => {
    const match = /^([A-Z]{3})\/([A-Z]{3}):(\d{1,5})$/.exec(entry);
    const bps = Number(match?.[3]);
    if (match === null || bps < 1 || bps > 10_000) {
      throw new ConfigError(`config: ${name} must be a comma-separated list of FROM/TO:BPS (e.g. GBP/NGN:1500, BPS from 1 to 10000), got "${raw}"`);
    }
    const [from, to] = [match[1]!, match[2]!];
    if (!supportsPair(from, to)) throw new ConfigError(`config: ${name}: ${from}/${to} is not a pair kobo has reference rates for (${fxCurrencies().join(', ')})`);
    const key = [from, to].sort().join('/');
    if (seen.has(key)) throw new ConfigError(`config: ${name}: ${from}/${to} appears twice (a band covers both directions)`);
    seen.add(key);
    return { pair: `${from}/${to}`, bps };
  });
}

/**
 * KOBO_TRUST_PROXY: unset, empty or 0 trusts no proxy; an integer from 1 to FORWARDED_HOPS_MAX trusts
 * that many proxies in front of kobo (the peer and the hops after it); otherwise a comma-separated list
 * of proxy addresses and CIDR blocks. KOBO_TRUST_PROXY_HEADER names the one header they write.
 */
function trustProxyFrom(env: NodeJS.ProcessEnv): TrustProxyConfig {
  const raw = (env.KOBO_TRUST_PROXY ?? '').trim();
  const headerRaw = (env.KOBO_TRUST_PROXY_HEADER ?? 'x-forwarded-for').trim().toLowerCase();
  if (headerRaw !== 'x-forwarded-for' && headerRaw !== 'forwarded') {
    throw new ConfigError(`config: KOBO_TRUST_PROXY_HEADER must be one of x-forwarded-for, forwarded, got "${env.KOBO_TRUST_PROXY_HEADER ?? ''}"`);
  }
  const header: TrustProxyConfig['header'] = headerRaw;
  if (raw === '') return { hops: 0, cidrs: [], header };
  if (/^\d+$/.test(raw)) {
    const hops = Number(raw);
    if (hops > FORWARDED_HOPS_MAX) throw new ConfigError(`config: KOBO_TRUST_PROXY must be a hop count from 0 to ${FORWARDED_HOPS_MAX} or a comma-separated list of proxy addresses and CIDR blocks, got "${raw}"`);
    return { hops, cidrs: [], header };
  }
  const cidrs = raw.split(',').map((s) => s.trim()).filter((s) => s.length > 0);
  for (const entry of cidrs) {
    const problem = trustEntryProblem(entry);
    if (problem !== null) throw new ConfigError(`config: KOBO_TRUST_PROXY: ${problem}; give a hop count or proxy addresses and CIDR blocks`);
  }
  return { hops: 0, cidrs, header };
}

/** Variables whose values are never printed in a config error. */
const SECRET_VARIABLES: ReadonlySet<string> = new Set(['KOBO_METRICS_TOKEN', 'KOBO_API_KEYS']);

/** A secret key: its environment's prefix, then 8–128 characters of A–Z a–z 0–9 _ -. */
export const SECRET_KEY_PATTERN = /^sk_(test|live)_[A-Za-z0-9_-]{8,128}$/;

/**
 * KOBO_API_KEYS entries (`key` or `key@account`), checked here with the rest of the config, before
 * anything touches the data dir. A bad entry is named by its first characters only: never print a secret.
 */
function keysFrom(env: NodeJS.ProcessEnv): string[] {
  const entries = (env.KOBO_API_KEYS ?? '').split(',').map((s) => s.trim()).filter((s) => s.length > 0);
  for (const entry of entries) {
    const { secret, account } = keyEntry(entry);
    if (!SECRET_KEY_PATTERN.test(secret)) {
      throw new ConfigError(`config: KOBO_API_KEYS entry ${secret.slice(0, 12)}… is not a secret key (sk_test_ or sk_live_, then 8–128 of A–Z a–z 0–9 _ -)`);
    }
    if (account !== null && account.trim() === '') throw new ConfigError(`config: KOBO_API_KEYS entry ${secret.slice(0, 12)}… has an empty account name after @`);
  }
  return entries;
}

/** A KOBO_API_KEYS entry, `key` or `key@account` (account null: the key's own account). */
export function keyEntry(entry: string): { secret: string; account: string | null } {
  const at = entry.indexOf('@');
  return at < 0 ? { secret: entry, account: null } : { secret: entry.slice(0, at), account: entry.slice(at + 1) };
}

/**
 * Every KOBO_* variable kobo reads, for the start-up warning about the others (a misspelt setting
 * would otherwise be ignored without a word). KOBO_TEST_FROM_SOURCE and KOBO_CHROMIUM (the /docs browser
 * test's Chromium) are read by the tests.
 */
export const KNOWN_VARIABLES: readonly string[] = [
  'KOBO_API_KEYS', 'KOBO_BATCH_COMMANDS_MAX', 'KOBO_BODY_BYTES_MAX', 'KOBO_CHROMIUM', 'KOBO_COLLECTION_SWEEP_MS', 'KOBO_CONNECTORS_FILE',
  'KOBO_CONSOLE_IDLE_SECONDS_MAX', 'KOBO_CONSOLE_SESSION_SECONDS_MAX', 'KOBO_CONSOLE_SESSIONS_MAX',
  'KOBO_DATA_DIR', 'KOBO_DRAIN_MS', 'KOBO_FX_BAND_BPS', 'KOBO_FX_PAIR_BANDS_BPS', 'KOBO_IDEMPOTENCY_RETENTION_HOURS',
  'KOBO_IDEMPOTENCY_SWEEP_MS', 'KOBO_JSON_DEPTH_MAX', 'KOBO_JSON_MEMBERS_MAX', 'KOBO_LOG_LEVEL', 'KOBO_METRICS_TOKEN',
  'KOBO_PIN_ATTEMPTS_MAX', 'KOBO_PIN_LOCK_MINUTES', 'KOBO_PUBLIC_URL', 'KOBO_QUOTE_SWEEP_MS', 'KOBO_RAIL_LATENCY_MS',
  'KOBO_RATE_LIMIT_CALLBACKS_PER_MIN', 'KOBO_RATE_LIMIT_READ_PER_MIN', 'KOBO_RATE_LIMIT_WRITE_PER_MIN', 'KOBO_REQUERY_AFTER_MS',
  'KOBO_RESPONSE_BUFFERED_BYTES_MAX', 'KOBO_SHARDS', 'KOBO_SHARD_MODE', 'KOBO_SHARD_QUEUE_MAX', 'KOBO_SNAPSHOT_EVERY_RECORDS',
  'KOBO_SNAPSHOT_INTERVAL_MS', 'KOBO_TEST_CRASH_AT', 'KOBO_TEST_FROM_SOURCE', 'KOBO_TRUST_PROXY', 'KOBO_TRUST_PROXY_HEADER', 'KOBO_WAL_RETAIN_RECORDS',
  'KOBO_WAL_SEGMENT_RECORDS', 'KOBO_WEBHOOK_DISABLE_AFTER', 'KOBO_WEBHOOK_LIVE_PORTS', 'KOBO_WEBHOOK_PER_ENDPOINT_MAX',
  'KOBO_WEBHOOK_SUBSCRIPTIONS_MAX', 'KOBO_WEBHOOK_TICK_MS', 'KOBO_WEBHOOK_TIMEOUT_MS',
  // Cluster mode (src/cluster/cluster-config.ts; the ROLE, EPOCH, FENCES, CONTROL_FENCE, LEASE_UNTIL_MS,
  // HOLD_MS, SHARD and FRONT_ONLY ones are set by a node for the server or shard host it starts) and the integrator commands (kobo listen, kobo trigger).
  'KOBO_CLUSTER_ADVERTISE_URL', 'KOBO_CLUSTER_CONTROL_FENCE', 'KOBO_CLUSTER_COPY_IMAGE_SECONDS', 'KOBO_CLUSTER_EPOCH', 'KOBO_CLUSTER_FENCES', 'KOBO_CLUSTER_HOLD_MS', 'KOBO_CLUSTER_IMAGE_INTERVAL_SECONDS',
  'KOBO_CLUSTER_INTERNAL_HOST', 'KOBO_CLUSTER_INTERNAL_PORT', 'KOBO_CLUSTER_LEASE_SECONDS', 'KOBO_CLUSTER_LEASE_UNTIL_MS',
  'KOBO_CLUSTER_NATS', 'KOBO_CLUSTER_NODE', 'KOBO_CLUSTER_REPLICAS', 'KOBO_CLUSTER_ROLE', 'KOBO_CLUSTER_SECRET',
  'KOBO_CLUSTER_OWNERSHIP', 'KOBO_CLUSTER_SHARD', 'KOBO_CLUSTER_FRONT_ONLY',
  'KOBO_KEY', 'KOBO_URL',
];

/** KOBO_* variables set in `env` that kobo does not read, each with the known one nearest to it (or null). */
export function unknownSettings(env: NodeJS.ProcessEnv = process.env): Array<{ name: string; nearest: string | null }> {
  return Object.keys(env)
    .filter((name) => name.startsWith('KOBO_') && !KNOWN_VARIABLES.includes(name))
    .sort()
    .map((name) => ({ name, nearest: nearestName(name, KNOWN_VARIABLES) }));
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Readonly<Config> {
  const config: Config = {
    port: intFrom(env, 'PORT', 8080),
    host: env.HOST ?? '127.0.0.1',
    publicUrl: env.KOBO_PUBLIC_URL ?? '',
    dataDir: path.resolve(nonEmpty(env, 'KOBO_DATA_DIR') ?? './data/state'),
    shards: intFrom(env, 'KOBO_SHARDS', Math.max(1, Math.min(os.availableParallelism(), PARTITIONS))),
    shardsGiven: env.KOBO_SHARDS !== undefined,
    shardMode: (env.KOBO_SHARD_MODE ?? 'auto') as Config['shardMode'],
    apiKeys: keysFrom(env),
    rateLimitReadPerMin: intFrom(env, 'KOBO_RATE_LIMIT_READ_PER_MIN', 300),
    rateLimitWritePerMin: intFrom(env, 'KOBO_RATE_LIMIT_WRITE_PER_MIN', 60),
    rateLimitCallbacksPerMin: intFrom(env, 'KOBO_RATE_LIMIT_CALLBACKS_PER_MIN', 6_000),
    bodyBytesMax: intFrom(env, 'KOBO_BODY_BYTES_MAX', 64 * 1024),
    snapshotIntervalMs: intFrom(env, 'KOBO_SNAPSHOT_INTERVAL_MS', 60_000),
    idempotencyRetentionHours: intFrom(env, 'KOBO_IDEMPOTENCY_RETENTION_HOURS', 48),
    idempotencySweepMs: intFrom(env, 'KOBO_IDEMPOTENCY_SWEEP_MS', 3_600_000),
    snapshotEveryRecords: intFrom(env, 'KOBO_SNAPSHOT_EVERY_RECORDS', 50_000),
    walRetainRecords: intFrom(env, 'KOBO_WAL_RETAIN_RECORDS', 100_000),
    walSegmentRecords: intFrom(env, 'KOBO_WAL_SEGMENT_RECORDS', WAL_SEGMENT_RECORDS),
    quoteSweepMs: intFrom(env, 'KOBO_QUOTE_SWEEP_MS', 60_000),
    collectionSweepMs: intFrom(env, 'KOBO_COLLECTION_SWEEP_MS', 60_000),
    shardQueueMax: intFrom(env, 'KOBO_SHARD_QUEUE_MAX', 10_000),
    batchCommandsMax: intFrom(env, 'KOBO_BATCH_COMMANDS_MAX', 1_000),
    railLatencyMs: intFrom(env, 'KOBO_RAIL_LATENCY_MS', 20),
    requeryAfterMs: intFrom(env, 'KOBO_REQUERY_AFTER_MS', 300_000),
    testCrashAt: crashAtFrom(env),
    webhookTimeoutMs: intFrom(env, 'KOBO_WEBHOOK_TIMEOUT_MS', 10_000),
    webhookPerEndpointMax: intFrom(env, 'KOBO_WEBHOOK_PER_ENDPOINT_MAX', 4),
    webhookDisableAfter: intFrom(env, 'KOBO_WEBHOOK_DISABLE_AFTER', 20),
    webhookTickMs: intFrom(env, 'KOBO_WEBHOOK_TICK_MS', 250),
    jsonDepthMax: intFrom(env, 'KOBO_JSON_DEPTH_MAX', 32),
    jsonMembersMax: intFrom(env, 'KOBO_JSON_MEMBERS_MAX', 4_096),
    webhookSubscriptionsMax: intFrom(env, 'KOBO_WEBHOOK_SUBSCRIPTIONS_MAX', 20),
    webhookLivePorts: portsFrom(env, 'KOBO_WEBHOOK_LIVE_PORTS'),
    responseBufferedBytesMax: intFrom(env, 'KOBO_RESPONSE_BUFFERED_BYTES_MAX', 4 * 1024 * 1024),
    consoleIdleSecondsMax: intFrom(env, 'KOBO_CONSOLE_IDLE_SECONDS_MAX', 1_800),
    consoleSessionSecondsMax: intFrom(env, 'KOBO_CONSOLE_SESSION_SECONDS_MAX', 43_200),
    consoleSessionsMax: intFrom(env, 'KOBO_CONSOLE_SESSIONS_MAX', 1_000),
    pinAttemptsMax: intFrom(env, 'KOBO_PIN_ATTEMPTS_MAX', 5),
    pinLockMinutes: intFrom(env, 'KOBO_PIN_LOCK_MINUTES', 15),
    fxBandBps: intFrom(env, 'KOBO_FX_BAND_BPS', 1_000),
    fxPairBandsBps: pairBandsFrom(env, 'KOBO_FX_PAIR_BANDS_BPS'),
    connectors: connectorsOf(env.KOBO_CONNECTORS_FILE ?? ''),
    logLevel: (env.KOBO_LOG_LEVEL ?? 'info') as Config['logLevel'],
    drainMs: intFrom(env, 'KOBO_DRAIN_MS', 10_000),
    metricsToken: env.KOBO_METRICS_TOKEN ?? '',
    trustProxy: trustProxyFrom(env),
  };
  if (!checkConfig.Check(config)) {
    const first = [...checkConfig.Errors(config)][0];
    const field = (first?.instancePath ?? '').split('/')[1] ?? '';
    const name = envNameOf(field);
    const shown = env[name] === undefined ? '(unset)' : SECRET_VARIABLES.has(name) ? '(value not shown: it is a secret)' : `"${env[name]}"`;
    throw new ConfigError(`config: ${name} must be ${allowedOf(ConfigSchema.properties[field as keyof Config])}, got ${shown}`);
  }
  return Object.freeze(config);
}

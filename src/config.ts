// The one reader of process.env: a frozen, TypeBox-checked config object.
// Runs on the main thread; shards receive the parts they need as worker data.
// Invariant: every number names its unit, and an invalid setting stops start-up with a clear message.
import os from 'node:os';
import path from 'node:path';
import Type, { type Static } from 'typebox';
import { Compile } from 'typebox/compile';

export const PARTITIONS = 64;

const ConfigSchema = Type.Object({
  port: Type.Integer({ minimum: 0, maximum: 65535 }),
  host: Type.String({ minLength: 1 }),
  /** Where clients reach this server, for links it hands out (hosted checkout); '' = http://HOST:PORT. */
  publicUrl: Type.String(),
  dataDir: Type.String({ minLength: 1 }),
  shards: Type.Integer({ minimum: 1, maximum: PARTITIONS }),
  apiKeys: Type.Array(Type.String()),
  rateLimitReadPerMin: Type.Integer({ minimum: 1 }),
  rateLimitWritePerMin: Type.Integer({ minimum: 1 }),
  bodyBytesMax: Type.Integer({ minimum: 256, maximum: 16 * 1024 * 1024 }),
  snapshotIntervalMs: Type.Integer({ minimum: 0 }),
  /** Idempotency records are kept at least this long (PRODUCT.md promises 24 h). */
  idempotencyRetentionHours: Type.Integer({ minimum: 24, maximum: 24 * 365 }),
  idempotencySweepMs: Type.Integer({ minimum: 10, maximum: 86_400_000 }),
  snapshotEveryRecords: Type.Integer({ minimum: 0 }),
  /** WAL records kept after the snapshots that cover them, for audit and verify. */
  walRetainRecords: Type.Integer({ minimum: 0 }),
  quoteSweepMs: Type.Integer({ minimum: 10, maximum: 86_400_000 }),
  shardQueueMax: Type.Integer({ minimum: 1 }),
  batchCommandsMax: Type.Integer({ minimum: 1 }),
  railLatencyMs: Type.Integer({ minimum: 0, maximum: 60_000 }),
  webhookTimeoutMs: Type.Integer({ minimum: 100, maximum: 60_000 }),
  webhookPerEndpointMax: Type.Integer({ minimum: 1, maximum: 64 }),
  webhookDisableAfter: Type.Integer({ minimum: 1, maximum: 10_000 }),
  webhookTickMs: Type.Integer({ minimum: 10, maximum: 60_000 }),
  logLevel: Type.Union([Type.Literal('silent'), Type.Literal('info'), Type.Literal('debug')]),
});
export type Config = Static<typeof ConfigSchema>;
const checkConfig = Compile(ConfigSchema);

function intFrom(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value)) throw new Error(`config: ${name} must be an integer, got "${raw}"`);
  return value;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Readonly<Config> {
  const config: Config = {
    port: intFrom(env, 'PORT', 8080),
    host: env.HOST ?? '127.0.0.1',
    publicUrl: env.KOBO_PUBLIC_URL ?? '',
    dataDir: path.resolve(env.KOBO_DATA_DIR ?? './data/state'),
    shards: intFrom(env, 'KOBO_SHARDS', Math.max(1, Math.min(os.availableParallelism(), PARTITIONS))),
    apiKeys: (env.KOBO_API_KEYS ?? '').split(',').map((s) => s.trim()).filter((s) => s.length > 0),
    rateLimitReadPerMin: intFrom(env, 'KOBO_RATE_LIMIT_READ_PER_MIN', 300),
    rateLimitWritePerMin: intFrom(env, 'KOBO_RATE_LIMIT_WRITE_PER_MIN', 60),
    bodyBytesMax: intFrom(env, 'KOBO_BODY_BYTES_MAX', 64 * 1024),
    snapshotIntervalMs: intFrom(env, 'KOBO_SNAPSHOT_INTERVAL_MS', 60_000),
    idempotencyRetentionHours: intFrom(env, 'KOBO_IDEMPOTENCY_RETENTION_HOURS', 48),
    idempotencySweepMs: intFrom(env, 'KOBO_IDEMPOTENCY_SWEEP_MS', 3_600_000),
    snapshotEveryRecords: intFrom(env, 'KOBO_SNAPSHOT_EVERY_RECORDS', 50_000),
    walRetainRecords: intFrom(env, 'KOBO_WAL_RETAIN_RECORDS', 100_000),
    quoteSweepMs: intFrom(env, 'KOBO_QUOTE_SWEEP_MS', 60_000),
    shardQueueMax: intFrom(env, 'KOBO_SHARD_QUEUE_MAX', 10_000),
    batchCommandsMax: intFrom(env, 'KOBO_BATCH_COMMANDS_MAX', 1_000),
    railLatencyMs: intFrom(env, 'KOBO_RAIL_LATENCY_MS', 20),
    webhookTimeoutMs: intFrom(env, 'KOBO_WEBHOOK_TIMEOUT_MS', 10_000),
    webhookPerEndpointMax: intFrom(env, 'KOBO_WEBHOOK_PER_ENDPOINT_MAX', 4),
    webhookDisableAfter: intFrom(env, 'KOBO_WEBHOOK_DISABLE_AFTER', 20),
    webhookTickMs: intFrom(env, 'KOBO_WEBHOOK_TICK_MS', 250),
    logLevel: (env.KOBO_LOG_LEVEL ?? 'info') as Config['logLevel'],
  };
  if (!checkConfig.Check(config)) {
    const first = [...checkConfig.Errors(config)][0];
    throw new Error(`config: ${first?.instancePath ?? ''} ${first?.message ?? 'invalid'}`);
  }
  return Object.freeze(config);
}

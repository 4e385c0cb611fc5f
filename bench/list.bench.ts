// What a list page costs as the rows grow: GET /v1/events (rows hold their payload) and
// GET /v1/transactions (each row read by id) through the real server over HTTP, at two sizes. The
// event rows are filled straight into each shard file's list index while the server is stopped (1M
// through HTTP would take too long here); the transactions are created over HTTP, and for the 1M case
// 990k older transaction rows are filled below them (a first page shows only real ones).
// Run: node --import tsx bench/list.bench.ts [--rows 10000,1000000] [--txns 10000] [--older-txns 990000] [--samples 200]
import { mintId } from '../src/ids.ts';
import { PARTITIONS } from '../src/config.ts';
import { ShardStore } from '../src/store/shard-store.ts';
import type { ListChange } from '../src/store/list-index.ts';
import { shardFile } from '../src/shard/layout.ts';
import { client, idem, secretKey, startServer, tempDataDir, uniqueEmail, uniquePhone, type TestServer } from '../test/helpers/server.ts';
import { flag, fmt, machine, table, writeResult } from './lib/report.ts';
import path from 'node:path';
import fs from 'node:fs';

const SHARDS = 2;
const OWNER_ACCOUNT = 'bench';
const FILL_BATCH_ROWS = 50_000;
/** One event in 100 is a transfer.failed: the type filter's page must still be one index range. */
const RARE_EVERY = 100;
const RARE_PARTITION = 3;

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

/** Milliseconds per request, `samples` sequential GETs (after 20 to warm up). */
async function timeGets(api: ReturnType<typeof client>, paths: () => string, samples: number): Promise<{ p50: number; p99: number; rows: number }> {
  let rows = 0;
  for (let i = 0; i < 20; i += 1) await api('GET', paths());
  const times: number[] = [];
  for (let i = 0; i < samples; i += 1) {
    const started = performance.now();
    const response = await api('GET', paths());
    times.push(performance.now() - started);
    if (response.status !== 200) throw new Error(`GET ${paths()}: ${response.status} ${JSON.stringify(response.body)}`);
    rows = (response.body as { data: unknown[] }).data.length;
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), p99: percentile(times, 99), rows };
}

/** Fills `count` event rows of the owner into the shard files (server stopped), newest at `nowMs`. */
function fillEvents(dataDir: string, owner: string, count: number, nowMs: number, customerId: string, rareCustomerId: string): string[] {
  const stores = Array.from({ length: SHARDS }, (_, shard) => new ShardStore(path.join(dataDir, shardFile(shard))));
  const ids: string[] = [];
  try {
    for (let from = 0; from < count; from += FILL_BATCH_ROWS) {
      const batches: ListChange[][] = stores.map(() => []);
      for (let i = from; i < Math.min(count, from + FILL_BATCH_ROWS); i += 1) {
        const rare = i % RARE_EVERY === 0;
        // The rare rows are also the second customer's, in its partition (a customer's rows live there).
        const partition = rare ? RARE_PARTITION : i % PARTITIONS;
        const atMs = nowMs - (count - i) * 10;
        const id = mintId(partition, atMs);
        const type = rare ? 'transfer.failed' : 'payment.completed';
        const about = rare ? rareCustomerId : customerId;
        const body = JSON.stringify({ id, event_type: type, event_key: `${type}:${id}`, occurred_at: new Date(atMs).toISOString(), data: { transaction_id: id, amount_minor: 500_000, currency: 'NGN', customer_id: about } });
        batches[partition % SHARDS]!.push({ kind: 'event', id, owner, customerId: about, status: type, body, lsn: 0 });
        if (i >= count - 1_000) ids.push(id);
      }
      stores.forEach((store, shard) => store.db.transaction(() => store.lists!.apply(batches[shard]!, []))());
    }
  } finally {
    for (const store of stores) store.close();
  }
  return ids.sort();
}

async function measure(server: TestServer, key: string, label: string, middle: string, rareCustomerId: string): Promise<Array<[string, { p50: number; p99: number; rows: number }]>> {
  const api = client(server.baseUrl, key);
  const samples = Number(flag('samples', '200'));
  return [
    [`${label} first page, limit 20`, await timeGets(api, () => '/v1/events', samples)],
    [`${label} first page, limit 100`, await timeGets(api, () => '/v1/events?limit=100', samples)],
    [`${label} deep page (starting_after)`, await timeGets(api, () => `/v1/events?limit=20&starting_after=${middle}`, samples)],
    [`${label} type=transfer.failed (1 in ${RARE_EVERY})`, await timeGets(api, () => '/v1/events?type=transfer.failed', samples)],
    [`${label} customer_id of 1 row in ${RARE_EVERY}`, await timeGets(api, () => `/v1/events?customer_id=${rareCustomerId}`, samples)],
  ];
}

async function eventsAt(rows: number): Promise<Array<[string, { p50: number; p99: number; rows: number }]>> {
  const key = secretKey();
  const dataDir = tempDataDir('list-bench');
  const env = {};
  let server = await startServer({ keys: [`${key}@${OWNER_ACCOUNT}`], dataDir, shards: SHARDS, env });
  const api = client(server.baseUrl, key);
  const customer = await api('POST', '/v1/customers', { idempotencyKey: idem('c'), body: { name: 'Bench', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
  await server.stop();
  const started = performance.now();
  const rareCustomerId = mintId(RARE_PARTITION, Date.now());
  const ids = fillEvents(dataDir, `test:${OWNER_ACCOUNT}`, rows, Date.now(), customer.body.data.id, rareCustomerId);
  console.log(`filled ${rows.toLocaleString('en-US')} event rows in ${fmt((performance.now() - started) / 1000)} s`);
  server = await startServer({ keys: [`${key}@${OWNER_ACCOUNT}`], dataDir, shards: SHARDS, env });
  try {
    return await measure(server, key, `events ${rows.toLocaleString('en-US')}:`, ids[Math.floor(ids.length / 2)]!, rareCustomerId);
  } finally {
    await server.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/**
 * Older transaction rows filled into the index under the account (ids minted before every real one, so
 * a first page shows only real transactions while the index holds `count` more rows).
 */
function fillOlderTransactions(dataDir: string, owner: string, count: number, customerId: string): void {
  const stores = Array.from({ length: SHARDS }, (_, shard) => new ShardStore(path.join(dataDir, shardFile(shard))));
  const oldestMs = Date.now() - 30 * 86_400_000;
  try {
    for (let from = 0; from < count; from += FILL_BATCH_ROWS) {
      const batches: ListChange[][] = stores.map(() => []);
      for (let i = from; i < Math.min(count, from + FILL_BATCH_ROWS); i += 1) {
        const partition = i % PARTITIONS;
        batches[partition % SHARDS]!.push({ kind: 'transaction', id: mintId(partition, oldestMs + i), owner, customerId, status: 'completed', body: null, lsn: 0 });
      }
      stores.forEach((store, shard) => store.db.transaction(() => store.lists!.apply(batches[shard]!, []))());
    }
  } finally {
    for (const store of stores) store.close();
  }
}

/** Transactions created over HTTP (each page row is read by id: hot or cold), then listed; `older` more rows filled below them. */
async function transactionsAt(count: number, older: number): Promise<Array<[string, { p50: number; p99: number; rows: number }]>> {
  const key = secretKey();
  const dataDir = tempDataDir('list-bench');
  const env = {};
  let server = await startServer({ keys: [`${key}@${OWNER_ACCOUNT}`], dataDir, shards: SHARDS, env });
  let api = client(server.baseUrl, key);
  try {
    const customers: string[] = [];
    for (let i = 0; i < 8; i += 1) customers.push((await api('POST', '/v1/customers', { idempotencyKey: idem('c'), body: { name: 'Bench', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } })).body.data.id);
    const started = performance.now();
    for (let made = 0; made < count; made += 100) {
      await Promise.all(Array.from({ length: 100 }, (_, i) => api('POST', '/v1/transactions', { idempotencyKey: idem('t'), body: { customer_id: customers[i % customers.length], type: 'funding', amount_minor: 1000, currency: 'NGN' } })));
    }
    console.log(`created ${count.toLocaleString('en-US')} transactions over HTTP in ${fmt((performance.now() - started) / 1000)} s`);
    if (older > 0) {
      await server.stop();
      fillOlderTransactions(dataDir, `test:${OWNER_ACCOUNT}`, older, customers[1]!);
      server = await startServer({ keys: [`${key}@${OWNER_ACCOUNT}`], dataDir, shards: SHARDS, env });
      api = client(server.baseUrl, key);
    }
    const samples = Number(flag('samples', '200'));
    const label = `transactions ${(count + older).toLocaleString('en-US')}:`;
    return [
      [`${label} first page, limit 20`, await timeGets(api, () => '/v1/transactions', samples)],
      [`${label} first page, limit 100`, await timeGets(api, () => '/v1/transactions?limit=100', samples)],
      [`${label} one customer, limit 20`, await timeGets(api, () => `/v1/transactions?customer_id=${customers[0]}`, samples)],
    ];
  } finally {
    await server.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const sizes = flag('rows', '10000,1000000').split(',').map(Number);
  const results: Array<[string, { p50: number; p99: number; rows: number }]> = [];
  for (const rows of sizes) results.push(...(await eventsAt(rows)));
  const txns = Number(flag('txns', '10000'));
  results.push(...(await transactionsAt(txns, 0)));
  results.push(...(await transactionsAt(txns, Number(flag('older-txns', '990000')))));
  console.log(table([['page', 'rows shown', 'p50 ms', 'p99 ms'], ...results.map(([name, r]) => [name, String(r.rows), fmt(r.p50), fmt(r.p99)])]));
  console.log(writeResult('list', { machine: machine(), results: Object.fromEntries(results) }));
}

await main();

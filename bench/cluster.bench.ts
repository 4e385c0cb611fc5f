// Cluster mode against the single-node default in the same run: durable POST /v1/payments
// (bank_transfer) driven by wrk over 127.0.0.1 at a single-node server, at the owning cluster node
// (its front, replication through 3 nats-servers, R3), at a follower node (one forward more), and at
// all three nodes at once (the aggregate), then the same aggregate with per-shard ownership
// (KOBO_CLUSTER_OWNERSHIP=shard, 3 shards spread over the 3 nodes, customers on every shard).
// Run: npx tsx bench/cluster.bench.ts [--duration 10] [--connections 64]
// Needs wrk, taskset and nats-server. Every process it starts is killed by PID in a finally; wrk runs are bounded by -d.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { flag, fmt, machine, table, writeResult } from './lib/report.ts';
import { postScript, runWrk, type WrkResult } from './lib/wrk.ts';
import { client, idem, secretKey, startServer, uniqueEmail, uniquePhone } from '../test/helpers/server.ts';
import { startKoboCluster, type KoboCluster } from '../test/helpers/cluster.ts';
import { kobo } from '../test/helpers/cli.ts';
import { partitionOfId } from '../src/ids.ts';

const DURATION_S = Number(flag('duration', '10'));
const CONNECTIONS = Number(flag('connections', '64'));
const CLIENT_CORE = 1;
if (!(DURATION_S > 0 && DURATION_S <= 60) || !(CONNECTIONS >= 3 && CONNECTIONS <= 512)) throw new Error('usage: cluster.bench.ts [--duration 1..60] [--connections 3..512]');

const key = secretKey();
const keys = [`${key}@bench`];
const env = { KOBO_RATE_LIMIT_WRITE_PER_MIN: '100000000', KOBO_RATE_LIMIT_READ_PER_MIN: '100000000' };


/** Bodies for customers on every one of `shards` shards (`each` per shard), tier_3 (far below any daily limit). */
async function bodiesOnEveryShard(baseUrl: string, shards: number, each: number): Promise<string[]> {
  const api = client(baseUrl, key);
  const perShard = new Array<number>(shards).fill(0);
  const bodies: string[] = [];
  for (let attempt = 0; bodies.length < shards * each && attempt < 400; attempt += 1) {
    const c = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: 'Bench', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
    if (c.status === 503) {
      await new Promise((resolve) => setTimeout(resolve, 300));
      continue;
    }
    if (c.status !== 201) throw new Error(`customer: ${c.status} ${JSON.stringify(c.body)}`);
    const shard = partitionOfId(c.body.data.id) % shards;
    if (perShard[shard]! >= each) continue;
    perShard[shard]! += 1;
    const tier = await api('PATCH', `/v1/customers/${c.body.data.id}`, { body: { tier: 'tier_3' } });
    if (tier.status !== 200) throw new Error(`tier_3: ${tier.status} ${JSON.stringify(tier.body)}`);
    bodies.push(JSON.stringify({ customer_id: c.body.data.id, amount_minor: 10_000, currency: 'NGN', method: 'bank_transfer' }));
  }
  if (bodies.length < shards * each) throw new Error('could not place customers on every shard');
  return bodies;
}

/** Waits until every shard of a per-shard cluster has an owner, spread over all three nodes, and a front is up. */
async function spreadOver(cluster: KoboCluster, shards: number): Promise<string> {
  for (let i = 0; i < 120; i += 1) {
    const r = kobo(cluster.nodes[0]!.server.dataDir, 'cluster', 'status', '--json', '--nats', cluster.nats.urls.join(','));
    if (r.status === 0) {
      const status = JSON.parse(r.stdout) as { owner: { node: string } | null; shards: Array<{ owner: { node: string } | null }> };
      const owners = new Set(status.shards.map((s) => s.owner?.node ?? null));
      if (status.owner !== null && status.shards.length === shards && !owners.has(null) && owners.size === 3) return status.shards.map((s, n) => `${n}→${s.owner!.node}`).join(' ');
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error('the shards did not spread over the three nodes');
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kobo-cluster-bench-'));
const rows: Array<{ target: string; result: WrkResult }> = [];
const wrk = (baseUrl: string, file: string, connections: number, nonce: string): Promise<WrkResult> =>
  runWrk({ url: `${baseUrl}/v1/payments`, core: CLIENT_CORE, threads: 1, connections, durationS: DURATION_S, script: file, scriptArgs: [nonce] });

// Every row runs 3 shards and posts for customers on every shard (2 each): the same work everywhere.
const SPREAD_SHARDS = 3;
const single = await startServer({ keys, env, shards: SPREAD_SHARDS });
try {
  const file = postScript(dir, { name: 'single', bodies: await bodiesOnEveryShard(single.baseUrl, SPREAD_SHARDS, 2), authorization: `Bearer ${key}` });
  await wrk(single.baseUrl, file, CONNECTIONS, 'warm-single');
  rows.push({ target: 'single node (default, no NATS)', result: await wrk(single.baseUrl, file, CONNECTIONS, 'single') });
} finally {
  await single.kill();
}

/** The three nodes driven at once, each with a third of the connections: summed. */
async function aggregate(cluster: KoboCluster, file: string, label: string): Promise<WrkResult> {
  const each = Math.floor(CONNECTIONS / 3);
  const all = await Promise.all(cluster.nodes.map((n, i) => wrk(n.server.baseUrl, file, each, `${label}-${i}`)));
  return { ...all[0]!, requests: all.reduce((s, r) => s + r.requests, 0), requestsPerSec: all.reduce((s, r) => s + r.requestsPerSec, 0), latencyP50Ms: Math.max(...all.map((r) => r.latencyP50Ms)), latencyP99Ms: Math.max(...all.map((r) => r.latencyP99Ms)), non2xx: all.reduce((s, r) => s + r.non2xx, 0), socketErrors: all.reduce((s, r) => s + r.socketErrors, 0) };
}

const cluster = await startKoboCluster({ keys, env: { ...env, KOBO_CLUSTER_OWNERSHIP: 'node', KOBO_SHARDS: String(SPREAD_SHARDS) } });
try {
  const owner = await cluster.owner();
  const follower = (owner + 1) % 3;
  const ownerUrl = cluster.nodes[owner]!.server.baseUrl;
  const file = postScript(dir, { name: 'cluster', bodies: await bodiesOnEveryShard(ownerUrl, SPREAD_SHARDS, 2), authorization: `Bearer ${key}` });
  await wrk(ownerUrl, file, CONNECTIONS, 'warm-cluster');
  rows.push({ target: 'cluster, node-wide lease: at the owning node', result: await wrk(ownerUrl, file, CONNECTIONS, 'owner') });
  rows.push({ target: 'cluster, node-wide lease: at a follower (forwarded)', result: await wrk(cluster.nodes[follower]!.server.baseUrl, file, CONNECTIONS, 'follower') });
  rows.push({ target: `cluster, node-wide lease: all three nodes at once (${Math.floor(CONNECTIONS / 3)} connections each)`, result: await aggregate(cluster, file, 'all') });
} finally {
  await cluster.stop();
}

const spread = await startKoboCluster({ keys, env: { ...env, KOBO_CLUSTER_OWNERSHIP: 'shard', KOBO_SHARDS: String(SPREAD_SHARDS), KOBO_CLUSTER_COPY_IMAGE_SECONDS: '0' } });
try {
  const owners = await spreadOver(spread, SPREAD_SHARDS);
  const file = postScript(dir, { name: 'spread', bodies: await bodiesOnEveryShard(spread.nodes[0]!.server.baseUrl, SPREAD_SHARDS, 2), authorization: `Bearer ${key}` });
  await wrk(spread.nodes[0]!.server.baseUrl, file, CONNECTIONS, 'warm-spread');
  rows.push({ target: `per-shard ownership (${owners}): at one node`, result: await wrk(spread.nodes[1]!.server.baseUrl, file, CONNECTIONS, 'spread-one') });
  rows.push({ target: `per-shard ownership: all three nodes at once (${Math.floor(CONNECTIONS / 3)} connections each)`, result: await aggregate(spread, file, 'spread-all') });
} finally {
  await spread.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}

const out = table([
  ['target', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx', 'socket errors'],
  ...rows.map((r) => [r.target, fmt(r.result.requestsPerSec, 0), fmt(r.result.latencyP50Ms), fmt(r.result.latencyP99Ms), String(r.result.non2xx), String(r.result.socketErrors)]),
]);
process.stdout.write(`durable POST /v1/payments (bank_transfer), ${CONNECTIONS} connections, ${DURATION_S} s, wrk on core ${CLIENT_CORE}, servers unpinned\n${out}\n`);
writeResult('cluster', { machine: machine(), durationS: DURATION_S, connections: CONNECTIONS, rows: rows.map((r) => ({ target: r.target, ...r.result, raw: undefined })) });

// Cluster mode against the single-node default in the same run: durable POST /v1/payments
// (bank_transfer) driven by wrk over 127.0.0.1 at a single-node server, at the owning cluster node
// (its front, replication through 3 nats-servers, R3), at a follower node (one forward more), and at
// all three nodes at once (the aggregate). Run: npx tsx bench/cluster.bench.ts [--duration 10] [--connections 64]
// Needs wrk, taskset and nats-server. Every process it starts is killed by PID in a finally; wrk runs are bounded by -d.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { flag, fmt, machine, table, writeResult } from './lib/report.ts';
import { postScript, runWrk, type WrkResult } from './lib/wrk.ts';
import { client, idem, secretKey, startServer, uniqueEmail, uniquePhone } from '../test/helpers/server.ts';
import { startKoboCluster } from '../test/helpers/cluster.ts';

const DURATION_S = Number(flag('duration', '10'));
const CONNECTIONS = Number(flag('connections', '64'));
const CLIENT_CORE = 1;
if (!(DURATION_S > 0 && DURATION_S <= 60) || !(CONNECTIONS >= 3 && CONNECTIONS <= 512)) throw new Error('usage: cluster.bench.ts [--duration 1..60] [--connections 3..512]');

const key = secretKey();
const keys = [`${key}@bench`];
const env = { KOBO_RATE_LIMIT_WRITE_PER_MIN: '100000000', KOBO_RATE_LIMIT_READ_PER_MIN: '100000000' };


async function bodyFor(baseUrl: string): Promise<string> {
  const api = client(baseUrl, key);
  const c = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: 'Bench', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
  if (c.status !== 201) throw new Error(`customer: ${c.status} ${JSON.stringify(c.body)}`);
  // tier_3 (NGN 5e9 a day): the runs stay far below the customer's daily limit.
  const tier = await api('PATCH', `/v1/customers/${c.body.data.id}`, { body: { tier: 'tier_3' } });
  if (tier.status !== 200) throw new Error(`tier_3: ${tier.status} ${JSON.stringify(tier.body)}`);
  return JSON.stringify({ customer_id: c.body.data.id, amount_minor: 10_000, currency: 'NGN', method: 'bank_transfer' });
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kobo-cluster-bench-'));
const rows: Array<{ target: string; result: WrkResult }> = [];
const wrk = (baseUrl: string, file: string, connections: number, nonce: string): Promise<WrkResult> =>
  runWrk({ url: `${baseUrl}/v1/payments`, core: CLIENT_CORE, threads: 1, connections, durationS: DURATION_S, script: file, scriptArgs: [nonce] });

const single = await startServer({ keys, env });
try {
  const file = postScript(dir, { name: 'single', bodies: [await bodyFor(single.baseUrl)], authorization: `Bearer ${key}` });
  await wrk(single.baseUrl, file, CONNECTIONS, 'warm-single');
  rows.push({ target: 'single node (default, no NATS)', result: await wrk(single.baseUrl, file, CONNECTIONS, 'single') });
} finally {
  await single.kill();
}

const cluster = await startKoboCluster({ keys, env });
try {
  const owner = await cluster.owner();
  const follower = (owner + 1) % 3;
  const ownerUrl = cluster.nodes[owner]!.server.baseUrl;
  const file = postScript(dir, { name: 'cluster', bodies: [await bodyFor(ownerUrl)], authorization: `Bearer ${key}` });
  await wrk(ownerUrl, file, CONNECTIONS, 'warm-cluster');
  rows.push({ target: 'cluster: at the owning node', result: await wrk(ownerUrl, file, CONNECTIONS, 'owner') });
  rows.push({ target: 'cluster: at a follower (forwarded)', result: await wrk(cluster.nodes[follower]!.server.baseUrl, file, CONNECTIONS, 'follower') });
  const each = Math.floor(CONNECTIONS / 3);
  const all = await Promise.all(cluster.nodes.map((n, i) => wrk(n.server.baseUrl, file, each, `all-${i}`)));
  const sum = all.reduce((s, r) => s + r.requestsPerSec, 0);
  rows.push({
    target: `cluster: all three nodes at once (${each} connections each)`,
    result: { ...all[0]!, requests: all.reduce((s, r) => s + r.requests, 0), requestsPerSec: sum, latencyP50Ms: Math.max(...all.map((r) => r.latencyP50Ms)), latencyP99Ms: Math.max(...all.map((r) => r.latencyP99Ms)), non2xx: all.reduce((s, r) => s + r.non2xx, 0), socketErrors: all.reduce((s, r) => s + r.socketErrors, 0) },
  });
} finally {
  await cluster.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}

const out = table([
  ['target', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx', 'socket errors'],
  ...rows.map((r) => [r.target, fmt(r.result.requestsPerSec, 0), fmt(r.result.latencyP50Ms), fmt(r.result.latencyP99Ms), String(r.result.non2xx), String(r.result.socketErrors)]),
]);
process.stdout.write(`durable POST /v1/payments (bank_transfer), ${CONNECTIONS} connections, ${DURATION_S} s, wrk on core ${CLIENT_CORE}, servers unpinned\n${out}\n`);
writeResult('cluster', { machine: machine(), durationS: DURATION_S, connections: CONNECTIONS, rows: rows.map((r) => ({ target: r.target, ...r.result, raw: undefined })) });

// Helpers for per-shard ownership tests (KOBO_CLUSTER_OWNERSHIP=shard): the status as `kobo cluster
// status --json` reports it, waiting for the shards to spread, requests retried through a move, and
// customers placed on a chosen shard. Test-side only. Invariant: a retried POST keeps its Idempotency-Key.
import assert from 'node:assert/strict';
import { client, idem, uniqueEmail, uniquePhone, type ApiResponse } from './server.ts';
import { load, type Acked, type Api, type Fixture } from './cluster-load.ts';
import { connectJetStream } from '../../src/cluster/streams.ts';
import type { KoboCluster } from './cluster.ts';
import { kobo } from './cli.ts';
import { partitionOfId } from '../../src/ids.ts';
import { processGone } from './cluster-load.ts';

export const SHARDS = 3;
export const SPREAD_ENV = { KOBO_CLUSTER_OWNERSHIP: 'shard', KOBO_SHARDS: String(SHARDS), KOBO_CLUSTER_COPY_IMAGE_SECONDS: '0' };

export interface Status {
  owner: { node: string } | null;
  nodes: Array<{ node: string; held: number[]; lag: Array<number | null> }>;
  shards: Array<{ shard: number; owner: { node: string; epoch: number } | null; lastSeq: number }>;
}

export function statusOf(cluster: KoboCluster, via: number, nats = cluster.nats.urls.join(',')): Status {
  const r = kobo(cluster.nodes[via]!.server.dataDir, 'cluster', 'status', '--json', '--nats', nats);
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as Status;
}

/** Waits until every shard has an owner and a front is up, the owners spread over at least `nodesMin` nodes. */
export async function spread(cluster: KoboCluster, via: number, nodesMin: number, timeoutMs: number): Promise<Status> {
  const until = Date.now() + timeoutMs;
  let last: Status | null = null;
  while (Date.now() < until) {
    last = statusOf(cluster, via);
    const owners = new Set(last.shards.map((s) => s.owner?.node ?? null));
    if (last.owner !== null && !owners.has(null) && owners.size >= nodesMin && last.shards.length === SHARDS) return last;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  assert.fail(`the shards did not spread over ${nodesMin} nodes: ${JSON.stringify(last)}`);
}

/** A request that may meet a move (503 with Retry-After) is sent again with the same key. */
export async function retried(api: Api, method: string, path: string, body?: unknown, timeoutMs = 30_000): Promise<ApiResponse> {
  const idempotencyKey = method === 'POST' ? idem() : undefined;
  const until = Date.now() + timeoutMs;
  for (;;) {
    const r = await api(method, path, { ...(idempotencyKey === undefined ? {} : { idempotencyKey }), ...(body === undefined ? {} : { body }) }).catch(() => null);
    if (r !== null && r.status !== 503) return r;
    if (r !== null) assert.ok(r.headers.get('retry-after') !== null, 'a 503 says when to retry');
    if (Date.now() > until) assert.fail(`${method} ${path}: still unavailable after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

export const shardOf = (id: string): number => partitionOfId(id) % SHARDS;

/** A customer whose partition lies on `shard` (the server picks partitions: created until one does). */
export async function customerOn(api: Api, shard: number): Promise<string> {
  for (let i = 0; i < 200; i += 1) {
    const r = await retried(api, 'POST', '/v1/customers', { name: 'Spread', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    if (shardOf(r.body.data.id) === shard) return r.body.data.id;
  }
  assert.fail(`no customer landed on shard ${shard}`);
}

/** Every node's client, once the shards have spread over all three nodes and every node answers a list across them. */
export async function spreadCluster(cluster: KoboCluster, key: string): Promise<{ apis: Api[]; status: Status }> {
  const apis = cluster.nodes.map((n) => client(n.server.baseUrl, key));
  const status = await spread(cluster, 0, cluster.nodes.length, 60_000);
  await answering(apis);
  return { apis, status };
}

/** Waits until a list across every shard answers 200 through each node (the front is up and linked to every shard). */
export async function answering(apis: readonly Api[]): Promise<void> {
  for (const api of apis) {
    const r = await retried(api, 'GET', '/v1/customers?limit=1');
    assert.equal(r.status, 200, JSON.stringify(r.body));
  }
}

/** Kills a node (kill -9) and waits until every process it started is gone; returns when it was killed. */
export async function killNode(cluster: KoboCluster, index: number): Promise<number> {
  const pids = cluster.nodes[index]!.childPids();
  const killedAt = Date.now();
  await cluster.nodes[index]!.server.kill();
  for (let i = 0; i < 50 && !pids.every(processGone); i += 1) await new Promise((resolve) => setTimeout(resolve, 100));
  assert.ok(pids.every(processGone), `the killed node's processes exit with it: ${pids.join(',')}`);
  return killedAt;
}

/**
 * Sends a payment of `payer` through `api` until one is acknowledged (each a new key), within `windowMs`
 * of `since`; every other answer meanwhile must be a 503 saying when to retry. Returns the ms from `since`.
 */
export async function writesAgain(api: Api, payer: string, since: number, windowMs = 25_000): Promise<number> {
  while (Date.now() - since < windowMs) {
    const r = await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: payer, amount_minor: 10_000, currency: 'NGN', method: 'bank_transfer' } }).catch(() => null);
    if (r !== null && r.status === 201) return Date.now() - since;
    if (r !== null) assert.equal(r.status, 503, `during the move: ${JSON.stringify(r.body)}`);
    if (r !== null) assert.ok(r.headers.get('retry-after') !== null, 'a 503 during the move says when to retry');
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  assert.fail(`no write of ${payer} acknowledged within ${windowMs} ms`);
}

/**
 * `kobo verify` is clean on each of these nodes' data dirs, once each is current on every shard it follows
 * (lag 0 in the status): a node's data dir holds the files of its own shards and copies of the others, and
 * verify's balance across partitions holds only when the copies have caught up with what the holders wrote.
 */
export async function verifyAll(cluster: KoboCluster, indices: readonly number[], nats = cluster.nats.urls.join(',')): Promise<void> {
  const names = indices.map((i) => cluster.nodes[i]!.name);
  const current = (s: Status): boolean => names.every((name) => s.nodes.find((n) => n.node === name)?.lag.every((l) => l === null || l === 0) === true);
  let last: Status | null = null;
  for (const until = Date.now() + 30_000; Date.now() < until; await new Promise((resolve) => setTimeout(resolve, 500))) {
    last = statusOf(cluster, indices[0]!, nats);
    if (current(last)) break;
  }
  assert.ok(last !== null && current(last), `the nodes ${names.join(', ')} catch up on every shard they follow: ${JSON.stringify(last?.nodes)}`);
  for (const i of indices) {
    const verify = kobo(cluster.nodes[i]!.server.dataDir, 'verify');
    assert.equal(verify.status, 0, `verify on ${cluster.nodes[i]!.name}:\n${verify.stdout}\n${verify.stderr}`);
  }
}

/** A shard held by a node that is not the front's, that node's index and the other nodes' (the node-wide failover is the front's loss). */
export function shardOffTheFront(cluster: KoboCluster, status: Status): { shard: number; holder: number; others: number[] } {
  const found = status.shards.find((s) => s.owner !== null && s.owner.node !== status.owner!.node);
  assert.ok(found !== undefined, `a shard not held by the front's node: ${JSON.stringify(status)}`);
  const holder = cluster.nodes.findIndex((n) => n.name === found.owner!.node);
  return { shard: found.shard, holder, others: cluster.nodes.map((_, i) => i).filter((i) => i !== holder) };
}

/**
 * The kill tests' start: the load of cluster-load.ts through every node, running for 2 s, and the
 * nats-server leading `stream` (its index in `cluster.nats.nodes`, -1 if none leads). `stop` ends the load
 * and resolves once every writer has.
 */
export async function loadAndLeaderOf(cluster: KoboCluster, apis: readonly Api[], f: Fixture, stream: string, clientName: string): Promise<{ acked: Acked[]; errors: string[]; leader: string | undefined; victim: number; stop: () => Promise<void> }> {
  const acked: Acked[] = [];
  const errors: string[] = [];
  let running = true;
  const loading = load(() => [...apis], f, () => running, acked, errors);
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  const { nc, jsm } = await connectJetStream(cluster.nats.urls, clientName);
  const leader = (await jsm.streams.info(stream)).cluster?.leader;
  await nc.close();
  const victim = cluster.nats.nodes.findIndex((n) => n.name === leader);
  return {
    acked,
    errors,
    leader,
    victim,
    stop: async () => {
      running = false;
      await loading;
    },
  };
}

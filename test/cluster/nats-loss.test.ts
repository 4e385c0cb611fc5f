// Cluster mode over 3 nats-servers and 3 kobo nodes on 127.0.0.1: the loss of one nats-server under load
// through every node, be it the leader of the lease bucket or of a shard stream, costs no error (requests
// wait for the election), moves nothing (same owner, same server process), and loses no acknowledged write.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client, secretKey } from '../helpers/server.ts';
import { fixture, load, replayAll, type Acked } from '../helpers/cluster-load.ts';
import { NODE_WIDE_ENV, withCluster, type KoboCluster } from '../helpers/cluster.ts';
import { natsServerBinary } from '../helpers/nats.ts';
import { kobo } from '../helpers/cli.ts';
import { until } from '../helpers/wait.ts';
import { connectJetStream, LEASE_BUCKET, streamOf } from '../../src/cluster/streams.ts';

const key = secretKey();
const keys = [`${key}@cluster`];
const skip = natsServerBinary() !== null ? false : 'nats-server is not installed (apt-get install nats-server)';
/** Load kept up after the kill: the election (5–8 s on 2.9.10), a lapsed lease's re-creation, and writes after. */
const AFTER_KILL_MS = 18_000;
/** How long the followers may take to reach every stream's tail once the load stops. */
const CATCH_UP_MS = 30_000;

/** Waits until every follower reports no lag on any stream (its copy is then the owner's, for verify). */
async function followersCaughtUp(cluster: KoboCluster, owner: number): Promise<void> {
  const nats = cluster.nats.urls.filter((_, i) => cluster.nats.nodes[i]!.child?.exitCode === null && cluster.nats.nodes[i]!.child?.signalCode === null).join(',');
  let last = '';
  for (const deadline = Date.now() + CATCH_UP_MS; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 500))) {
    const r = kobo(cluster.nodes[owner]!.server.dataDir, 'cluster', 'status', '--json', '--nats', nats);
    if (r.status !== 0) continue;
    last = r.stdout;
    const status = JSON.parse(r.stdout) as { nodes: Array<{ role: string; lag: number[]; controlLag: number | null }> };
    const followers = status.nodes.filter((n) => n.role === 'follower');
    if (followers.length === 2 && followers.every((n) => n.lag.every((l) => l === 0) && (n.controlLag ?? 0) === 0)) return;
  }
  assert.fail(`the followers did not catch up in ${CATCH_UP_MS} ms: ${last}`);
}

/** Index (in cluster.nats.nodes) of the nats-server leading `stream`. */
async function leaderOf(cluster: KoboCluster, stream: string): Promise<number> {
  const { nc, jsm } = await connectJetStream(cluster.nats.urls, 'kobo-test-leader');
  try {
    const leader = (await jsm.streams.info(stream)).cluster?.leader;
    const index = cluster.nats.nodes.findIndex((n) => n.name === leader);
    assert.ok(index >= 0, `${stream} has a leader (${String(leader)})`);
    return index;
  } finally {
    await nc.close();
  }
}

/**
 * Load through all three nodes, kill -9 of the nats-server `victim` picks, more load: asserts no error at
 * all, the same owner and server process, every 2xx replayed the same at the first try, verify clean.
 */
async function killUnderLoad(cluster: KoboCluster, victim: () => Promise<number>, label: string): Promise<void> {
  const owner = await cluster.owner();
  const serving = cluster.nodes[owner]!.servingPid();
  const apis = cluster.nodes.map((n) => client(n.server.baseUrl, key));
  // Every node forwards to the owner before the load starts: a node that has not read the lease yet
  // answers 503 (the last one started can still be at its first poll).
  for (const api of apis) await until(() => api('GET', '/healthz'), (r) => r.status === 200, 'every node forwarding to the owner', 10_000);
  const f = await fixture(apis[(owner + 1) % 3]!);
  const acked: Acked[] = [];
  const errors: string[] = [];
  let running = true;
  const loading = load(() => apis, f, () => running, acked, errors);
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  const index = await victim();
  const ackedBefore = acked.length;
  const errorsBefore = errors.length;
  await cluster.nats.kill(index);
  await new Promise((resolve) => setTimeout(resolve, AFTER_KILL_MS));
  running = false;
  await loading;
  const slowest = Math.max(...acked.slice(ackedBefore).map((a) => a.ms));
  const kinds = new Map<string, number>();
  for (const error of errors) {
    const kind = `${error.slice(0, 50)}… ${/\(via [^)]*\)$/.exec(error)?.[0] ?? ''}`;
    kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
  }
  process.stdout.write(`# ${label}: killed ${cluster.nats.nodes[index]!.name}; acknowledged ${acked.length} (${ackedBefore} before the kill), slowest answer after it ${slowest} ms, errors ${errors.length} (${errorsBefore} before the kill) ${JSON.stringify([...kinds])}\n`);
  assert.deepEqual(errors, [], 'no request failed');
  assert.ok(acked.length > ackedBefore + 20, 'writes acknowledged after the election');
  assert.equal(await cluster.owner(1_000), owner, 'ownership did not move');
  assert.equal(cluster.nodes[owner]!.servingPid(), serving, 'the owner kept its server process');
  for (const api of apis) await replayAll(api, acked);
  // The followers go on following through the election: each copy reaches the streams' tails.
  await followersCaughtUp(cluster, owner);
  for (const node of cluster.nodes) {
    const verify = kobo(node.server.dataDir, 'verify');
    assert.equal(verify.status, 0, `verify on ${node.name}:\n${verify.stdout}\n${verify.stderr}`);
  }
}

test('cluster: kill -9 of the nats-server leading the lease bucket under load through every node → no error, no move, every acknowledged write found', { skip, timeout: 180_000 }, () =>
  withCluster({ keys, env: NODE_WIDE_ENV }, (cluster) => killUnderLoad(cluster, () => leaderOf(cluster, `KV_${LEASE_BUCKET}`), 'lease leader')));

test('cluster: the lease bucket\'s leader killed with a TTL shorter than its election → the owner re-creates its lapsed lease, proves the streams untouched, serves on: no error, no move', { skip, timeout: 180_000 }, () =>
  withCluster({ keys, env: { ...NODE_WIDE_ENV, KOBO_CLUSTER_LEASE_SECONDS: '3' } }, async (cluster) => {
    await killUnderLoad(cluster, () => leaderOf(cluster, `KV_${LEASE_BUCKET}`), 'lease leader, TTL 3 s');
    const owner = await cluster.owner(1_000);
    const lines = cluster.nodes[owner]!.server.output().split('\n').filter((l) => /re-created its lapsed lease|serving again under/.test(l));
    for (const line of lines) process.stdout.write(`# ${line.slice(0, 240)}\n`);
    assert.ok(lines.some((l) => /re-created its lapsed lease/.test(l)), 'the lease lapsed during the election and was re-created');
  }));

test('cluster: kill -9 of the nats-server leading a shard stream under load through every node → requests wait for the election: no error, no move, every acknowledged write found', { skip, timeout: 180_000 }, () =>
  withCluster({ keys, env: NODE_WIDE_ENV }, (cluster) =>
    killUnderLoad(cluster, async () => {
      // The leader of the busiest shard stream, preferably one that does not lead the lease bucket too.
      const lease = await leaderOf(cluster, `KV_${LEASE_BUCKET}`);
      const { nc, jsm } = await connectJetStream(cluster.nats.urls, 'kobo-test-busiest');
      const sizes = [(await jsm.streams.info(streamOf(0))).state.last_seq, (await jsm.streams.info(streamOf(1))).state.last_seq];
      await nc.close();
      const byLoad = [0, 1].sort((a, b) => sizes[b]! - sizes[a]!);
      const leaders = [await leaderOf(cluster, streamOf(byLoad[0]!)), await leaderOf(cluster, streamOf(byLoad[1]!))];
      const victim = leaders.find((i) => i !== lease) ?? leaders[0]!;
      process.stdout.write(`# shard leader: the victim ${victim === lease ? 'leads' : 'does not lead'} the lease bucket too\n`);
      return victim;
    }, 'shard leader')));

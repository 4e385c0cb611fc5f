// Per-shard ownership's harder losses over 3 nats-servers and 3 kobo nodes on 127.0.0.1: kill -9 of the
// node holding the front (the front and that node's shards move), a frozen shard owner (SIGSTOP) coming
// back after its shard moved, and the lease bucket's nats leader killed (nothing moves, nothing fails).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { idem, secretKey } from '../helpers/server.ts';
import { fixture, load, processGone, replayAll, type Acked } from '../helpers/cluster-load.ts';
import { withCluster, type KoboCluster } from '../helpers/cluster.ts';
import { natsServerBinary } from '../helpers/nats.ts';
import { kobo } from '../helpers/cli.ts';
import { answering, customerOn, killNode, loadAndLeaderOf, spread, spreadCluster, statusOf, SPREAD_ENV, verifyAll, writesAgain } from '../helpers/cluster-shards.ts';
import { LEASE_BUCKET } from '../../src/cluster/streams.ts';

const key = secretKey();
const keys = [`${key}@cluster`];
const skip = natsServerBinary() !== null ? false : 'nats-server is not installed (apt-get install nats-server)';

test('cluster, per-shard ownership: kill -9 of the node holding the front under load → a survivor takes the front and that node\'s shards, writes succeed again within 15 s, every acknowledged request replays the same, verify clean', { skip, timeout: 240_000 }, () =>
  withCluster({ keys, env: SPREAD_ENV }, async (cluster) => {
    const { apis, status } = await spreadCluster(cluster, key);
    const victim = cluster.nodes.findIndex((n) => n.name === status.owner!.node);
    const survivors = [0, 1, 2].filter((i) => i !== victim);
    const f = await fixture(apis[survivors[0]!]!);
    const acked: Acked[] = [];
    const errors: string[] = [];
    let alive = [0, 1, 2];
    let running = true;
    const loading = load(() => alive.map((i) => apis[i]!), f, () => running, acked, errors);
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    const ackedBefore = acked.length;
    assert.ok(ackedBefore > 20, `load before the kill: ${ackedBefore}, errors ${errors.slice(0, 3).join('; ')}`);
    alive = survivors;
    const killedAt = await killNode(cluster, victim);
    const recoveredMs = await writesAgain(apis[survivors[0]!]!, f.payers[0]!, killedAt);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    running = false;
    await loading;
    process.stdout.write(`# acknowledged ${acked.length} (${ackedBefore} before the kill), writes again after ${recoveredMs} ms\n`);
    assert.ok(recoveredMs >= 0 && recoveredMs <= 15_000, `writes succeed again ${recoveredMs} ms after the kill`);
    assert.ok(acked.length > ackedBefore, 'writes acknowledged after the move too');
    for (const error of errors) assert.match(error, /^(503 |fetch: )/);
    const after = await spread(cluster, survivors[0]!, 1, 30_000);
    assert.notEqual(after.owner!.node, cluster.nodes[victim]!.name);
    assert.ok(after.shards.every((s) => s.owner!.node !== cluster.nodes[victim]!.name), `every shard moved off the killed node: ${JSON.stringify(after.shards)}`);
    await replayAll(apis[survivors[0]!]!, acked);
    await replayAll(apis[survivors[1]!]!, acked.slice(0, 30));
    await verifyAll(cluster, survivors);
  }));

test('cluster, per-shard ownership: a frozen shard owner (SIGSTOP) loses its shard; after SIGCONT it acknowledges nothing the new owner lacks, its shard host exits, and it follows again', { skip, timeout: 240_000 }, () =>
  withCluster({ keys, env: SPREAD_ENV }, async (cluster) => {
    const { apis, status } = await spreadCluster(cluster, key);
    const front = status.owner!.node;
    const frozenShard = status.shards.find((s) => s.owner!.node !== front)!.shard;
    const staleName = status.shards[frozenShard]!.owner!.node;
    const stale = cluster.nodes.findIndex((n) => n.name === staleName);
    const f = await fixture(apis[(stale + 1) % 3]!);
    const onFrozen = await customerOn(apis[(stale + 1) % 3]!, frozenShard);
    f.payers[0] = onFrozen;
    const acked: Acked[] = [];
    const errors: string[] = [];
    let running = true;
    // Writers keep going through every node, the frozen one included: its answers come after SIGCONT.
    const loading = load(() => apis, f, () => running, acked, errors);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const supervisor = cluster.nodes[stale]!.server.child.pid!;
    const hosts = cluster.nodes[stale]!.childPids();
    for (const pid of hosts) process.kill(pid, 'SIGSTOP');
    process.kill(supervisor, 'SIGSTOP');
    // Another node takes the frozen node's shard (its lease lapses: TTL 8 s).
    let moved = false;
    for (let i = 0; i < 60 && !moved; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      const now = statusOf(cluster, (stale + 1) % 3);
      moved = now.shards[frozenShard]!.owner !== null && now.shards[frozenShard]!.owner!.node !== staleName;
    }
    assert.ok(moved, `shard ${frozenShard} moved off the frozen node`);
    const via = (stale + 1) % 3;
    let written = false;
    for (let i = 0; i < 60 && !written; i += 1) {
      const r = await apis[via]!('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: onFrozen, amount_minor: 10_000, currency: 'NGN', method: 'bank_transfer' } });
      written = r.status === 201;
      if (!written) await new Promise((resolve) => setTimeout(resolve, 250));
    }
    assert.ok(written, `shard ${frozenShard} writes on its new owner`);
    process.kill(supervisor, 'SIGCONT');
    for (const pid of hosts) process.kill(pid, 'SIGCONT');
    for (let i = 0; i < 100 && !hosts.every(processGone); i += 1) await new Promise((resolve) => setTimeout(resolve, 100));
    assert.ok(hosts.every(processGone), 'the frozen node\'s shard host of the moved shard exits');
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    running = false;
    await loading;
    process.stdout.write(`# acknowledged ${acked.length}; refused or cut ${errors.length}\n`);
    // The thawed node is below its share again: a shard moves back to it. Once they are spread again,
    // every 2xx any client saw, the frozen node's late answers included, is found with the same body.
    await spread(cluster, via, 3, 60_000);
    await answering(apis);
    await replayAll(apis[via]!, acked);
    const forwarded = await apis[stale]!('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: onFrozen, amount_minor: 10_000, currency: 'NGN', method: 'bank_transfer' } });
    assert.equal(forwarded.status, 201, JSON.stringify(forwarded.body));
    const verify = kobo(cluster.nodes[stale]!.server.dataDir, 'verify');
    assert.equal(verify.status, 0, `verify on the former owner's copy:\n${verify.stdout}\n${verify.stderr}`);
  }));

/**
 * Known weakness, not fixed: with a TTL this short, a node at its fair share may claim a key that lapsed
 * during the election (free for half a TTL) before its holder re-creates it, and the shard moves
 * (one run of three: 435 moving-shard 503s). Run, but not counted, until the claim rule is fixed.
 */
const TTL_3_TODO = 'a lapsed shard key may be claimed by another node before its holder re-creates it (docs/decisions.md)';

/** The lease bucket's nats leader killed under load through every node: no request fails, no shard and not the front moves. */
async function leaseLeaderKilled(cluster: KoboCluster, label: string): Promise<void> {
  const { apis, status: before } = await spreadCluster(cluster, key);
  const f = await fixture(apis[1]!);
  const { acked, errors, leader, victim, stop } = await loadAndLeaderOf(cluster, apis, f, `KV_${LEASE_BUCKET}`, 'kobo-test-leader');
  assert.ok(victim >= 0, `the lease bucket has a leader (${String(leader)})`);
  const ackedBefore = acked.length;
  await cluster.nats.kill(victim);
  await new Promise((resolve) => setTimeout(resolve, 18_000));
  await stop();
  const slowest = Math.max(...acked.slice(ackedBefore).map((a) => a.ms));
  process.stdout.write(`# ${label}: killed ${leader}; acknowledged ${acked.length} (${ackedBefore} before), slowest answer after the kill ${slowest} ms, errors ${errors.length}: ${errors.slice(0, 3).join('; ')}\n`);
  assert.deepEqual(errors, [], 'no request failed');
  assert.ok(acked.length > ackedBefore + 20, 'writes went on after the kill');
  const live = cluster.nats.urls.filter((_, i) => i !== victim).join(',');
  const r = kobo(cluster.nodes[0]!.server.dataDir, 'cluster', 'status', '--json', '--nats', live);
  assert.equal(r.status, 0, r.stderr);
  const after = JSON.parse(r.stdout) as typeof before;
  assert.deepEqual(after.shards.map((s) => s.owner?.node), before.shards.map((s) => s.owner?.node), 'no shard moved');
  assert.equal(after.owner?.node, before.owner?.node, 'the front did not move');
  await replayAll(apis[2]!, acked);
}

test('cluster, per-shard ownership: kill -9 of the nats-server leading the lease bucket under load through every node → no error, no shard moves, every acknowledged write replays the same', { skip, timeout: 240_000 }, () =>
  withCluster({ keys, env: SPREAD_ENV }, (cluster) => leaseLeaderKilled(cluster, 'TTL 8 s')));

test('cluster, per-shard ownership: kill -9 of the nats-server leading the lease bucket with a 3 s lease TTL (the keys lapse during the election) → no error, no shard moves, every acknowledged write replays the same', { skip, timeout: 240_000, todo: TTL_3_TODO }, () =>
  withCluster({ keys, env: { ...SPREAD_ENV, KOBO_CLUSTER_LEASE_SECONDS: '3' } }, (cluster) => leaseLeaderKilled(cluster, 'TTL 3 s')));

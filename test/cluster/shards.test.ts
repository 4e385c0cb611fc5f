// Per-shard ownership (KOBO_CLUSTER_OWNERSHIP=shard) over 3 nats-servers and 3 kobo nodes on 127.0.0.1:
// the shards spread over the nodes, payments, transfers between wallets on shards of different nodes
// and service orders go through every node, and a kill -9 of a node holding a shard moves that shard
// while the others keep answering. Every process is killed by PID when the test ends.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { idem, secretKey } from '../helpers/server.ts';
import { load, replayAll, type Acked, type Fixture } from '../helpers/cluster-load.ts';
import { withCluster } from '../helpers/cluster.ts';
import { natsServerBinary } from '../helpers/nats.ts';
import { customerOn, killNode, retried, spread, spreadCluster, SPREAD_ENV, SHARDS, verifyAll, writesAgain } from '../helpers/cluster-shards.ts';

const key = secretKey();
const keys = [`${key}@cluster`];
const skip = natsServerBinary() !== null ? false : 'nats-server is not installed (apt-get install nats-server)';

test('cluster, per-shard ownership: shards spread over 3 nodes → payments, cross-node transfers and orders through every node; kill -9 of a shard owner under load → its shard serves again within 15 s on a survivor, the other shards answer throughout, every acknowledged request replays the same, verify clean', { skip, timeout: 300_000 }, () =>
  withCluster({ keys, env: SPREAD_ENV }, async (cluster) => {
    const { apis, status } = await spreadCluster(cluster, key);
    const ownerOf = (shard: number): string => status.shards[shard]!.owner!.node;
    const front = status.owner!.node;
    process.stdout.write(`# owners: ${status.shards.map((s) => `${s.shard}→${s.owner?.node}`).join(' ')}, front ${front}\n`);
    // The sender and the receiver on shards of two different nodes; the victim owns the receiver's shard
    // and is not the front (a front's loss is the node-wide failover, tested in failover.test.ts).
    const pair = [...Array(SHARDS).keys()].flatMap((a) => [...Array(SHARDS).keys()].map((b) => [a, b] as const)).find(([a, b]) => ownerOf(a) !== ownerOf(b) && ownerOf(b) !== front);
    assert.ok(pair !== undefined, `two shards on different nodes, one of them not the front's: ${JSON.stringify(status.shards)}`);
    const [senderShard, receiverShard] = pair;
    const victimName = ownerOf(receiverShard);
    const victim = cluster.nodes.findIndex((n) => n.name === victimName);
    const survivors = [0, 1, 2].filter((i) => i !== victim);
    const sender = await customerOn(apis[0]!, senderShard);
    assert.equal((await retried(apis[1]!, 'PATCH', `/v1/customers/${sender}`, { tier: 'tier_3' })).status, 200);
    const funding = await retried(apis[2]!, 'POST', '/v1/payments', { customer_id: sender, amount_minor: 500_000_000, currency: 'NGN', method: 'bank_transfer' });
    assert.equal(funding.status, 201, JSON.stringify(funding.body));
    assert.equal((await retried(apis[0]!, 'POST', `/v1/test_helpers/payments/${funding.body.data.id}/settle`)).status, 200);
    const receiver = await customerOn(apis[1]!, receiverShard);
    const wallet = (await retried(apis[2]!, 'GET', `/v1/customers/${receiver}`)).body.data.wallets[0].id as string;
    const b = await retried(apis[0]!, 'POST', '/v1/beneficiaries', { customer_id: sender, type: 'wallet', account_number: wallet, currency: 'NGN' });
    assert.equal(b.status, 201, JSON.stringify(b.body));
    // Payers: one on the victim's shard, one on a shard it does not own.
    const steadyShard = [...Array(SHARDS).keys()].find((s) => ownerOf(s) !== victimName)!;
    const payers = [await customerOn(apis[2]!, receiverShard), await customerOn(apis[0]!, steadyShard)];
    const f: Fixture = { sender: { id: sender }, beneficiary: b.body.data.id, payers };

    const acked: Acked[] = [];
    const errors: string[] = [];
    let alive = [0, 1, 2];
    let running = true;
    const loading = load(() => alive.map((i) => apis[i]!), f, () => running, acked, errors);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const ackedBefore = acked.length;
    assert.ok(ackedBefore > 20, `load before the kill: ${ackedBefore} acknowledged, errors ${errors.slice(0, 3).join('; ')}`);
    for (const path of ['/v1/payments', '/v1/transfers', '/v1/services/orders']) assert.ok(acked.some((a) => a.path === path), `${path} acknowledged before the kill`);

    // A probe on a shard the victim does not own: it must answer 201 all through the move.
    const steadyFailures: string[] = [];
    let steadyOk = 0;
    let probing = true;
    const probe = (async () => {
      for (let i = 0; probing; i += 1) {
        const r = await apis[survivors[i % 2]!]!('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: payers[1], amount_minor: 10_000, currency: 'NGN', method: 'bank_transfer' } }).catch((e: Error) => ({ status: 0, body: e.message }));
        if (r.status === 201) steadyOk += 1;
        else steadyFailures.push(`${r.status} ${JSON.stringify(r.body).slice(0, 160)}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    alive = survivors;
    const killedAt = await killNode(cluster, victim);
    // Writes to the victim's shard succeed again through a survivor within 15 s.
    const recoveredMs = await writesAgain(apis[survivors[0]!]!, payers[0]!, killedAt);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    running = false;
    probing = false;
    await loading;
    await probe;
    process.stdout.write(`# acknowledged ${acked.length} (${ackedBefore} before the kill); shard ${receiverShard} writes again after ${recoveredMs} ms; the steady shard answered ${steadyOk} probes, failures ${steadyFailures.length}\n`);
    assert.ok(recoveredMs >= 0 && recoveredMs <= 15_000, `writes to the moved shard succeed again ${recoveredMs} ms after the kill`);
    assert.deepEqual(steadyFailures, [], 'a shard the killed node did not own answers throughout');
    assert.ok(steadyOk > 10, `the steady shard answered ${steadyOk} probes`);
    for (const error of errors) assert.match(error, /^(503 |fetch: )/);
    const after = await spread(cluster, survivors[0]!, 1, 20_000);
    assert.ok(after.shards.every((s) => s.owner !== null && s.owner.node !== victimName), `the victim's shards moved: ${JSON.stringify(after.shards)}`);
    await replayAll(apis[survivors[0]!]!, acked);
    await replayAll(apis[survivors[1]!]!, acked.slice(0, 30));
    // Every acknowledged transfer reaches the receiver's wallet (the credit crossed nodes, and the move).
    const transfers = acked.filter((a) => a.path === '/v1/transfers').length;
    let balance = -1;
    for (let i = 0; i < 60; i += 1) {
      const w = await retried(apis[survivors[1]!]!, 'GET', `/v1/wallets/${wallet}`);
      balance = w.body.data.available_minor as number;
      if (balance >= transfers * 100) break;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    assert.ok(balance >= transfers * 100, `the receiver holds every acknowledged transfer (${transfers}): ${balance}`);
    await verifyAll(cluster, survivors);
  }));

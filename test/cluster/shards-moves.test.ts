// Per-shard ownership's moves over 3 nats-servers and 3 kobo nodes on 127.0.0.1, seen over HTTP: a request
// for a shard whose holder was just killed (503, the error envelope, Retry-After: 1, then the same key
// succeeds), the loss of a shard stream's nats leader under load, a node's SIGTERM (its shards handed
// to the others), and a node joining with an empty data dir. Every process is killed by PID when a test ends.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey } from '../helpers/server.ts';
import { withCluster } from '../helpers/cluster.ts';
import { natsServerBinary } from '../helpers/nats.ts';
import { fixture, load, replayAll, type Acked } from '../helpers/cluster-load.ts';
import { until } from '../helpers/wait.ts';
import { answering, customerOn, killNode, loadAndLeaderOf, retried, shardOf, shardOffTheFront, spread, spreadCluster, SPREAD_ENV, statusOf, verifyAll, writesAgain } from '../helpers/cluster-shards.ts';
import { SHARD_MOVING_MESSAGE } from '../../src/errors.ts';
import { connectJetStream, streamOf } from '../../src/cluster/streams.ts';

const key = secretKey();
const keys = [`${key}@cluster`];
const skip = natsServerBinary() !== null ? false : 'nats-server is not installed (apt-get install nats-server)';

test('cluster, per-shard ownership: POST /v1/payments for a shard whose holder was just killed → 503 UNAVAILABLE in the error envelope with Retry-After: 1; the same Idempotency-Key succeeds once the shard has moved, and replays the same', { skip, timeout: 240_000 }, () =>
  withCluster({ keys, env: SPREAD_ENV }, async (cluster) => {
    const { apis, status } = await spreadCluster(cluster, key);
    const { shard, holder, others } = shardOffTheFront(cluster, status);
    const via = apis[others[0]!]!;
    const payer = await customerOn(via, shard);
    const body = { customer_id: payer, amount_minor: 12_345, currency: 'NGN', method: 'bank_transfer' };
    const before = await retried(via, 'POST', '/v1/payments', body);
    assert.equal(before.status, 201, JSON.stringify(before.body));

    const killedAt = await killNode(cluster, holder);
    const idempotencyKey = idem();
    const moving = await via('POST', '/v1/payments', { idempotencyKey, body });
    assert.equal(moving.status, 503, `right after the kill: ${moving.status} ${JSON.stringify(moving.body)}`);
    assert.equal(moving.headers.get('retry-after'), '1');
    assert.deepEqual(Object.keys(moving.body), ['error']);
    assert.deepEqual(Object.keys(moving.body.error).sort(), ['code', 'message', 'request_id']);
    assert.equal(moving.body.error.code, 'UNAVAILABLE');
    assert.equal(moving.body.error.message, SHARD_MOVING_MESSAGE);
    assert.equal(moving.body.error.request_id, moving.headers.get('x-request-id'));

    let answered = moving;
    let unavailable = 1;
    while (answered.status === 503 && Date.now() - killedAt < 30_000) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      answered = await via('POST', '/v1/payments', { idempotencyKey, body });
      if (answered.status === 503) {
        unavailable += 1;
        assert.equal(answered.headers.get('retry-after'), '1');
        assert.equal(answered.body.error.code, 'UNAVAILABLE');
      }
    }
    const movedMs = Date.now() - killedAt;
    process.stdout.write(`# shard ${shard}: ${unavailable} answers 503 with Retry-After: 1, then 201 ${movedMs} ms after the kill\n`);
    assert.equal(answered.status, 201, `once the shard moved: ${JSON.stringify(answered.body)}`);
    assert.ok(movedMs <= 15_000, `the shard serves again ${movedMs} ms after the kill`);
    const replay = await apis[others[1]!]!('POST', '/v1/payments', { idempotencyKey, body });
    assert.equal(replay.status, 201);
    assert.deepEqual(replay.body, answered.body);
    const read = await via('GET', `/v1/payments/${answered.body.data.id}`);
    assert.equal(read.status, 200, JSON.stringify(read.body));
    assert.equal(read.body.data.id, answered.body.data.id);
    await verifyAll(cluster, others);
  }));

test('cluster, per-shard ownership: kill -9 of the nats-server leading the busiest shard\'s stream under load through every node → writes to that shard resume, no shard moves, every acknowledged request replays the same, verify clean', { skip, timeout: 240_000 }, () =>
  withCluster({ keys, env: SPREAD_ENV }, async (cluster) => {
    const { apis, status: before } = await spreadCluster(cluster, key);
    const f = await fixture(apis[1]!);
    // The sender's shard takes every transfer and order of the load: the busiest stream.
    const busy = shardOf(f.sender.id);
    const { acked, errors, leader, victim, stop } = await loadAndLeaderOf(cluster, apis, f, streamOf(busy), 'kobo-test-stream-leader');
    assert.ok(victim >= 0, `the stream of shard ${busy} has a leader (${String(leader)})`);
    const ackedBefore = acked.length;
    const killedAt = Date.now();
    await cluster.nats.kill(victim);
    const resumedMs = await writesAgain(apis[0]!, f.sender.id, killedAt, 30_000).catch(() => -1);
    await new Promise((resolve) => setTimeout(resolve, 12_000));
    await stop();
    const afterKill = acked.slice(ackedBefore);
    const slowest = Math.max(...afterKill.map((a) => a.ms));
    const transfersAfter = afterKill.filter((a) => a.path === '/v1/transfers').length;
    const remade = cluster.nodes.reduce((n, node) => n + (node.server.output().match(/while the stream holds more; consuming again/g) ?? []).length, 0);
    process.stdout.write(`# killed ${leader} (leader of shard ${busy}'s stream); followers' consumers made again after a silence: ${remade}; acknowledged ${acked.length} (${ackedBefore} before, ${transfersAfter} transfers after), a write to shard ${busy} again ${resumedMs} ms after, slowest answer after the kill ${slowest} ms, errors ${errors.length}: ${errors.slice(0, 3).join('; ')}\n`);
    assert.ok(resumedMs >= 0, `writes to shard ${busy} resume`);
    assert.ok(transfersAfter > 10, `transfers on shard ${busy} acknowledged after the kill: ${transfersAfter}`);
    assert.deepEqual(errors, [], 'no request failed');
    const live = cluster.nats.urls.filter((_, i) => i !== victim).join(',');
    const after = statusOf(cluster, 0, live);
    assert.deepEqual(after.shards.map((s) => s.owner?.node), before.shards.map((s) => s.owner?.node), 'no shard moved');
    await replayAll(apis[2]!, acked);
    await verifyAll(cluster, [0, 1, 2], live);
  }));

test('cluster, per-shard ownership: SIGTERM of a node holding a shard under load → it drains and hands the shard back, another node serves it well within the TTL with only 503s meanwhile, every acknowledged request replays the same, verify clean', { skip, timeout: 240_000 }, () =>
  withCluster({ keys, env: SPREAD_ENV }, async (cluster) => {
    const { apis, status } = await spreadCluster(cluster, key);
    const { shard, holder, others } = shardOffTheFront(cluster, status);
    const f = await fixture(apis[others[0]!]!);
    f.payers = [await customerOn(apis[others[0]!]!, shard), await customerOn(apis[others[1]!]!, shard)];
    const acked: Acked[] = [];
    const errors: string[] = [];
    let running = true;
    const loading = load(() => others.map((i) => apis[i]!), f, () => running, acked, errors);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const ackedBefore = acked.length;
    const stoppedAt = Date.now();
    await cluster.nodes[holder]!.server.stop();
    const stoppedMs = Date.now() - stoppedAt;
    assert.equal(cluster.nodes[holder]!.server.child.exitCode, 0, 'the node stops cleanly');
    const movedMs = await writesAgain(apis[others[0]!]!, f.payers[0]!, stoppedAt, 20_000);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    running = false;
    await loading;
    const unavailable = errors.filter((e) => e.startsWith('503 ')).length;
    process.stdout.write(`# acknowledged ${acked.length} (${ackedBefore} before); the node stopped in ${stoppedMs} ms, shard ${shard} wrote again ${movedMs} ms after the SIGTERM; ${unavailable} answers 503 meanwhile, other errors ${errors.length - unavailable}\n`);
    // The lease TTL is 8 s: a move that waited for it would take longer.
    assert.ok(movedMs < 7_000, `shard ${shard} serves again ${movedMs} ms after the SIGTERM`);
    for (const error of errors) assert.match(error, /^503 /);
    const after = await spread(cluster, others[0]!, 2, 20_000);
    assert.ok(after.shards.every((s) => s.owner!.node !== cluster.nodes[holder]!.name), `every shard off the stopped node: ${JSON.stringify(after.shards)}`);
    await replayAll(apis[others[1]!]!, acked);
    await verifyAll(cluster, others);
  }));

test('cluster, per-shard ownership: a node joining with an empty data dir after the streams were purged → it restores the shards\' images, catches up, takes its share of the shards, and serves every earlier payment and replay the same; verify clean', { skip, timeout: 300_000 }, () =>
  withCluster({ keys, size: 2, env: { ...SPREAD_ENV, KOBO_CLUSTER_IMAGE_INTERVAL_SECONDS: '2', KOBO_CLUSTER_COPY_IMAGE_SECONDS: '2' } }, async (cluster) => {
    const apis = cluster.nodes.map((n) => client(n.server.baseUrl, key));
    await spread(cluster, 0, 2, 60_000);
    await answering(apis);
    const f = await fixture(apis[1]!);
    const acked: Acked[] = [];
    const errors: string[] = [];
    let running = true;
    const loading = load(() => apis, f, () => running, acked, errors, 4);
    // Every stream the load writes is purged below its older kept image, past its first rows (not only the
    // epoch markers before them): a copy starting empty cannot continue from it.
    const { nc, jsm } = await connectJetStream(cluster.nats.urls, 'kobo-test-join');
    const written = [...new Set([shardOf(f.sender.id), ...f.payers.map(shardOf)])];
    await until(async () => Promise.all(written.map(async (s) => (await jsm.streams.info(streamOf(s))).state.first_seq)), (firsts) => firsts.every((seq) => seq > 10), `the streams of shards ${written.join(',')} purged`, 90_000);
    await nc.close();
    const fresh = await cluster.addNode();
    const newcomer = cluster.nodes.length - 1;
    const api = client(fresh.server.baseUrl, key);
    apis.push(api);
    const joined = await spread(cluster, newcomer, 3, 60_000);
    const mine = joined.shards.filter((s) => s.owner!.node === fresh.name).map((s) => s.shard);
    const restored = fresh.server.output().match(/restored image shard-\d+-image-/g) ?? [];
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    running = false;
    await loading;
    process.stdout.write(`# acknowledged ${acked.length}; purged streams ${written.join(',')}; the newcomer restored ${restored.length} image(s) and holds shard(s) ${mine.join(',')}\n`);
    assert.ok(restored.length >= written.length, `the newcomer restored an image of each purged stream: ${restored.join(', ')}`);
    assert.equal(mine.length, 1, 'the newcomer took its share');
    for (const error of errors) assert.match(error, /^(503 |fetch: )/);
    await answering([api]);
    for (const a of acked.filter((x) => x.path === '/v1/payments')) {
      const read = await retried(api, 'GET', `/v1/payments/${(a.reply as { data: { id: string } }).data.id}`);
      assert.equal(read.status, 200, JSON.stringify(read.body));
    }
    await replayAll(api, acked);
    await verifyAll(cluster, [newcomer]);
  }));

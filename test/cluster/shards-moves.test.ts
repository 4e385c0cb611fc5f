// Per-shard ownership's moves over 3 nats-servers and 3 kobo nodes on 127.0.0.1, seen over HTTP: a request
// for a shard whose holder was just killed (503, the error envelope, Retry-After: 1, then the same key
// succeeds), the loss of a shard stream's nats leader under load, a node's SIGTERM (its shards handed
// to the others), and a node joining with an empty data dir. Every process is killed by PID when a test ends.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey } from '../helpers/server.ts';
import { withCluster } from '../helpers/cluster.ts';
import { natsServerBinary } from '../helpers/nats.ts';
import { answering, customerOn, killNode, retried, shardOffTheFront, spread, SPREAD_ENV, verifyAll } from '../helpers/cluster-shards.ts';
import { SHARD_MOVING_MESSAGE } from '../../src/errors.ts';

const key = secretKey();
const keys = [`${key}@cluster`];
const skip = natsServerBinary() !== null ? false : 'nats-server is not installed (apt-get install nats-server)';

test('cluster, per-shard ownership: POST /v1/payments for a shard whose holder was just killed → 503 UNAVAILABLE in the error envelope with Retry-After: 1; the same Idempotency-Key succeeds once the shard has moved, and replays the same', { skip, timeout: 240_000 }, () =>
  withCluster({ keys, env: SPREAD_ENV }, async (cluster) => {
    const apis = cluster.nodes.map((n) => client(n.server.baseUrl, key));
    const status = await spread(cluster, 0, 3, 60_000);
    await answering(apis);
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
    verifyAll(cluster, others);
  }));

// Cluster mode over 3 nats-servers and 3 kobo nodes on 127.0.0.1: the rows of control.db and
// webhooks.db (API keys, sandbox clocks, webhook subscriptions, front-idempotency records) made through
// a follower survive a kill -9 of the owner; the new owner answers for them as the old one did.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey, uniqueEmail, uniquePhone } from '../helpers/server.ts';
import { NODE_WIDE_ENV, withCluster } from '../helpers/cluster.ts';
import { natsServerBinary } from '../helpers/nats.ts';
import { startReceiver } from '../helpers/receiver.ts';
import { verifyWebhook } from '../../src/webhooks/verify-webhook.ts';
import { kobo } from '../helpers/cli.ts';

const key = secretKey();
const keys = [`${key}@cluster`];
const skip = natsServerBinary() !== null ? false : 'nats-server is not installed (apt-get install nats-server)';

test('cluster: a key created and one revoked (and one made by `kobo keys create` on the owner; refused on a follower), a webhook subscription and a sandbox clock advance made through a follower, then kill -9 of the owner → the new owner authenticates the key and refuses the revoked one, lists the subscription and signs with its secret, reports the clock, and replays each front-idempotency POST with the same body', { skip, timeout: 180_000 }, async () => {
  const receiver = await startReceiver();
  try {
    await withCluster({ keys, env: NODE_WIDE_ENV }, async (cluster) => {
      const first = await cluster.owner();
      const via = client(cluster.nodes[(first + 1) % 3]!.server.baseUrl, key);
      const direct = client(cluster.nodes[first]!.server.baseUrl, key);

      const keyIdem = idem();
      const created = await via('POST', '/v1/keys', { idempotencyKey: keyIdem, body: { label: 'replicated' } });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const newSecret: string = created.body.data.secret;
      const keyReplay = await via('POST', '/v1/keys', { idempotencyKey: keyIdem, body: { label: 'replicated' } });
      assert.equal(keyReplay.status, 201);
      assert.equal(keyReplay.body.data.secret, undefined, 'a replay never shows the secret');
      // One made on the owner itself, revoked through the follower.
      const doomed = await direct('POST', '/v1/keys', { body: { label: 'doomed' } });
      assert.equal(doomed.status, 201);
      assert.equal((await via('POST', `/v1/keys/${doomed.body.data.id}/revoke`)).status, 200);

      const subIdem = idem();
      const subBody = { url: receiver.url, events: ['payment.completed'] };
      const sub = await via('POST', '/v1/webhooks/subscriptions', { idempotencyKey: subIdem, body: subBody });
      assert.equal(sub.status, 201, JSON.stringify(sub.body));
      const subSecret: string = sub.body.data.secret;
      assert.equal((await via('POST', `/v1/webhooks/subscriptions/${sub.body.data.id}/enable`)).status, 200);

      const clockIdem = idem();
      const advanced = await via('POST', '/v1/test_helpers/clock/advance', { idempotencyKey: clockIdem, body: { seconds: 7_200 } });
      assert.equal(advanced.status, 200, JSON.stringify(advanced.body));
      assert.equal(advanced.body.data.offset_seconds, 7_200);

      // The kobo CLI: refused on a follower (it names the owner), replicated on the owner.
      const onFollower = kobo(cluster.nodes[(first + 1) % 3]!.server.dataDir, 'keys', 'create', '--account', 'cluster', '--label', 'cli');
      assert.notEqual(onFollower.status, 0);
      assert.match(onFollower.stderr, new RegExp(`run the command on node${first}, the node that owns the cluster`));
      const onOwner = kobo(cluster.nodes[first]!.server.dataDir, 'keys', 'create', '--account', 'cluster', '--label', 'cli');
      assert.equal(onOwner.status, 0, onOwner.stderr);
      const cliSecret = /secret \(shown once\): (\S+)/.exec(onOwner.stdout)?.[1];
      assert.ok(cliSecret !== undefined, onOwner.stdout);

      const serving = cluster.nodes[first]!.servingPid();
      await cluster.nodes[first]!.server.kill();
      if (serving !== null) for (let i = 0; i < 50 && isAlive(serving); i += 1) await new Promise((resolve) => setTimeout(resolve, 100));
      const next = await cluster.owner(30_000, first);
      const api = client(cluster.nodes[next]!.server.baseUrl, key);

      // The key made before the kill authenticates on the new owner; the revoked one does not.
      const self = await client(cluster.nodes[next]!.server.baseUrl, newSecret)('GET', '/v1/keys/self');
      assert.equal(self.status, 200, JSON.stringify(self.body));
      assert.equal(self.body.data.id, created.body.data.id);
      assert.equal((await client(cluster.nodes[next]!.server.baseUrl, cliSecret)('GET', '/v1/keys/self')).status, 200, 'the key the CLI made on the owner');
      const revoked = await client(cluster.nodes[next]!.server.baseUrl, doomed.body.data.secret)('GET', '/v1/keys/self');
      assert.equal(revoked.status, 401);
      const listed = (await api('GET', '/v1/keys')).body.data as Array<{ id: string; status: string }>;
      assert.equal(listed.find((k) => k.id === doomed.body.data.id)?.status, 'revoked');

      // Replays of the front-idempotency POSTs: the same status and body.
      const keyAgain = await api('POST', '/v1/keys', { idempotencyKey: keyIdem, body: { label: 'replicated' } });
      assert.equal(keyAgain.status, 201);
      assert.deepEqual(keyAgain.body, keyReplay.body);
      const clockAgain = await api('POST', '/v1/test_helpers/clock/advance', { idempotencyKey: clockIdem, body: { seconds: 7_200 } });
      assert.equal(clockAgain.status, 200);
      assert.deepEqual(clockAgain.body, advanced.body);
      const subAgain = await api('POST', '/v1/webhooks/subscriptions', { idempotencyKey: subIdem, body: subBody });
      assert.equal(subAgain.status, 201);
      assert.equal(subAgain.body.data.id, sub.body.data.id);

      // The clock is still advanced (the replay moved nothing), and the subscription is listed.
      const clock = await api('GET', '/v1/test_helpers/clock');
      assert.equal(clock.body.data.offset_seconds, 7_200);
      const subs = (await api('GET', '/v1/webhooks/subscriptions')).body.data as Array<{ id: string; url: string; status: string }>;
      assert.deepEqual(subs.map((s) => [s.id, s.url, s.status]), [[sub.body.data.id, receiver.url, 'active']]);

      // It still signs with the secret given at its creation.
      const c = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: 'Hook', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
      assert.equal(c.status, 201, JSON.stringify(c.body));
      const p = await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: c.body.data.id, amount_minor: 100_000, currency: 'NGN', method: 'bank_transfer' } });
      assert.equal(p.status, 201, JSON.stringify(p.body));
      assert.equal((await api('POST', `/v1/test_helpers/payments/${p.body.data.id}/settle`)).status, 200);
      const [got] = await receiver.waitFor(1, 15_000);
      assert.ok(got, 'delivered');
      assert.equal(got.body.event_type, 'payment.completed');
      assert.deepEqual(verifyWebhook(subSecret, got.raw, got.headers), { ok: true });
      const status = kobo(cluster.nodes[next]!.server.dataDir, 'cluster', 'status', '--nats', cluster.nats.urls.join(','));
      assert.equal(status.status, 0, status.stderr);
      assert.match(status.stdout, /^control rows: last seq \d+, \d+ messages, \d+ bytes, leader \S+; lag /m);
    });
  } finally {
    await receiver.close();
  }
});

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

// kill -9 between the commit of an event and its delivery: after restart the event is still delivered
// (at least once), with the same event_key, and the delivery is recorded as succeeded.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey, startServer, uniqueEmail, uniquePhone } from '../helpers/server.ts';
import { startReceiver } from '../helpers/receiver.ts';
import { verifyWebhook } from '../../src/webhooks/verify-webhook.ts';

test('crash: kill -9 while a delivery is in flight → delivered after restart, same event_key', { timeout: 60_000 }, async () => {
  const key = secretKey();
  const keys = [`${key}@hookcrash`];
  const receiver = await startReceiver();
  receiver.behave({ status: 200, delayMs: 3_000 }); // the first attempt hangs until the server is dead
  let server = await startServer({ keys, env: { KOBO_WEBHOOK_TIMEOUT_MS: '8000' } });
  let api = client(server.baseUrl, key);
  try {
    const sub = (await api('POST', '/v1/webhooks/subscriptions', { body: { url: receiver.url, events: ['payment.completed'] } })).body.data;
    const c = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: 'Crash Hook', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
    const p = await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: c.body.data.id, amount_minor: 100_000, currency: 'NGN', method: 'bank_transfer' } });
    assert.equal((await api('POST', `/v1/test_helpers/payments/${p.body.data.id}/settle`)).status, 200);
    await receiver.waitFor(1);
    assert.equal(receiver.received.length, 1, 'the first attempt reached the receiver');
    await server.kill();

    receiver.behave({ status: 200 });
    server = await startServer({ keys, dataDir: server.dataDir });
    api = client(server.baseUrl, key);
    const got = await receiver.waitFor(2, 10_000);
    assert.equal(got.length, 2, 'delivered again after the restart');
    assert.equal(got[1]!.body.event_key, `payment.completed:${p.body.data.transaction_id}`);
    assert.equal(got[1]!.body.event_key, got[0]!.body.event_key);
    assert.deepEqual(verifyWebhook(sub.secret, got[1]!.raw, got[1]!.headers), { ok: true });
    const deadline = Date.now() + 5_000;
    let status = '';
    while (Date.now() < deadline && status !== 'succeeded') {
      status = (await api('GET', '/v1/webhooks/deliveries')).body.data[0]?.status;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.equal(status, 'succeeded');
  } finally {
    await server.stop();
    await receiver.close();
  }
});

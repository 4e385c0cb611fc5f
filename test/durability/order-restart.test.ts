// A restart in the middle of fulfilment resumes correctly: kill -9 while a wallet-paid order is
// fulfilling; after restart the rail is asked about the same purchase (same provider_reference), the
// order completes, the wallet is debited once and `kobo verify` passes. No order is lost.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey, startServer, uniqueEmail, type TestServer } from '../helpers/server.ts';
import { kobo } from '../helpers/cli.ts';

test('crash: kill -9 during fulfilment → same purchase completed after restart, no double debit', { timeout: 90_000 }, async () => {
  const key = secretKey();
  const keys = [`${key}@orders-crash`];
  let server: TestServer = await startServer({ keys, env: { KOBO_RAIL_LATENCY_MS: '1500' } });
  let api = client(server.baseUrl, key);
  const c = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: 'Restart', email: uniqueEmail(), phone: '+2348031112233', country_code: 'NG' } });
  const customerId = c.body.data.id as string;
  const walletId = c.body.data.wallets[0].id as string;
  const p = await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: customerId, amount_minor: 1_000_000, currency: 'NGN', method: 'bank_transfer' } });
  assert.equal((await api('POST', `/v1/test_helpers/payments/${p.body.data.id}/settle`)).status, 200);
  const balance = (await api('GET', `/v1/wallets/${walletId}`)).body.data.balance_minor as number;
  const orderKey = idem('order');
  const body = { customer_id: customerId, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 40_000, currency: 'NGN', payment_method: 'wallet', phone: '+2348037654321' };
  const created = await api('POST', '/v1/services/orders', { idempotencyKey: orderKey, body });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const id = created.body.data.order.id as string;
  const deadline = Date.now() + 10_000;
  let status = '';
  while (status !== 'fulfilling' && Date.now() < deadline) {
    status = (await api('GET', `/v1/services/orders/${id}/status`)).body.data.status;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.equal(status, 'fulfilling', 'dispatched, waiting for the rail');
  const reference = (await api('GET', `/v1/services/orders/${id}`)).body.data.provider_reference;
  await server.kill();
  const crashedVerify = kobo(server.dataDir, 'verify');
  assert.equal(crashedVerify.status, 0, crashedVerify.stderr);

  server = await startServer({ keys, dataDir: server.dataDir });
  api = client(server.baseUrl, key);
  try {
    let order: any = null;
    const until = Date.now() + 10_000;
    while (Date.now() < until) {
      order = (await api('GET', `/v1/services/orders/${id}`)).body.data;
      if (order.status === 'completed') break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.equal(order.status, 'completed');
    assert.equal(order.provider_reference, reference, 'the same purchase, not a second dispatch');
    assert.ok(order.fulfillment_snapshot !== null);
    const wallet = (await api('GET', `/v1/wallets/${walletId}`)).body.data;
    assert.equal(wallet.balance_minor, balance - order.customer_amount_minor, 'debited exactly once');
    assert.equal(wallet.held_minor, 0);
    const replay = await api('POST', '/v1/services/orders', { idempotencyKey: orderKey, body });
    assert.equal(replay.status, 201);
    assert.equal(replay.body.data.order.id, id, 'the key replays the same order');
  } finally {
    await server.stop();
  }
  const verify = kobo(server.dataDir, 'verify');
  assert.equal(verify.status, 0, verify.stderr);
});

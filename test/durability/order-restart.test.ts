// A restart in the middle of fulfilment resumes correctly: kill -9 while a wallet-paid order is
// fulfilling; after restart the rail is asked about the same purchase (same provider_reference), the
// order completes, the wallet is debited once and `kobo verify` passes. No order is lost.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey, startServer, uniqueEmail, type TestServer } from '../helpers/server.ts';
import { kobo } from '../helpers/cli.ts';

/** An NG customer whose wallet a settled bank transfer of NGN 10,000.00 funded. */
async function fundedCustomer(api: ReturnType<typeof client>, name: string, phone: string): Promise<{ customerId: string; walletId: string; balance: number }> {
  const c = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: { name, email: uniqueEmail(), phone, country_code: 'NG' } });
  assert.equal(c.status, 201, JSON.stringify(c.body));
  const customerId = c.body.data.id as string;
  const walletId = c.body.data.wallets[0].id as string;
  const p = await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: customerId, amount_minor: 1_000_000, currency: 'NGN', method: 'bank_transfer' } });
  assert.equal((await api('POST', `/v1/test_helpers/payments/${p.body.data.id}/settle`)).status, 200);
  return { customerId, walletId, balance: (await api('GET', `/v1/wallets/${walletId}`)).body.data.balance_minor as number };
}

test('crash: kill -9 during fulfilment → same purchase completed after restart, no double debit', { timeout: 90_000 }, async () => {
  const key = secretKey();
  const keys = [`${key}@orders-crash`];
  let server: TestServer = await startServer({ keys, env: { KOBO_RAIL_LATENCY_MS: '1500' } });
  let api = client(server.baseUrl, key);
  const { customerId, walletId, balance } = await fundedCustomer(api, 'Restart', '+2348031112233');
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

test('restart with wallet-paid orders held (manual_fulfilment …0004, unknown …0001): the holds stay held; failing one releases it, reconciling the other posts it once', { timeout: 90_000 }, async () => {
  const key = secretKey();
  const keys = [`${key}@orders-held`];
  const env = { KOBO_RAIL_LATENCY_MS: '100' };
  let server: TestServer = await startServer({ keys, env });
  let api = client(server.baseUrl, key);
  const { customerId, walletId, balance } = await fundedCustomer(api, 'Held', '+2348031112244');
  const place = async (phone: string) => {
    const created = await api('POST', '/v1/services/orders', { idempotencyKey: idem('order'), body: { customer_id: customerId, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 40_000, currency: 'NGN', payment_method: 'wallet', phone } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    return created.body.data.order as { id: string; customer_amount_minor: number; payment_transaction_id: string };
  };
  const statusOf = async (id: string) => (await api('GET', `/v1/services/orders/${id}/status`)).body.data.status as string;
  const waitFor = async (id: string, status: string) => {
    const deadline = Date.now() + 10_000;
    while ((await statusOf(id)) !== status) {
      assert.ok(Date.now() < deadline, `order ${id} never reached ${status}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  const manual = await place('+2348031230004');
  const timedOut = await place('+2348031230001');
  await waitFor(manual.id, 'manual_fulfilment');
  await waitFor(timedOut.id, 'unknown');
  const heldMinor = manual.customer_amount_minor + timedOut.customer_amount_minor;
  const before = (await api('GET', `/v1/wallets/${walletId}`)).body.data;
  assert.deepEqual([before.balance_minor, before.held_minor], [balance, heldMinor]);

  await server.kill();
  server = await startServer({ keys, env, dataDir: server.dataDir });
  api = client(server.baseUrl, key);
  try {
    // Past the rail latency: whatever the restart resumed has run.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const after = (await api('GET', `/v1/wallets/${walletId}`)).body.data;
    assert.deepEqual([after.balance_minor, after.held_minor], [balance, heldMinor], 'a restart posts no hold of an unfinished order');
    for (const order of [manual, timedOut]) {
      const txn = (await api('GET', `/v1/transactions/${order.payment_transaction_id}`)).body.data;
      assert.deepEqual([txn.status, txn.hold?.status], ['processing', 'held'], order.id);
    }
    assert.deepEqual([await statusOf(manual.id), await statusOf(timedOut.id)], ['manual_fulfilment', 'unknown']);

    const resolved = kobo(server.dataDir, 'orders', 'resolve', manual.id, '--outcome', 'failed');
    assert.equal(resolved.status, 0, resolved.stderr + resolved.stdout);
    const deadline = Date.now() + 10_000;
    while (!['failed', 'refunded'].includes(await statusOf(manual.id))) {
      assert.ok(Date.now() < deadline, 'the manual order never failed');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.equal((await api('POST', '/v1/test_helpers/clock/advance', { body: { seconds: 301 } })).status, 200);
    await waitFor(timedOut.id, 'completed');
    const end = (await api('GET', `/v1/wallets/${walletId}`)).body.data;
    assert.deepEqual([end.balance_minor, end.held_minor], [balance - timedOut.customer_amount_minor, 0], 'the failed order cost nothing, the delivered one was debited once');
  } finally {
    await server.stop();
  }
  const verify = kobo(server.dataDir, 'verify');
  assert.equal(verify.status, 0, verify.stderr);
});

// Sandbox collections the payer never pays fail with EXPIRED once their instructions expire (a day,
// on the account's sandbox clock), so abandoned payments do not stay in memory forever; paid, wallet
// and younger payments are untouched; EXPIRED is final (retry → 409), and it survives a restart.
import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey, startServer, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

const key = secretKey();
let server: TestServer;
let api: ReturnType<typeof client>;

before(async () => {
  server = await startServer({ keys: [`${key}@expiry`], env: { KOBO_COLLECTION_SWEEP_MS: '50', KOBO_RAIL_LATENCY_MS: '5' } });
  api = client(server.baseUrl, key);
});
after(async () => server.stop());

async function customer(): Promise<{ id: string }> {
  const r = await api('POST', '/v1/customers', { idempotencyKey: idem('c'), body: { name: 'Abandon', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body.data;
}

async function pay(customerId: string, method: string, amountMinor = 10_000): Promise<{ id: string; transaction_id: string; status: string }> {
  const r = await api('POST', '/v1/payments', { idempotencyKey: idem('p'), body: { customer_id: customerId, amount_minor: amountMinor, currency: 'NGN', method } });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body.data;
}

const paymentStatus = async (id: string): Promise<string> => (await api('GET', `/v1/payments/${id}`)).body.data.status;
const becomesFailed = (id: string): Promise<string> => waitFor(() => paymentStatus(id), (status) => status === 'failed', 5_000);

it('unpaid bank-transfer and card collections a day old → failed EXPIRED (final); paid ones and younger ones untouched', async () => {
  const c = await customer();
  const bank = await pay(c.id, 'bank_transfer');
  const card = await pay(c.id, 'card');
  const paid = await pay(c.id, 'bank_transfer');
  assert.equal((await api('POST', `/v1/test_helpers/payments/${paid.id}/settle`)).status, 200);
  // Just short of a day: nothing expires.
  assert.equal((await api('POST', '/v1/test_helpers/clock/advance', { body: { seconds: 86_000 } })).status, 200);
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.equal(await paymentStatus(bank.id), 'pending');
  const young = await pay(c.id, 'bank_transfer');
  assert.equal((await api('POST', '/v1/test_helpers/clock/advance', { body: { seconds: 401 } })).status, 200);
  await becomesFailed(bank.id);
  await becomesFailed(card.id);
  const txn = (await api('GET', `/v1/transactions/${bank.transaction_id}`)).body.data;
  assert.equal(txn.status, 'failed');
  assert.equal(txn.failure.code, 'EXPIRED');
  assert.equal(await paymentStatus(paid.id), 'completed', 'a paid collection is not touched');
  assert.equal(await paymentStatus(young.id), 'pending', 'created 401 s ago: not expired');
  const retried = await api('POST', `/v1/transactions/${bank.transaction_id}/retry`, { idempotencyKey: idem('r') });
  assert.equal(retried.status, 409, 'EXPIRED is final: the client creates a new payment');
  assert.equal(retried.body.error.code, 'CONFLICT');
  const settled = await api('POST', `/v1/test_helpers/payments/${bank.id}/settle`);
  assert.equal(settled.status, 409, 'an expired collection cannot be paid any more');
});

it('expired collections stay failed across a restart (the expiry is a WAL event)', async () => {
  const c = await customer();
  const bank = await pay(c.id, 'bank_transfer');
  assert.equal((await api('POST', '/v1/test_helpers/clock/advance', { body: { seconds: 86_401 } })).status, 200);
  await becomesFailed(bank.id);
  await server.kill();
  server = await startServer({ keys: [`${key}@expiry`], dataDir: server.dataDir, env: { KOBO_COLLECTION_SWEEP_MS: '86400000' } });
  api = client(server.baseUrl, key);
  assert.equal(await paymentStatus(bank.id), 'failed');
  assert.equal((await api('GET', `/v1/transactions/${bank.transaction_id}`)).body.data.failure.code, 'EXPIRED');
});

async function order(customerId: string, method: string): Promise<{ order: { id: string; transaction_id: string }; payment: { id: string } }> {
  const r = await api('POST', '/v1/services/orders', { idempotencyKey: idem('o'), body: { customer_id: customerId, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 10_000, currency: 'NGN', payment_method: method, phone: '+2348031234567' } });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body.data;
}

it('a service order\'s unpaid bank-transfer or card collection expires too: payment failed EXPIRED, order failed; across a restart', async () => {
  const c = await customer();
  assert.equal((await api('PATCH', `/v1/customers/${c.id}`, { body: { kyc_level: 2 } })).status, 200);
  const bank = await order(c.id, 'bank_transfer');
  const card = await order(c.id, 'card');
  const orderOf = async (id: string) => (await api('GET', `/v1/services/orders/${id}`)).body.data;
  assert.equal((await orderOf(bank.order.id)).status, 'awaiting_payment');
  // Restarted before the expiry: the order payments' expiry is rebuilt from the log and snapshot.
  await server.kill();
  server = await startServer({ keys: [`${key}@expiry`], dataDir: server.dataDir, env: { KOBO_COLLECTION_SWEEP_MS: '50', KOBO_RAIL_LATENCY_MS: '5' } });
  api = client(server.baseUrl, key);
  assert.equal((await api('POST', '/v1/test_helpers/clock/advance', { body: { seconds: 86_401 } })).status, 200);
  for (const placed of [bank, card]) {
    await becomesFailed(placed.payment.id);
    const o = await waitFor(() => orderOf(placed.order.id), (x) => x.status === 'failed', 5_000);
    assert.equal(o.status, 'failed');
    const txn = (await api('GET', `/v1/transactions/${o.payment_transaction_id}`)).body.data;
    assert.equal(txn.failure.code, 'EXPIRED');
    const settled = await api('POST', `/v1/test_helpers/payments/${placed.payment.id}/settle`);
    assert.equal(settled.status, 409, 'an expired order collection cannot be paid any more');
  }
});

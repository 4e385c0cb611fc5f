// Reconciliation runs on the account's sandbox clock: a payout or service order that timed out stays
// `unknown` until the clock passes the 5-minute requery delay, across a restart (graceful and kill -9),
// then resolves exactly once. Real server over HTTP; the clock moves via POST /v1/test_helpers/clock/advance.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey, startServer, tempDataDir, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';
import { until } from '../helpers/wait.ts';

const key = secretKey();
const dataDir = tempDataDir('requery');
let server: TestServer;
let api: ReturnType<typeof client>;

async function start(): Promise<void> {
  server = await startServer({ keys: [`${key}@requery`], dataDir });
  api = client(server.baseUrl, key);
}

before(start);
after(async () => server.stop());

async function funded(amountMinor: number): Promise<{ id: string; walletId: string }> {
  const c = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: 'Payer', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
  assert.equal(c.status, 201, JSON.stringify(c.body));
  const p = await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: c.body.data.id, amount_minor: amountMinor, currency: 'NGN', method: 'bank_transfer' } });
  assert.equal((await api('POST', `/v1/test_helpers/payments/${p.body.data.id}/settle`)).status, 200);
  return { id: c.body.data.id, walletId: c.body.data.wallets[0].id };
}

const advance = async (seconds: number): Promise<void> => {
  const r = await api('POST', '/v1/test_helpers/clock/advance', { body: { seconds } });
  assert.equal(r.status, 200, JSON.stringify(r.body));
};
const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const transferStatus = (id: string) => async () => (await api('GET', `/v1/transfers/${id}`)).body.data;
const orderStatus = (id: string) => async () => (await api('GET', `/v1/services/orders/${id}/status`)).body.data;

test('payout timeout (…9998): unknown through 4 min of sandbox clock and a restart; completed once the clock passes 5 min', async () => {
  const c = await funded(1_000_000);
  const b = await api('POST', '/v1/beneficiaries', { idempotencyKey: idem(), body: { customer_id: c.id, type: 'bank_account', bank_code: '058', account_number: '0123459998', currency: 'NGN' } });
  assert.equal(b.status, 201, JSON.stringify(b.body));
  const t = await api('POST', '/v1/transfers', { idempotencyKey: idem(), body: { customer_id: c.id, beneficiary_id: b.body.data.id, amount_minor: 100_000, currency: 'NGN' } });
  assert.equal(t.status, 201, JSON.stringify(t.body));
  await until(transferStatus(t.body.data.id), (d) => d.status === 'unknown', 'unknown');
  // 4 minutes: a slow restart below still leaves a minute of slack before the requery is due.
  await advance(240);
  await pause(500);
  assert.equal((await transferStatus(t.body.data.id)()).status, 'unknown', 'not yet due');
  await server.stop();
  await start();
  await pause(300);
  assert.equal((await transferStatus(t.body.data.id)()).status, 'unknown', 'a restart does not requery early');
  await advance(61);
  const done = await until(transferStatus(t.body.data.id), (d) => d.status === 'completed', 'completed');
  assert.equal(done.status, 'completed');
  const txn = (await api('GET', `/v1/transactions/${t.body.data.transaction_id}`)).body.data;
  assert.deepEqual(txn.status_history.map((h: { status: string }) => h.status), ['pending', 'processing', 'unknown', 'completed']);
  const wallet = (await api('GET', `/v1/wallets/${c.walletId}`)).body.data;
  assert.equal(wallet.held_minor, 0);
});

test('service order timeout (…0001): unknown until the clock passes 5 min, also after kill -9; reconciled delivered, debited once', async () => {
  const c = await funded(1_000_000);
  const before = (await api('GET', `/v1/wallets/${c.walletId}`)).body.data.balance_minor as number;
  const phone = `+234803${String(Date.now()).slice(-3)}0001`;
  const created = await api('POST', '/v1/services/orders', { idempotencyKey: idem(), body: { customer_id: c.id, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 20_000, currency: 'NGN', payment_method: 'wallet', phone } });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const o = created.body.data.order;
  await until(orderStatus(o.id), (d) => d.status === 'unknown', 'unknown');
  await pause(500);
  assert.equal((await orderStatus(o.id)()).status, 'unknown', 'real time alone does not requery');
  await server.kill();
  await start();
  await pause(300);
  assert.equal((await orderStatus(o.id)()).status, 'unknown');
  await advance(301);
  const done = await until(orderStatus(o.id), (d) => d.status === 'completed', 'completed');
  assert.ok(done.fulfillment_snapshot !== null);
  const wallet = (await api('GET', `/v1/wallets/${c.walletId}`)).body.data;
  assert.deepEqual([wallet.balance_minor, wallet.held_minor], [before - o.customer_amount_minor, 0]);
});

// Exchange over HTTP: quotes with spread and expiry, execution moving both wallets atomically,
// CONFLICT after expiry or reuse, INSUFFICIENT_FUNDS, unsupported pairs, idempotent replay.
import { before, after, test } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey, startServer, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';

const key = secretKey();
const otherKey = secretKey();
let server: TestServer;
let api: ReturnType<typeof client>;

before(async () => {
  server = await startServer({ keys: [`${key}@fx`, `${otherKey}@fx-other`] });
  api = client(server.baseUrl, key);
});
after(async () => server.stop());

async function fundedCustomer(amountMinor: number): Promise<{ id: string; walletId: string; balance: number }> {
  const c = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: 'Fx', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
  assert.equal(c.status, 201);
  const p = await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: c.body.data.id, amount_minor: amountMinor, currency: 'NGN', method: 'bank_transfer' } });
  assert.equal((await api('POST', `/v1/test_helpers/payments/${p.body.data.id}/settle`)).status, 200);
  return { id: c.body.data.id, walletId: c.body.data.wallets[0].id, balance: p.body.data.net_amount_minor };
}

test('exchange quote: NGN → USD → 201 with rate after spread, both amounts and expires_at', async () => {
  const c = await fundedCustomer(1_000_000);
  const q = await api('POST', '/v1/exchange/quotes', { body: { customer_id: c.id, from_currency: 'NGN', to_currency: 'USD', from_amount_minor: 154_525 } });
  assert.equal(q.status, 201, JSON.stringify(q.body));
  assert.equal(q.body.data.from_amount_minor, 154_525);
  assert.equal(q.body.data.to_amount_minor, 98, 'NGN 1,545.25 is USD 1.00 at mid; 1.5% spread and rounding down → 0.98');
  assert.ok(Date.parse(q.body.data.expires_at) > Date.now());
  assert.equal(q.body.data.spread_bps, 150);
});

test('exchange quote: unsupported pair, same currency, unknown currency → 400 VALIDATION', async () => {
  const c = await fundedCustomer(100_000);
  for (const body of [
    { customer_id: c.id, from_currency: 'NGN', to_currency: 'NGN', from_amount_minor: 100 },
    { customer_id: c.id, from_currency: 'NGN', to_currency: 'BRL', from_amount_minor: 100 },
    { customer_id: c.id, from_currency: 'NGN', to_currency: 'XYZ', from_amount_minor: 100 },
    { customer_id: c.id, from_currency: 'NGN', to_currency: 'USD', from_amount_minor: 1.5 },
    { customer_id: c.id, from_currency: 'NGN', to_currency: 'USD' },
  ]) {
    const r = await api('POST', '/v1/exchange/quotes', { body });
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.equal(r.body.error.code, 'VALIDATION');
  }
});

test('exchange: live quote → 201, from wallet debited, USD wallet opened and credited, txn completed', async () => {
  const c = await fundedCustomer(1_000_000);
  const q = (await api('POST', '/v1/exchange/quotes', { body: { customer_id: c.id, from_currency: 'NGN', to_currency: 'USD', from_amount_minor: 500_000 } })).body.data;
  const k = idem('fx');
  const ex = await api('POST', '/v1/exchange', { idempotencyKey: k, body: { quote_id: q.id } });
  assert.equal(ex.status, 201, JSON.stringify(ex.body));
  assert.equal(ex.body.data.from_amount_minor, 500_000);
  assert.equal(ex.body.data.to_amount_minor, q.to_amount_minor);
  assert.equal(ex.body.data.status, 'completed');
  const from = (await api('GET', `/v1/wallets/${c.walletId}`)).body.data;
  assert.equal(from.balance_minor, c.balance - 500_000);
  const to = (await api('GET', `/v1/wallets/${ex.body.data.to_wallet_id}`)).body.data;
  assert.equal(to.currency, 'USD');
  assert.equal(to.balance_minor, q.to_amount_minor);
  const txn = (await api('GET', `/v1/transactions/${ex.body.data.transaction_id}`)).body.data;
  assert.equal(txn.type, 'exchange');
  assert.deepEqual(txn.status_history.map((h: { status: string }) => h.status), ['pending', 'completed']);
  const customer = (await api('GET', `/v1/customers/${c.id}`)).body.data;
  assert.deepEqual(customer.wallets.map((w: { currency: string }) => w.currency).sort(), ['NGN', 'USD']);

  const replay = await api('POST', '/v1/exchange', { idempotencyKey: k, body: { quote_id: q.id } });
  assert.deepEqual(replay.body, ex.body, 'same key and body replay the first result');
  const reuse = await api('POST', '/v1/exchange', { idempotencyKey: idem('fx'), body: { quote_id: q.id } });
  assert.equal(reuse.status, 409);
  assert.equal(reuse.body.error.code, 'CONFLICT');
});

test('exchange: into JPY (exponent 0) and KWD (exponent 3) and all of it back out again → 201 each way, the foreign wallet left at 0', async () => {
  const c = await fundedCustomer(10_000_000);
  for (const currency of ['JPY', 'KWD']) {
    const into = (await api('POST', '/v1/exchange/quotes', { body: { customer_id: c.id, from_currency: 'NGN', to_currency: currency, from_amount_minor: 1_000_000 } })).body.data;
    const ex = await api('POST', '/v1/exchange', { idempotencyKey: idem('fx-in'), body: { quote_id: into.id } });
    assert.equal(ex.status, 201, JSON.stringify(ex.body));
    const held = (await api('GET', `/v1/wallets/${ex.body.data.to_wallet_id}`)).body.data;
    assert.deepEqual([held.currency, held.balance_minor], [currency, into.to_amount_minor]);
    assert.ok(held.balance_minor > 0, `${currency}: something to move out`);
    const back = await api('POST', '/v1/exchange/quotes', { body: { customer_id: c.id, from_currency: currency, to_currency: 'NGN', from_amount_minor: held.balance_minor } });
    assert.equal(back.status, 201, JSON.stringify(back.body));
    const out = await api('POST', '/v1/exchange', { idempotencyKey: idem('fx-out'), body: { quote_id: back.body.data.id } });
    assert.equal(out.status, 201, `${currency}: money exchanged in can leave again: ${JSON.stringify(out.body)}`);
    assert.equal((await api('GET', `/v1/wallets/${held.id}`)).body.data.balance_minor, 0);
  }
});

test('exchange: expired quote → 409 CONFLICT and no money moves', async () => {
  const c = await fundedCustomer(1_000_000);
  const q = (await api('POST', '/v1/exchange/quotes', { body: { customer_id: c.id, from_currency: 'NGN', to_currency: 'GBP', from_amount_minor: 100_000 } })).body.data;
  assert.equal((await api('POST', '/v1/test_helpers/clock/advance', { body: { seconds: 120 } })).status, 200);
  const r = await api('POST', '/v1/exchange', { idempotencyKey: idem(), body: { quote_id: q.id } });
  assert.equal(r.status, 409);
  assert.equal(r.body.error.code, 'CONFLICT');
  assert.equal((await api('GET', `/v1/wallets/${c.walletId}`)).body.data.balance_minor, c.balance);
});

test('exchange: source wallet short → 422 INSUFFICIENT_FUNDS; missing or malformed quote_id → 400', async () => {
  const c = await fundedCustomer(100_000);
  const q = (await api('POST', '/v1/exchange/quotes', { body: { customer_id: c.id, from_currency: 'NGN', to_currency: 'USD', from_amount_minor: 5_000_000 } })).body.data;
  const r = await api('POST', '/v1/exchange', { idempotencyKey: idem(), body: { quote_id: q.id } });
  assert.equal(r.status, 422);
  assert.equal(r.body.error.code, 'INSUFFICIENT_FUNDS');
  assert.equal((await api('POST', '/v1/exchange', { idempotencyKey: idem(), body: {} })).status, 400);
  assert.equal((await api('POST', '/v1/exchange', { idempotencyKey: idem(), body: { quote_id: 'nope' } })).status, 400);
  const missingKey = await api('POST', '/v1/exchange', { body: { quote_id: q.id } });
  assert.equal(missingKey.body.error.code, 'IDEMPOTENCY_KEY_REQUIRED');
});

test('exchange: another account executing my quote → 403 FORBIDDEN; unknown customer → 404', async () => {
  const c = await fundedCustomer(1_000_000);
  const q = (await api('POST', '/v1/exchange/quotes', { body: { customer_id: c.id, from_currency: 'NGN', to_currency: 'USD', from_amount_minor: 10_000 } })).body.data;
  const foreign = await api('POST', '/v1/exchange', { key: otherKey, idempotencyKey: idem(), body: { quote_id: q.id } });
  assert.equal(foreign.status, 403);
  assert.equal(foreign.body.error.code, 'FORBIDDEN');
  const foreignQuote = await api('POST', '/v1/exchange/quotes', { key: otherKey, body: { customer_id: c.id, from_currency: 'NGN', to_currency: 'USD', from_amount_minor: 100 } });
  assert.equal(foreignQuote.status, 403);
  const missing = await api('POST', '/v1/exchange/quotes', { body: { customer_id: '01ARZ3NDEKTSV4RRFFQ69G5FAV', from_currency: 'NGN', to_currency: 'USD', from_amount_minor: 100 } });
  assert.equal(missing.status, 404);
  assert.equal((await api('GET', `/v1/wallets/${c.walletId}`)).body.data.balance_minor, c.balance);
});

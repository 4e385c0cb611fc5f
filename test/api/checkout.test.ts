// Card payments through the sandbox hosted checkout page, and mobile-money collections.
import { before, after, test } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey, startServer, uniqueEmail, type TestServer } from '../helpers/server.ts';

const key = secretKey();
let server: TestServer;
let api: ReturnType<typeof client>;

before(async () => {
  // No expiry sweep during the run: what the page does with a collection past its expiry is its own check.
  server = await startServer({ keys: [`${key}@cards`], env: { KOBO_COLLECTION_SWEEP_MS: '86400000' } });
  api = client(server.baseUrl, key);
});
after(async () => server.stop());

async function customer(country: 'NG' | 'GH', phone: string): Promise<{ id: string; walletId: string }> {
  const c = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: 'Card Payer', email: uniqueEmail(), phone, country_code: country } });
  assert.equal(c.status, 201, JSON.stringify(c.body));
  return { id: c.body.data.id, walletId: c.body.data.wallets[0].id };
}

const ngPhone = (): string => `+23481${String(Math.floor(Math.random() * 1e8)).padStart(8, '0')}`;

async function page(method: 'GET' | 'POST', url: string): Promise<{ status: number; type: string; html: string }> {
  const r = await fetch(url, { method });
  return { status: r.status, type: r.headers.get('content-type') ?? '', html: await r.text() };
}

test('card: 201 pending with an absolute checkout_url; paying on the page completes it and credits the wallet net of fee', async () => {
  const c = await customer('NG', ngPhone());
  const p = await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: c.id, amount_minor: 200_000, currency: 'NGN', method: 'card' } });
  assert.equal(p.status, 201, JSON.stringify(p.body));
  assert.equal(p.body.data.status, 'pending');
  const url = p.body.data.provider.checkout_url as string;
  assert.ok(url.startsWith(`${server.baseUrl}/v1/checkout/${p.body.data.id}?token=`), url);
  const view = await page('GET', url);
  assert.equal(view.status, 200);
  assert.match(view.type, /text\/html/);
  assert.match(view.html, /Pay NGN 2000\.00/);
  const paid = await page('POST', url.replace('?token=', '/complete?token='));
  assert.equal(paid.status, 200);
  assert.match(paid.html, /Payment completed/);
  const after = (await api('GET', `/v1/payments/${p.body.data.id}`)).body.data;
  assert.equal(after.status, 'completed');
  assert.equal(after.fee_minor, 3_000, '1.5% card fee');
  assert.equal((await api('GET', `/v1/wallets/${c.walletId}`)).body.data.balance_minor, 197_000);
  const again = await page('POST', url.replace('?token=', '/complete?token='));
  assert.equal(again.status, 409, 'a closed checkout cannot pay twice');
});

test('card: declining on the page → failed PROVIDER_ERROR; retry reopens it and the page can then complete it', async () => {
  const c = await customer('NG', ngPhone());
  const p = (await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: c.id, amount_minor: 100_000, currency: 'NGN', method: 'card' } })).body.data;
  const url = p.provider.checkout_url as string;
  assert.match((await page('POST', url.replace('?token=', '/decline?token='))).html, /declined/);
  const txn = (await api('GET', `/v1/transactions/${p.transaction_id}`)).body.data;
  assert.deepEqual([txn.status, txn.failure.code, txn.failure.stage], ['failed', 'PROVIDER_ERROR', 'collection']);
  assert.equal((await api('POST', `/v1/transactions/${p.transaction_id}/retry`, { idempotencyKey: idem() })).status, 200);
  assert.equal((await page('POST', url.replace('?token=', '/complete?token='))).status, 200);
  assert.equal((await api('GET', `/v1/payments/${p.id}`)).body.data.status, 'completed');
});

test('card: a wrong or malformed token → 404 NOT_FOUND and nothing changes', async () => {
  const c = await customer('NG', ngPhone());
  const p = (await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: c.id, amount_minor: 100_000, currency: 'NGN', method: 'card' } })).body.data;
  const wrong = await page('POST', `${server.baseUrl}/v1/checkout/${p.id}/complete?token=${'0'.repeat(32)}`);
  assert.equal(wrong.status, 404);
  assert.equal((await page('GET', `${server.baseUrl}/v1/checkout/${p.id}?token=nope`)).status, 404);
  assert.equal((await page('GET', `${server.baseUrl}/v1/checkout/${p.id}`)).status, 400, 'token is required');
  assert.equal((await api('GET', `/v1/payments/${p.id}`)).body.data.status, 'pending');
});

test('mobile_money: GH customer → 201 pending with the prompt phone; the rail (settle helper) completes it', async () => {
  const phone = `+23324${String(Math.floor(Math.random() * 1e7)).padStart(7, '0')}`;
  const c = await customer('GH', phone);
  const p = await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: c.id, amount_minor: 10_000, currency: 'GHS', method: 'mobile_money' } });
  assert.equal(p.status, 201, JSON.stringify(p.body));
  assert.equal(p.body.data.provider.type, 'mobile_money');
  assert.equal(p.body.data.provider.instructions.phone, phone);
  assert.equal((await api('POST', `/v1/test_helpers/payments/${p.body.data.id}/settle`)).status, 200);
  const wallet = (await api('GET', `/v1/wallets/${c.walletId}`)).body.data;
  assert.equal(wallet.balance_minor, 10_000 - p.body.data.fee_minor);
});

// Last in the file: it moves this account's sandbox clock two days ahead.
test('card paid on the page after the sandbox clock moved ahead → completed on the account’s clock, never before it was created', async () => {
  assert.equal((await api('POST', '/v1/test_helpers/clock/advance', { body: { seconds: 2 * 86_400 } })).status, 200);
  const c = await customer('NG', ngPhone());
  const p = (await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: c.id, amount_minor: 200_000, currency: 'NGN', method: 'card' } })).body.data;
  const createdMs = Date.parse(p.created_at);
  assert.ok(createdMs > Date.now() + 86_400_000, 'created on the moved clock');
  const url = p.provider.checkout_url as string;
  assert.equal((await page('POST', url.replace('?token=', '/complete?token='))).status, 200);
  const paid = (await api('GET', `/v1/payments/${p.id}`)).body.data;
  assert.equal(paid.status, 'completed');
  assert.ok(Date.parse(paid.updated_at) >= createdMs, `updated ${paid.updated_at} is not before created ${p.created_at}`);
  const txn = (await api('GET', `/v1/transactions/${p.transaction_id}`)).body.data;
  const times = txn.status_history.map((h: { at: string }) => Date.parse(h.at));
  assert.deepEqual(times, [...times].sort((a: number, b: number) => a - b), 'the history runs forward');
  assert.ok(times.every((t: number) => t >= createdMs), JSON.stringify(txn.status_history));
});

test('card past its expires_at (on the account clock), before any sweep: the page can neither pay nor decline it (409), nor can the settle helper; nothing is credited', async () => {
  const c = await customer('NG', ngPhone());
  const p = (await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: c.id, amount_minor: 200_000, currency: 'NGN', method: 'card' } })).body.data;
  assert.equal(Date.parse(p.provider.expires_at) - Date.parse(p.created_at), 86_400_000, 'a card collection shows its expiry: a day');
  const bank = (await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: c.id, amount_minor: 200_000, currency: 'NGN', method: 'bank_transfer' } })).body.data;
  assert.equal((await api('POST', '/v1/test_helpers/clock/advance', { body: { seconds: 86_401 } })).status, 200);
  const url = p.provider.checkout_url as string;
  for (const action of ['complete', 'decline']) {
    const r = await page('POST', url.replace('?token=', `/${action}?token=`));
    assert.equal(r.status, 409, `${action}: ${r.html}`);
    assert.match(r.html, /expired/);
  }
  for (const id of [p.id, bank.id]) {
    const settled = await api('POST', `/v1/test_helpers/payments/${id}/settle`);
    assert.equal(settled.status, 409, JSON.stringify(settled.body));
    assert.match(settled.body.error.message, /expired at/);
  }
  assert.equal((await api('GET', `/v1/payments/${p.id}`)).body.data.status, 'pending', 'the sweep (not run here) is what fails it');
  assert.equal((await api('GET', `/v1/wallets/${c.walletId}`)).body.data.balance_minor, 0, 'nothing credited');
});

test('the checkout page cannot be framed, cached or leak its token through Referer', async () => {
  const c = await customer('NG', ngPhone());
  const p = (await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: c.id, amount_minor: 200_000, currency: 'NGN', method: 'card' } })).body.data;
  const r = await fetch(p.provider.checkout_url);
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('x-frame-options'), 'DENY');
  assert.match(r.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/);
  assert.equal(r.headers.get('referrer-policy'), 'no-referrer');
  assert.equal(r.headers.get('cache-control'), 'no-store');
});

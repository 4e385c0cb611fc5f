// Beneficiaries and transfers over HTTP: verification, holds of amount + fee, asynchronous payout
// outcomes (completed, failed, unknown → reconciled), PIN step-up, compliance, limits, cross-border quotes.
import { before, after, test } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey, startServer, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';

const key = secretKey();
const otherKey = secretKey();
let server: TestServer;
let slow: TestServer;
let api: ReturnType<typeof client>;
let slowApi: ReturnType<typeof client>;

before(async () => {
  [server, slow] = await Promise.all([
    startServer({ keys: [`${key}@payouts`, `${otherKey}@payouts-other`] }),
    startServer({ keys: [`${key}@payouts`], env: { KOBO_RAIL_LATENCY_MS: '60000' } }),
  ]);
  api = client(server.baseUrl, key);
  slowApi = client(slow.baseUrl, key);
});
after(async () => Promise.all([server.stop(), slow.stop()]));

type Api = ReturnType<typeof client>;

async function funded(on: Api, amountMinor: number): Promise<{ id: string; walletId: string; balance: number }> {
  const c = await on('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: 'Payer', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
  assert.equal(c.status, 201);
  let balance = 0;
  // One collection is capped by the tier's per-transaction limit (NGN 100,000.00 on tier_1).
  for (let left = amountMinor; left > 0; left -= 10_000_000) {
    const p = await on('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: c.body.data.id, amount_minor: Math.min(left, 10_000_000), currency: 'NGN', method: 'bank_transfer' } });
    assert.equal((await on('POST', `/v1/test_helpers/payments/${p.body.data.id}/settle`)).status, 200);
    balance += p.body.data.net_amount_minor as number;
  }
  return { id: c.body.data.id, walletId: c.body.data.wallets[0].id, balance };
}

async function beneficiary(on: Api, customerId: string, accountNumber = '0123456789'): Promise<string> {
  const r = await on('POST', '/v1/beneficiaries', { idempotencyKey: idem(), body: { customer_id: customerId, type: 'bank_account', bank_code: '058', account_number: accountNumber, currency: 'NGN' } });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body.data.id;
}

async function waitFor(on: Api, path: string, done: (data: any) => boolean): Promise<any> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const data = (await on('GET', path)).body.data;
    if (done(data) || Date.now() > deadline) return data;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

test('beneficiary: NG bank account → 201 with the rail-resolved account_name and bank name', async () => {
  const c = await funded(api, 100_000);
  const r = await api('POST', '/v1/beneficiaries', { idempotencyKey: idem(), body: { customer_id: c.id, type: 'bank_account', bank_code: '058', account_number: '0123456789', currency: 'NGN' } });
  assert.equal(r.status, 201);
  assert.equal(r.body.data.bank_name, 'Guaranty Trust Bank');
  assert.match(r.body.data.account_name, /^[A-Z][a-z]+ [A-Z][a-z]+$/);
  assert.equal((await api('GET', `/v1/beneficiaries/${r.body.data.id}`)).body.data.account_name, r.body.data.account_name);
});

test('beneficiary: 0000000000 → 422 VERIFICATION_FAILED; bad bank code, short account, missing fields → 400', async () => {
  const c = await funded(api, 100_000);
  const base = { customer_id: c.id, type: 'bank_account', currency: 'NGN' };
  const failed = await api('POST', '/v1/beneficiaries', { idempotencyKey: idem(), body: { ...base, bank_code: '044', account_number: '0000000000' } });
  assert.equal(failed.status, 422);
  assert.equal(failed.body.error.code, 'VERIFICATION_FAILED');
  for (const body of [{ ...base, bank_code: '999', account_number: '0123456789' }, { ...base, bank_code: '044', account_number: '12345' }, { ...base, account_number: '0123456789' }, { ...base, bank_code: '044' }]) {
    const r = await api('POST', '/v1/beneficiaries', { idempotencyKey: idem(), body });
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.equal(r.body.error.code, 'VALIDATION');
  }
});

test('beneficiary: GH mobile money (operator MTN, E.164 number) → 201', async () => {
  const c = await funded(api, 100_000);
  const r = await api('POST', '/v1/beneficiaries', { idempotencyKey: idem(), body: { customer_id: c.id, type: 'mobile_money', bank_code: 'MTN', account_number: '+233241234567', currency: 'GHS', country: 'GH' } });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  assert.equal(r.body.data.bank_name, 'MTN Mobile Money');
});

test('transfer: 201 pending with amount + fee held, then the payout rail completes it and posts the hold', async () => {
  const c = await funded(api, 1_000_000);
  const b = await beneficiary(api, c.id);
  const r = await api('POST', '/v1/transfers', { idempotencyKey: idem(), body: { customer_id: c.id, beneficiary_id: b, amount_minor: 250_000, currency: 'NGN', narration: 'rent' } });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  assert.equal(r.body.data.status, 'pending');
  const fee = r.body.data.fee_minor as number;
  assert.equal(fee, 1075);
  const done = await waitFor(api, `/v1/transfers/${r.body.data.id}`, (d) => d.status === 'completed');
  assert.equal(done.status, 'completed');
  assert.match(done.provider_reference, /^PAYOUT-/);
  const wallet = (await api('GET', `/v1/wallets/${c.walletId}`)).body.data;
  assert.equal(wallet.balance_minor, c.balance - 250_000 - fee);
  assert.equal(wallet.held_minor, 0);
  const txn = (await api('GET', `/v1/transactions/${r.body.data.transaction_id}`)).body.data;
  assert.deepEqual(txn.status_history.map((h: { status: string }) => h.status), ['pending', 'processing', 'completed']);
  assert.equal(txn.hold.status, 'posted');
  assert.equal(txn.transfer_id, r.body.data.id);
});

test('transfer: pending transfer holds funds; cancel releases them (slow rail)', async () => {
  const c = await funded(slowApi, 1_000_000);
  const b = await beneficiary(slowApi, c.id);
  const r = await slowApi('POST', '/v1/transfers', { idempotencyKey: idem(), body: { customer_id: c.id, beneficiary_id: b, amount_minor: 300_000, currency: 'NGN' } });
  assert.equal(r.status, 201);
  const held = (await slowApi('GET', `/v1/wallets/${c.walletId}`)).body.data;
  assert.equal(held.held_minor, 300_000 + r.body.data.fee_minor);
  assert.equal(held.available_minor, c.balance - 300_000 - r.body.data.fee_minor);
  const cancelled = await slowApi('POST', `/v1/transactions/${r.body.data.transaction_id}/cancel`);
  assert.equal(cancelled.status, 200);
  assert.equal(cancelled.body.data.failure.code, 'CANCELLED');
  assert.equal(cancelled.body.data.hold.status, 'released');
  assert.equal((await slowApi('GET', `/v1/transfers/${r.body.data.id}`)).body.data.status, 'failed');
  const after = (await slowApi('GET', `/v1/wallets/${c.walletId}`)).body.data;
  assert.equal(after.held_minor, 0);
  assert.equal(after.available_minor, c.balance);
});

test('transfer: wallet cannot cover amount plus fee → 422 INSUFFICIENT_FUNDS, nothing held', async () => {
  const c = await funded(api, 100_000);
  const b = await beneficiary(api, c.id);
  const r = await api('POST', '/v1/transfers', { idempotencyKey: idem(), body: { customer_id: c.id, beneficiary_id: b, amount_minor: c.balance, currency: 'NGN' } });
  assert.equal(r.status, 422);
  assert.equal(r.body.error.code, 'INSUFFICIENT_FUNDS');
  assert.equal((await api('GET', `/v1/wallets/${c.walletId}`)).body.data.held_minor, 0);
});

test('transfer: amount 666 → 422 COMPLIANCE_DENIED; above the tier limit → 422 LIMIT_EXCEEDED', async () => {
  const c = await funded(api, 20_000_000);
  const b = await beneficiary(api, c.id);
  const denied = await api('POST', '/v1/transfers', { idempotencyKey: idem(), body: { customer_id: c.id, beneficiary_id: b, amount_minor: 666, currency: 'NGN' } });
  assert.equal(denied.status, 422);
  assert.equal(denied.body.error.code, 'COMPLIANCE_DENIED');
  const over = await api('POST', '/v1/transfers', { idempotencyKey: idem(), body: { customer_id: c.id, beneficiary_id: b, amount_minor: 10_000_001, currency: 'NGN' } });
  assert.equal(over.status, 422);
  assert.equal(over.body.error.code, 'LIMIT_EXCEEDED');
});

test('transfer: customer with a PIN → 403 PIN_REQUIRED without or with a wrong PIN, 201 with the right one', async () => {
  const c = await funded(api, 1_000_000);
  const b = await beneficiary(api, c.id);
  assert.equal((await api('PATCH', `/v1/customers/${c.id}`, { body: { pin: '4321' } })).status, 200);
  const body = { customer_id: c.id, beneficiary_id: b, amount_minor: 10_000, currency: 'NGN' };
  const missing = await api('POST', '/v1/transfers', { idempotencyKey: idem(), body });
  assert.equal(missing.status, 403);
  assert.equal(missing.body.error.code, 'PIN_REQUIRED');
  const wrong = await api('POST', '/v1/transfers', { idempotencyKey: idem(), body, headers: { 'x-transaction-authorization': '1111' } });
  assert.equal(wrong.body.error.code, 'PIN_REQUIRED');
  const right = await api('POST', '/v1/transfers', { idempotencyKey: idem(), body, headers: { 'x-transaction-authorization': '4321' } });
  assert.equal(right.status, 201, JSON.stringify(right.body));
});

test('transfer: PIN step-up under one Idempotency-Key → 403 without, 403 wrong, then 201 with the right PIN under that same key, which then replays it', async () => {
  const c = await funded(api, 1_000_000);
  const b = await beneficiary(api, c.id);
  assert.equal((await api('PATCH', `/v1/customers/${c.id}`, { body: { pin: '4321' } })).status, 200);
  const body = { customer_id: c.id, beneficiary_id: b, amount_minor: 10_000, currency: 'NGN' };
  const k = idem('pin');
  const send = (pin?: string) => api('POST', '/v1/transfers', { idempotencyKey: k, body, headers: pin === undefined ? {} : { 'x-transaction-authorization': pin } });
  assert.deepEqual([(await send()).body.error?.code, (await send('1111')).body.error?.code], ['PIN_REQUIRED', 'PIN_REQUIRED']);
  const right = await send('4321');
  assert.equal(right.status, 201, JSON.stringify(right.body));
  const again = await send('4321');
  assert.deepEqual([again.status, again.body.data.id], [201, right.body.data.id]);
});

test('transfer: rail failure (account ending 9999) → failed PROVIDER_ERROR at payout, hold voided; retry → pending with funds held again', async () => {
  const c = await funded(api, 1_000_000);
  const b = await beneficiary(api, c.id, '0123459999');
  const r = await api('POST', '/v1/transfers', { idempotencyKey: idem(), body: { customer_id: c.id, beneficiary_id: b, amount_minor: 100_000, currency: 'NGN' } });
  assert.equal(r.status, 201);
  const failed = await waitFor(api, `/v1/transfers/${r.body.data.id}`, (d) => d.status === 'failed');
  assert.equal(failed.status, 'failed');
  const txn = (await api('GET', `/v1/transactions/${r.body.data.transaction_id}`)).body.data;
  assert.deepEqual([txn.failure.code, txn.failure.stage, txn.hold.status], ['PROVIDER_ERROR', 'payout', 'released']);
  assert.equal((await api('GET', `/v1/wallets/${c.walletId}`)).body.data.available_minor, c.balance);
  const retried = await api('POST', `/v1/transactions/${r.body.data.transaction_id}/retry`, { idempotencyKey: idem() });
  assert.equal(retried.status, 200);
  assert.equal(retried.body.data.status, 'pending');
  assert.equal(retried.body.data.attempt, 2);
  assert.equal(retried.body.data.hold.status, 'held');
  const again = await waitFor(api, `/v1/transactions/${r.body.data.transaction_id}`, (d) => d.status === 'failed');
  assert.equal(again.attempt, 2);
  assert.deepEqual(again.status_history.map((h: { status: string }) => h.status), ['pending', 'processing', 'failed', 'pending', 'processing', 'failed']);
});

test('transfer: rail timeout (account ending 9998) → unknown until the sandbox clock passes the 5-minute requery, then completed once', async () => {
  const c = await funded(api, 1_000_000);
  const b = await beneficiary(api, c.id, '0123459998');
  const r = await api('POST', '/v1/transfers', { idempotencyKey: idem(), body: { customer_id: c.id, beneficiary_id: b, amount_minor: 100_000, currency: 'NGN' } });
  await waitFor(api, `/v1/transfers/${r.body.data.id}`, (d) => d.status === 'unknown');
  await new Promise((resolve) => setTimeout(resolve, 600));
  assert.equal((await api('GET', `/v1/transfers/${r.body.data.id}`)).body.data.status, 'unknown', 'real time alone does not requery');
  assert.equal((await api('POST', '/v1/test_helpers/clock/advance', { body: { seconds: 300 } })).status, 200);
  const done = await waitFor(api, `/v1/transactions/${r.body.data.transaction_id}`, (d) => d.status === 'completed');
  assert.deepEqual(done.status_history.map((h: { status: string }) => h.status), ['pending', 'processing', 'unknown', 'completed']);
  const wallet = (await api('GET', `/v1/wallets/${c.walletId}`)).body.data;
  assert.equal(wallet.balance_minor, c.balance - 100_000 - r.body.data.fee_minor, 'paid exactly once');
  const retry = await api('POST', `/v1/transactions/${r.body.data.transaction_id}/retry`, { idempotencyKey: idem() });
  assert.equal(retry.status, 409);
});

test('transfer: cross-border without a quote → 422 FX_QUOTE_UNAVAILABLE; with a matching quote → 201 at the quoted amount; a used quote → 409', async () => {
  const c = await funded(api, 5_000_000);
  const gh = await api('POST', '/v1/beneficiaries', { idempotencyKey: idem(), body: { customer_id: c.id, type: 'bank_account', bank_code: '040100', account_number: '1234567890', currency: 'GHS', country: 'GH' } });
  assert.equal(gh.status, 201, JSON.stringify(gh.body));
  const body = { customer_id: c.id, beneficiary_id: gh.body.data.id, amount_minor: 1_000_000, currency: 'NGN' };
  const noQuote = await api('POST', '/v1/transfers', { idempotencyKey: idem(), body });
  assert.equal(noQuote.status, 422);
  assert.equal(noQuote.body.error.code, 'FX_QUOTE_UNAVAILABLE');
  const quote = (await api('POST', '/v1/exchange/quotes', { body: { customer_id: c.id, from_currency: 'NGN', to_currency: 'GHS', from_amount_minor: 1_000_000 } })).body.data;
  const mismatch = await api('POST', '/v1/transfers', { idempotencyKey: idem(), body: { ...body, amount_minor: 999_999, quote_id: quote.id } });
  assert.equal(mismatch.status, 400);
  const ok = await api('POST', '/v1/transfers', { idempotencyKey: idem(), body: { ...body, quote_id: quote.id } });
  assert.equal(ok.status, 201, JSON.stringify(ok.body));
  assert.equal(ok.body.data.destination_currency, 'GHS');
  assert.equal(ok.body.data.destination_amount_minor, quote.to_amount_minor);
  const reused = await api('POST', '/v1/transfers', { idempotencyKey: idem(), body: { ...body, quote_id: quote.id } });
  assert.equal(reused.status, 409);
});

test('transfer: another account → 403 FORBIDDEN; unknown → 404; missing Idempotency-Key → 422', async () => {
  const c = await funded(api, 1_000_000);
  const b = await beneficiary(api, c.id);
  const r = await api('POST', '/v1/transfers', { idempotencyKey: idem(), body: { customer_id: c.id, beneficiary_id: b, amount_minor: 1_000, currency: 'NGN' } });
  assert.equal((await api('GET', `/v1/transfers/${r.body.data.id}`, { key: otherKey })).status, 403);
  assert.equal((await api('GET', '/v1/transfers/01ARZ3NDEKTSV4RRFFQ69G5FAV')).status, 404);
  const noKey = await api('POST', '/v1/transfers', { body: { customer_id: c.id, beneficiary_id: b, amount_minor: 1_000, currency: 'NGN' } });
  assert.equal(noKey.body.error.code, 'IDEMPOTENCY_KEY_REQUIRED');
  const foreignBeneficiary = await api('POST', '/v1/transfers', { key: otherKey, idempotencyKey: idem(), body: { customer_id: c.id, beneficiary_id: b, amount_minor: 1_000, currency: 'NGN' } });
  assert.equal(foreignBeneficiary.status, 403);
});

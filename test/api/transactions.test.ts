// Covers POST /v1/transactions, GET, cancel and retry over real HTTP, including tier limits on the
// sandbox clock and payment transactions failed through the test helpers.
// Runs under node:test against one server whose rail takes 60 s, so wallet debits stay processing.
// Invariant checked: cancel only while pending; retry only after PROVIDER_ERROR, INTERNAL or
// RATE_LIMITED, under the same id with a new attempt; a failure releases the hold.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, client, idem, secretKey, startServer, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';
import { mintId } from '../../src/ids.ts';
import { waitFor } from '../helpers/wait.ts';

const ULID = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/;
const KEY = secretKey();
const KEY_OTHER = secretKey();
const KEY_CLOCK = secretKey(); // its own account: moving its clock leaves the other tests' day alone

const tiers = JSON.parse(fs.readFileSync(path.join(ROOT, 'data/reference/tiers.json'), 'utf8')) as Record<string, Record<string, { per_transaction_max_minor: number; daily_max_minor: number }>>;
const NGN_TIER_1 = tiers.tier_1!.NGN!;

let server: TestServer;
let api: ReturnType<typeof client>;
let apiOther: ReturnType<typeof client>;
let apiClock: ReturnType<typeof client>;

type Api = typeof api;

interface Txn {
  id: string;
  type: string;
  status: string;
  amount_minor: number;
  currency: string;
  customer_id: string;
  failure: { code: string; stage: string; message: string } | null;
  hold: { status: string; amount_minor: number };
  attempt: number;
  status_history: Array<{ status: string; attempt: number; failure_code: string | null; at: string }>;
}

function assertError(response: { status: number; body: unknown }, status: number, code: string): void {
  const body = response.body as { error?: { code: string } };
  assert.equal(response.status, status, JSON.stringify(body));
  assert.equal(body.error?.code, code, JSON.stringify(body));
}

async function newCustomer(a: Api = api): Promise<{ id: string; walletId: string }> {
  const response = await a('POST', '/v1/customers', { idempotencyKey: idem('cust'), body: { name: 'Chidi Okafor', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
  assert.equal(response.status, 201, JSON.stringify(response.body));
  return { id: response.body.data.id, walletId: response.body.data.wallets[0].id };
}

async function createTxn(body: Record<string, unknown>, a: Api = api) {
  return a<{ data: Txn }>('POST', '/v1/transactions', { idempotencyKey: idem('txn'), body });
}

async function getTxn(id: string, a: Api = api): Promise<Txn> {
  const response = await a<{ data: Txn }>('GET', `/v1/transactions/${id}`);
  assert.equal(response.status, 200, JSON.stringify(response.body));
  return response.body.data;
}

async function retry(id: string, a: Api = api) {
  return a<{ data: Txn }>('POST', `/v1/transactions/${id}/retry`, { idempotencyKey: idem('retry') });
}

async function bankPayment(customerId: string, amountMinor: number, a: Api = api): Promise<{ id: string; transaction_id: string }> {
  const response = await a('POST', '/v1/payments', { idempotencyKey: idem('pay'), body: { customer_id: customerId, amount_minor: amountMinor, currency: 'NGN', method: 'bank_transfer' } });
  assert.equal(response.status, 201, JSON.stringify(response.body));
  return response.body.data;
}

async function failPayment(paymentId: string, failureCode?: string, a: Api = api) {
  return a('POST', `/v1/test_helpers/payments/${paymentId}/fail`, failureCode === undefined ? {} : { body: { failure_code: failureCode } });
}

/** A customer whose NGN wallet holds `netMinor` (collected by bank transfer and settled). */
async function fundedCustomer(netMinor: number): Promise<{ id: string; walletId: string }> {
  const customer = await newCustomer();
  // Fee is 1% capped at 300.00 NGN: pay in enough that the net is at least netMinor.
  const payment = await bankPayment(customer.id, Math.ceil(netMinor / 0.99) + 1);
  const settled = await api('POST', `/v1/test_helpers/payments/${payment.id}/settle`);
  assert.equal(settled.status, 200, JSON.stringify(settled.body));
  return customer;
}

async function wallet(walletId: string) {
  const response = await api('GET', `/v1/wallets/${walletId}`);
  assert.equal(response.status, 200);
  return response.body.data as { balance_minor: number; available_minor: number; held_minor: number };
}


before(async () => {
  // Yesterday's bank payment must still be pending after the clock moves a day: no collection expiry sweep here.
  server = await startServer({ keys: [KEY, KEY_OTHER, KEY_CLOCK], env: { KOBO_RAIL_LATENCY_MS: '60000', KOBO_COLLECTION_SWEEP_MS: '86400000' } });
  api = client(server.baseUrl, KEY);
  apiOther = client(server.baseUrl, KEY_OTHER);
  apiClock = client(server.baseUrl, KEY_CLOCK);
});

after(async () => {
  await server?.stop();
});

describe('POST /v1/transactions', () => {
  it('create: funding NGN 1 500.00 → 201 pending, attempt 1, history [pending], no failure, no hold', async () => {
    const customer = await newCustomer();
    const response = await createTxn({ type: 'funding', customer_id: customer.id, amount_minor: 150_000, currency: 'NGN', reference: 'order-17' });
    assert.equal(response.status, 201, JSON.stringify(response.body));
    const t = response.body.data;
    assert.match(t.id, ULID);
    assert.equal(t.type, 'funding');
    assert.equal(t.status, 'pending');
    assert.equal(t.customer_id, customer.id);
    assert.equal(t.amount_minor, 150_000);
    assert.equal(t.currency, 'NGN');
    assert.equal(t.failure, null);
    assert.equal(t.attempt, 1);
    assert.deepEqual(t.hold, { status: 'none', amount_minor: 0 });
    assert.deepEqual(t.status_history.map((h) => h.status), ['pending']);
    assert.deepEqual(await getTxn(t.id), t);
  });

  it('create: each of payment, transfer, exchange, funding → 201', async () => {
    const customer = await newCustomer();
    for (const type of ['payment', 'transfer', 'exchange', 'funding']) {
      const response = await createTxn({ type, customer_id: customer.id, amount_minor: 100, currency: 'NGN' });
      assert.equal(response.status, 201, type);
      assert.equal(response.body.data.type, type);
    }
  });

  it('create: type service, refund or missing → 400 VALIDATION', async () => {
    const customer = await newCustomer();
    for (const type of ['service', 'refund', undefined]) {
      assertError(await createTxn({ type, customer_id: customer.id, amount_minor: 100, currency: 'NGN' }), 400, 'VALIDATION');
    }
  });

  it('create: amount_minor 10.5, "1000", 0 or -5 → 400 VALIDATION', async () => {
    const customer = await newCustomer();
    for (const amount of [10.5, '1000', 0, -5]) {
      assertError(await createTxn({ type: 'funding', customer_id: customer.id, amount_minor: amount, currency: 'NGN' }), 400, 'VALIDATION');
    }
  });

  it('create: currency XYZ (not ISO 4217) or lower-case ngn → 400 VALIDATION', async () => {
    const customer = await newCustomer();
    assertError(await createTxn({ type: 'funding', customer_id: customer.id, amount_minor: 100, currency: 'XYZ' }), 400, 'VALIDATION');
    assertError(await createTxn({ type: 'funding', customer_id: customer.id, amount_minor: 100, currency: 'ngn' }), 400, 'VALIDATION');
  });

  it('create: unknown customer → 404 NOT_FOUND; another account\'s customer → 403 FORBIDDEN', async () => {
    assertError(await createTxn({ type: 'funding', customer_id: mintId(2, Date.now()), amount_minor: 100, currency: 'NGN' }), 404, 'NOT_FOUND');
    const foreign = await newCustomer(apiOther);
    assertError(await createTxn({ type: 'funding', customer_id: foreign.id, amount_minor: 100, currency: 'NGN' }), 403, 'FORBIDDEN');
  });

  it('create: without Idempotency-Key → 422 IDEMPOTENCY_KEY_REQUIRED', async () => {
    const customer = await newCustomer();
    assertError(await api('POST', '/v1/transactions', { body: { type: 'funding', customer_id: customer.id, amount_minor: 100, currency: 'NGN' } }), 422, 'IDEMPOTENCY_KEY_REQUIRED');
  });

  it(`create: exactly the tier_1 NGN per-transaction limit (${NGN_TIER_1.per_transaction_max_minor}) → 201; one more → 422 LIMIT_EXCEEDED`, async () => {
    const customer = await newCustomer();
    const at = await createTxn({ type: 'transfer', customer_id: customer.id, amount_minor: NGN_TIER_1.per_transaction_max_minor, currency: 'NGN' });
    assert.equal(at.status, 201);
    assertError(await createTxn({ type: 'transfer', customer_id: customer.id, amount_minor: NGN_TIER_1.per_transaction_max_minor + 1, currency: 'NGN' }), 422, 'LIMIT_EXCEEDED');
  });

  it('create: tier_2 customer above the tier_1 limit → 201 (limits follow the tier)', async () => {
    const customer = await newCustomer();
    assert.equal((await api('PATCH', `/v1/customers/${customer.id}`, { body: { tier: 'tier_2' } })).status, 200);
    const response = await createTxn({ type: 'transfer', customer_id: customer.id, amount_minor: NGN_TIER_1.per_transaction_max_minor + 1, currency: 'NGN' });
    assert.equal(response.status, 201, JSON.stringify(response.body));
  });
});

describe('daily limit on the sandbox clock (own account)', () => {
  const per = NGN_TIER_1.per_transaction_max_minor;
  const daily = NGN_TIER_1.daily_max_minor;
  let customer: { id: string; walletId: string };
  let yesterdaysPayment: { id: string; transaction_id: string };

  it(`create: the day's total reaching daily_max_minor (${daily}) → 201s; then one more minor unit → 422 LIMIT_EXCEEDED`, async () => {
    // Usage is per UTC day of the sandbox clock: step past midnight first if it is about to strike.
    const clock = await apiClock('GET', '/v1/test_helpers/clock');
    assert.equal(clock.status, 200);
    const msOfDay = Date.parse(clock.body.data.now) % 86_400_000;
    if (msOfDay > 86_400_000 - 60_000) {
      assert.equal((await apiClock('POST', '/v1/test_helpers/clock/advance', { body: { seconds: 120 } })).status, 200);
    }
    customer = await newCustomer(apiClock);
    yesterdaysPayment = await bankPayment(customer.id, per, apiClock);
    for (let used = per; used < daily; used += per) {
      const response = await createTxn({ type: 'transfer', customer_id: customer.id, amount_minor: per, currency: 'NGN' }, apiClock);
      assert.equal(response.status, 201, `at ${used}: ${JSON.stringify(response.body)}`);
    }
    assertError(await createTxn({ type: 'transfer', customer_id: customer.id, amount_minor: 1, currency: 'NGN' }, apiClock), 422, 'LIMIT_EXCEEDED');
  });

  it('clock/advance 86 400 s: the next day → daily usage reset, the same amount succeeds again', async () => {
    const advanced = await apiClock('POST', '/v1/test_helpers/clock/advance', { body: { seconds: 86_400 } });
    assert.equal(advanced.status, 200, JSON.stringify(advanced.body));
    assert.ok(advanced.body.data.offset_seconds >= 86_400);
    for (let used = 0; used < daily; used += per) {
      const response = await createTxn({ type: 'transfer', customer_id: customer.id, amount_minor: per, currency: 'NGN' }, apiClock);
      assert.equal(response.status, 201, `at ${used}: ${JSON.stringify(response.body)}`);
    }
    assertError(await createTxn({ type: 'transfer', customer_id: customer.id, amount_minor: per, currency: 'NGN' }, apiClock), 422, 'LIMIT_EXCEEDED');
  });

  it('fail: yesterday\'s payment failed today → today\'s usage not given back, still 422 LIMIT_EXCEEDED', async () => {
    assert.equal((await failPayment(yesterdaysPayment.id, 'PROVIDER_ERROR', apiClock)).status, 200);
    assertError(await createTxn({ type: 'transfer', customer_id: customer.id, amount_minor: per, currency: 'NGN' }, apiClock), 422, 'LIMIT_EXCEEDED');
  });

  it('retry: a failed payment when today\'s limit is used up → 422 LIMIT_EXCEEDED, transaction stays failed', async () => {
    assertError(await retry(yesterdaysPayment.transaction_id, apiClock), 422, 'LIMIT_EXCEEDED');
    const t = await getTxn(yesterdaysPayment.transaction_id, apiClock);
    assert.equal(t.status, 'failed');
    assert.equal(t.attempt, 1);
  });

  it('clock/advance with seconds 0 or a string → 400 VALIDATION', async () => {
    assertError(await apiClock('POST', '/v1/test_helpers/clock/advance', { body: { seconds: 0 } }), 400, 'VALIDATION');
    assertError(await apiClock('POST', '/v1/test_helpers/clock/advance', { body: { seconds: '60' } }), 400, 'VALIDATION');
  });
});

describe('POST /v1/transactions/{id}/cancel', () => {
  it('cancel: pending → 200 failed, failure CANCELLED at stage client, history [pending, failed]', async () => {
    const customer = await newCustomer();
    const created = (await createTxn({ type: 'transfer', customer_id: customer.id, amount_minor: 2_000, currency: 'NGN' })).body.data;
    const response = await api<{ data: Txn }>('POST', `/v1/transactions/${created.id}/cancel`);
    assert.equal(response.status, 200, JSON.stringify(response.body));
    const t = response.body.data;
    assert.equal(t.id, created.id);
    assert.equal(t.status, 'failed');
    assert.equal(t.failure?.code, 'CANCELLED');
    assert.equal(t.failure?.stage, 'client');
    assert.deepEqual(t.status_history.map((h) => h.status), ['pending', 'failed']);
    assert.deepEqual(t.status_history.map((h) => h.failure_code), [null, 'CANCELLED']);
    assert.deepEqual(await getTxn(created.id), t);
  });

  it('cancel: already cancelled → 409 CONFLICT, history unchanged', async () => {
    const customer = await newCustomer();
    const created = (await createTxn({ type: 'transfer', customer_id: customer.id, amount_minor: 2_000, currency: 'NGN' })).body.data;
    assert.equal((await api('POST', `/v1/transactions/${created.id}/cancel`)).status, 200);
    assertError(await api('POST', `/v1/transactions/${created.id}/cancel`), 409, 'CONFLICT');
    assert.equal((await getTxn(created.id)).status_history.length, 2);
  });

  it('cancel: unknown id → 404 NOT_FOUND; malformed id → 400 VALIDATION', async () => {
    assertError(await api('POST', `/v1/transactions/${mintId(9, Date.now())}/cancel`), 404, 'NOT_FOUND');
    assertError(await api('POST', '/v1/transactions/txn_123/cancel'), 400, 'VALIDATION');
  });

  it('cancel: another account\'s transaction → 403 FORBIDDEN, still pending', async () => {
    const customer = await newCustomer(apiOther);
    const created = (await createTxn({ type: 'transfer', customer_id: customer.id, amount_minor: 2_000, currency: 'NGN' }, apiOther)).body.data;
    assertError(await api('POST', `/v1/transactions/${created.id}/cancel`), 403, 'FORBIDDEN');
    assertError(await api('GET', `/v1/transactions/${created.id}`), 403, 'FORBIDDEN');
    assert.equal((await getTxn(created.id, apiOther)).status, 'pending');
  });

  it('cancel: processing wallet payment (rail not yet answered) → 409 CONFLICT, hold kept', async () => {
    const customer = await fundedCustomer(50_000);
    const payment = await api('POST', '/v1/payments', { idempotencyKey: idem('pay'), body: { customer_id: customer.id, amount_minor: 20_000, currency: 'NGN', method: 'wallet' } });
    assert.equal(payment.status, 201, JSON.stringify(payment.body));
    assert.equal(payment.body.data.status, 'processing');
    assertError(await api('POST', `/v1/transactions/${payment.body.data.transaction_id}/cancel`), 409, 'CONFLICT');
    const t = await getTxn(payment.body.data.transaction_id);
    assert.equal(t.status, 'processing');
    assert.deepEqual(t.hold, { status: 'held', amount_minor: 20_000 });
    assert.equal((await wallet(customer.walletId)).held_minor, 20_000);
  });
});

describe('POST /v1/transactions/{id}/retry', () => {
  it('retry: without Idempotency-Key → 422 IDEMPOTENCY_KEY_REQUIRED', async () => {
    const customer = await newCustomer();
    const payment = await bankPayment(customer.id, 20_000);
    assert.equal((await failPayment(payment.id)).status, 200);
    assertError(await api('POST', `/v1/transactions/${payment.transaction_id}/retry`), 422, 'IDEMPOTENCY_KEY_REQUIRED');
    assert.equal((await getTxn(payment.transaction_id)).status, 'failed');
  });

  it('retry: cancelled transaction → 409 CONFLICT', async () => {
    const customer = await newCustomer();
    const created = (await createTxn({ type: 'transfer', customer_id: customer.id, amount_minor: 2_000, currency: 'NGN' })).body.data;
    assert.equal((await api('POST', `/v1/transactions/${created.id}/cancel`)).status, 200);
    assertError(await retry(created.id), 409, 'CONFLICT');
  });

  it('retry: pending transaction (not failed) → 409 CONFLICT', async () => {
    const customer = await newCustomer();
    const created = (await createTxn({ type: 'transfer', customer_id: customer.id, amount_minor: 2_000, currency: 'NGN' })).body.data;
    assertError(await retry(created.id), 409, 'CONFLICT');
  });

  it('retry: unknown id → 404 NOT_FOUND', async () => {
    assertError(await retry(mintId(4, Date.now())), 404, 'NOT_FOUND');
  });

  it('retry: payment failed by the helper with its default (PROVIDER_ERROR) → 200 same id, pending, attempt 2, history pending, failed, pending', async () => {
    const customer = await newCustomer();
    const payment = await bankPayment(customer.id, 20_000);
    const failed = await failPayment(payment.id);
    assert.equal(failed.status, 200, JSON.stringify(failed.body));
    assert.equal(failed.body.data.status, 'failed');
    const before = await getTxn(payment.transaction_id);
    assert.equal(before.status, 'failed');
    assert.equal(before.failure?.code, 'PROVIDER_ERROR');
    assert.equal(before.failure?.stage, 'collection');

    const response = await retry(payment.transaction_id);
    assert.equal(response.status, 200, JSON.stringify(response.body));
    const t = response.body.data;
    assert.equal(t.id, payment.transaction_id);
    assert.equal(t.status, 'pending');
    assert.equal(t.attempt, 2);
    assert.equal(t.failure, null);
    assert.deepEqual(t.status_history.map((h) => h.status), ['pending', 'failed', 'pending']);
    assert.deepEqual(t.status_history.map((h) => h.attempt), [1, 1, 2]);
    assert.deepEqual(t.status_history.map((h) => h.failure_code), [null, 'PROVIDER_ERROR', null]);
    const paymentNow = await api('GET', `/v1/payments/${payment.id}`);
    assert.equal(paymentNow.body.data.status, 'pending');
  });

  it('retry: same Idempotency-Key twice → same reply, attempt stays 2', async () => {
    const customer = await newCustomer();
    const payment = await bankPayment(customer.id, 20_000);
    assert.equal((await failPayment(payment.id)).status, 200);
    const key = idem('retry-twice');
    const first = await api('POST', `/v1/transactions/${payment.transaction_id}/retry`, { idempotencyKey: key });
    const second = await api('POST', `/v1/transactions/${payment.transaction_id}/retry`, { idempotencyKey: key });
    assert.equal(first.status, 200);
    assert.deepEqual(second.body, first.body);
    assert.equal((await getTxn(payment.transaction_id)).attempt, 2);
  });

  for (const code of ['RATE_LIMITED', 'INTERNAL']) {
    it(`retry: payment failed with ${code} → 200 pending, attempt 2`, async () => {
      const customer = await newCustomer();
      const payment = await bankPayment(customer.id, 20_000);
      assert.equal((await failPayment(payment.id, code)).status, 200);
      assert.equal((await getTxn(payment.transaction_id)).failure?.code, code);
      const response = await retry(payment.transaction_id);
      assert.equal(response.status, 200, JSON.stringify(response.body));
      assert.equal(response.body.data.status, 'pending');
      assert.equal(response.body.data.attempt, 2);
    });
  }

  for (const code of ['INSUFFICIENT_FUNDS', 'COMPLIANCE_DENIED', 'LIMIT_EXCEEDED']) {
    it(`retry: payment failed with final ${code} → 409 CONFLICT, still failed`, async () => {
      const customer = await newCustomer();
      const payment = await bankPayment(customer.id, 20_000);
      assert.equal((await failPayment(payment.id, code)).status, 200);
      assertError(await retry(payment.transaction_id), 409, 'CONFLICT');
      const t = await getTxn(payment.transaction_id);
      assert.equal(t.status, 'failed');
      assert.equal(t.failure?.code, code);
    });
  }

  it('fail helper: failure_code CANCELLED or unknown, or an extra field → 400 VALIDATION', async () => {
    const customer = await newCustomer();
    const payment = await bankPayment(customer.id, 20_000);
    assertError(await failPayment(payment.id, 'CANCELLED'), 400, 'VALIDATION');
    assertError(await failPayment(payment.id, 'NOPE'), 400, 'VALIDATION');
    assertError(await api('POST', `/v1/test_helpers/payments/${payment.id}/fail`, { body: { failure_code: 'INTERNAL', why: 'x' } }), 400, 'VALIDATION');
    assert.equal((await getTxn(payment.transaction_id)).status, 'pending');
  });

  it('fail helper: an already failed payment → 409 CONFLICT', async () => {
    const customer = await newCustomer();
    const payment = await bankPayment(customer.id, 20_000);
    assert.equal((await failPayment(payment.id)).status, 200);
    assertError(await failPayment(payment.id), 409, 'CONFLICT');
  });
});

describe('wallet payment while processing (rail latency 60 s)', () => {
  it('create: wallet payment → 201 processing, wallet held_minor = amount, available = balance − held', async () => {
    const customer = await fundedCustomer(40_000);
    const before = await wallet(customer.walletId);
    const payment = await api('POST', '/v1/payments', { idempotencyKey: idem('pay'), body: { customer_id: customer.id, amount_minor: 15_000, currency: 'NGN', method: 'wallet' } });
    assert.equal(payment.status, 201);
    assert.equal(payment.body.data.status, 'processing');
    const w = await wallet(customer.walletId);
    assert.equal(w.held_minor, 15_000);
    assert.equal(w.balance_minor, before.balance_minor);
    assert.equal(w.available_minor, w.balance_minor - w.held_minor);
  });

  it('fail helper: processing wallet payment → failed, hold released (held 0, available restored)', async () => {
    const customer = await fundedCustomer(40_000);
    const before = await wallet(customer.walletId);
    const payment = (await api('POST', '/v1/payments', { idempotencyKey: idem('pay'), body: { customer_id: customer.id, amount_minor: 15_000, currency: 'NGN', method: 'wallet' } })).body.data;
    assert.equal((await wallet(customer.walletId)).available_minor, before.available_minor - 15_000);
    const failed = await failPayment(payment.id);
    assert.equal(failed.status, 200, JSON.stringify(failed.body));
    assert.equal(failed.body.data.status, 'failed');
    const t = await getTxn(payment.transaction_id);
    assert.equal(t.status, 'failed');
    assert.equal(t.hold.status, 'released');
    assert.deepEqual(t.status_history.map((h) => h.status), ['pending', 'processing', 'failed']);
    const w = await wallet(customer.walletId);
    assert.equal(w.held_minor, 0);
    assert.equal(w.balance_minor, before.balance_minor);
    assert.equal(w.available_minor, before.available_minor);
  });

  it('retry: failed wallet payment → 200 pending, then re-submitted: processing with the amount held again', async () => {
    const customer = await fundedCustomer(40_000);
    const payment = (await api('POST', '/v1/payments', { idempotencyKey: idem('pay'), body: { customer_id: customer.id, amount_minor: 15_000, currency: 'NGN', method: 'wallet' } })).body.data;
    assert.equal((await failPayment(payment.id, 'RATE_LIMITED')).status, 200);
    const retried = await retry(payment.transaction_id);
    assert.equal(retried.status, 200, JSON.stringify(retried.body));
    assert.equal(retried.body.data.attempt, 2);
    const t = await waitFor(() => getTxn(payment.transaction_id), (x) => x.status === 'processing');
    assert.equal(t.status, 'processing');
    assert.deepEqual(t.hold, { status: 'held', amount_minor: 15_000 });
    assert.deepEqual(t.status_history.map((h) => h.status), ['pending', 'processing', 'failed', 'pending', 'processing']);
    assert.equal((await wallet(customer.walletId)).held_minor, 15_000);
  });

  it('settle helper: processing wallet payment → completed, hold posted, wallet debited once', async () => {
    const customer = await fundedCustomer(40_000);
    const before = await wallet(customer.walletId);
    const payment = (await api('POST', '/v1/payments', { idempotencyKey: idem('pay'), body: { customer_id: customer.id, amount_minor: 15_000, currency: 'NGN', method: 'wallet' } })).body.data;
    const settled = await api('POST', `/v1/test_helpers/payments/${payment.id}/settle`);
    assert.equal(settled.status, 200, JSON.stringify(settled.body));
    assert.equal(settled.body.data.status, 'completed');
    const w = await wallet(customer.walletId);
    assert.equal(w.balance_minor, before.balance_minor - 15_000);
    assert.equal(w.held_minor, 0);
    assert.equal((await getTxn(payment.transaction_id)).hold.status, 'posted');
  });
});

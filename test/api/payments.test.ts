// Covers GET /v1/payments/methods, POST /v1/payments (bank_transfer and wallet), GET /v1/payments/{id}
// and the settle/fail test helpers over real HTTP, against one server whose rail answers in 5 ms.
// Runs under node:test; the server is a separate process with its own data dir.
// Invariant checked: virtual_account is never selectable; a settled collection credits the wallet net of
// its fee; a wallet payment holds then posts exactly its amount; helpers exist only in the sandbox.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey, startServer, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';
import { mintId } from '../../src/ids.ts';
import { waitFor } from '../helpers/wait.ts';

const ULID = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/;
const KEY = secretKey();
const KEY_OTHER = secretKey();
const KEY_LIVE = secretKey('live');
const METHODS = ['card', 'bank_transfer', 'wallet', 'virtual_account', 'mobile_money'];

let server: TestServer;
let api: ReturnType<typeof client>;
let apiOther: ReturnType<typeof client>;
let apiLive: ReturnType<typeof client>;

type Api = typeof api;

interface PaymentData {
  id: string;
  transaction_id: string;
  customer_id: string;
  method: string;
  status: string;
  amount_minor: number;
  fee_minor: number;
  currency: string;
  wallet_id: string;
  provider: {
    type: string;
    instructions?: { account_number: string; bank_name: string; reference: string; expires_at: string; amount_minor: number; currency: string };
  };
  created_at: string;
}

interface MethodItem {
  method: string;
  selectable: boolean;
  enabled: boolean;
  reason: string | null;
  min_amount_minor: number | null;
  max_amount_minor: number | null;
}

function assertError(response: { status: number; body: unknown }, status: number, code: string): void {
  const body = response.body as { error?: { code: string } };
  assert.equal(response.status, status, JSON.stringify(body));
  assert.equal(body.error?.code, code, JSON.stringify(body));
}

const PHONES: Record<string, () => string> = {
  NG: uniquePhone,
  GH: () => `+23324${String(1_000_000 + Math.floor(Math.random() * 8_999_999))}`,
  KE: () => `+2547${String(10_000_000 + Math.floor(Math.random() * 89_999_999))}`,
};

async function newCustomer(a: Api = api, country = 'NG'): Promise<{ id: string; walletId: string }> {
  const response = await a('POST', '/v1/customers', { idempotencyKey: idem('cust'), body: { name: 'Amaka Eze', email: uniqueEmail(), phone: PHONES[country]!(), country_code: country } });
  assert.equal(response.status, 201, JSON.stringify(response.body));
  return { id: response.body.data.id, walletId: response.body.data.wallets[0].id };
}

async function pay(body: Record<string, unknown>, a: Api = api) {
  return a<{ data: PaymentData }>('POST', '/v1/payments', { idempotencyKey: idem('pay'), body: { currency: 'NGN', ...body } });
}

async function payOk(body: Record<string, unknown>, a: Api = api): Promise<PaymentData> {
  const response = await pay(body, a);
  assert.equal(response.status, 201, JSON.stringify(response.body));
  return response.body.data;
}

async function wallet(walletId: string, a: Api = api) {
  const response = await a('GET', `/v1/wallets/${walletId}`);
  assert.equal(response.status, 200, JSON.stringify(response.body));
  return response.body.data as { balance_minor: number; available_minor: number; held_minor: number };
}

async function methodsOf(customerId: string): Promise<Map<string, MethodItem>> {
  const response = await api<{ data: { items: MethodItem[] } }>('GET', `/v1/payments/methods?customer_id=${customerId}`);
  assert.equal(response.status, 200, JSON.stringify(response.body));
  return new Map(response.body.data.items.map((m) => [m.method, m]));
}

/** A customer whose NGN wallet was funded by a settled bank transfer of `grossMinor`; returns the net credited. */
async function funded(grossMinor: number): Promise<{ id: string; walletId: string; netMinor: number }> {
  const customer = await newCustomer();
  const collection = await payOk({ customer_id: customer.id, amount_minor: grossMinor, method: 'bank_transfer' });
  const settled = await api('POST', `/v1/test_helpers/payments/${collection.id}/settle`);
  assert.equal(settled.status, 200, JSON.stringify(settled.body));
  return { ...customer, netMinor: grossMinor - collection.fee_minor };
}


before(async () => {
  server = await startServer({ keys: [KEY, KEY_OTHER, KEY_LIVE] });
  api = client(server.baseUrl, KEY);
  apiOther = client(server.baseUrl, KEY_OTHER);
  apiLive = client(server.baseUrl, KEY_LIVE);
});

after(async () => {
  await server?.stop();
});

describe('GET /v1/payments/methods', () => {
  it('methods: NG customer → all five methods with selectable and reason; card, bank_transfer, wallet selectable', async () => {
    const customer = await newCustomer();
    const methods = await methodsOf(customer.id);
    assert.deepEqual([...methods.keys()].sort(), [...METHODS].sort());
    for (const name of ['card', 'bank_transfer', 'wallet']) {
      assert.equal(methods.get(name)?.selectable, true, name);
      assert.equal(methods.get(name)?.reason, null, name);
    }
    for (const m of methods.values()) assert.equal(typeof m.selectable, 'boolean');
  });

  it('methods: NG customer → virtual_account not selectable (funding instrument), mobile_money not enabled in NG', async () => {
    const customer = await newCustomer();
    const methods = await methodsOf(customer.id);
    assert.equal(methods.get('virtual_account')?.selectable, false);
    assert.equal(methods.get('virtual_account')?.reason, 'funding_instrument');
    assert.equal(methods.get('mobile_money')?.selectable, false);
    assert.equal(methods.get('mobile_money')?.enabled, false);
    assert.equal(methods.get('mobile_money')?.reason, 'not_enabled_in_country');
  });

  it('methods: virtual_account for NG, GH and KE customers, even at kyc_level 3 → never selectable', async () => {
    for (const country of ['NG', 'GH', 'KE']) {
      const customer = await newCustomer(api, country);
      assert.equal((await api('PATCH', `/v1/customers/${customer.id}`, { body: { kyc_level: 3 } })).status, 200);
      const methods = await methodsOf(customer.id);
      assert.equal(methods.get('virtual_account')?.selectable, false, country);
    }
  });

  it('methods: GH customer → mobile_money selectable', async () => {
    const customer = await newCustomer(api, 'GH');
    assert.equal((await methodsOf(customer.id)).get('mobile_money')?.selectable, true);
  });

  it('methods: without customer_id → 400 VALIDATION; another account\'s customer → 403 FORBIDDEN', async () => {
    assertError(await api('GET', '/v1/payments/methods'), 400, 'VALIDATION');
    const foreign = await newCustomer(apiOther);
    assertError(await api('GET', `/v1/payments/methods?customer_id=${foreign.id}`), 403, 'FORBIDDEN');
  });
});

describe('POST /v1/payments: refusals', () => {
  it('create: method virtual_account (even at kyc_level 3) → 422 METHOD_NOT_SELECTABLE', async () => {
    const customer = await newCustomer();
    assertError(await pay({ customer_id: customer.id, amount_minor: 50_000, method: 'virtual_account' }), 422, 'METHOD_NOT_SELECTABLE');
    assert.equal((await api('PATCH', `/v1/customers/${customer.id}`, { body: { kyc_level: 3 } })).status, 200);
    assertError(await pay({ customer_id: customer.id, amount_minor: 50_000, method: 'virtual_account' }), 422, 'METHOD_NOT_SELECTABLE');
  });

  it('create: mobile_money for an NG customer (not enabled in NG) → 422 METHOD_NOT_SELECTABLE', async () => {
    const customer = await newCustomer();
    assertError(await pay({ customer_id: customer.id, amount_minor: 50_000, method: 'mobile_money' }), 422, 'METHOD_NOT_SELECTABLE');
  });

  it('create: an unknown method → 422 METHOD_NOT_SELECTABLE', async () => {
    const customer = await newCustomer();
    assertError(await pay({ customer_id: customer.id, amount_minor: 50_000, method: 'cheque' }), 422, 'METHOD_NOT_SELECTABLE');
  });

  it('create: bank_transfer in USD for an NG customer (home currency NGN) → 422 METHOD_NOT_SELECTABLE', async () => {
    const customer = await newCustomer();
    assertError(await pay({ customer_id: customer.id, amount_minor: 50_000, currency: 'USD', method: 'bank_transfer' }), 422, 'METHOD_NOT_SELECTABLE');
  });

  it('create: card above the NG card maximum → 400 VALIDATION', async () => {
    const customer = await newCustomer();
    const max = (await methodsOf(customer.id)).get('card')!.max_amount_minor!;
    assert.ok(Number.isSafeInteger(max));
    assertError(await pay({ customer_id: customer.id, amount_minor: max + 1, method: 'card' }), 400, 'VALIDATION');
  });

  it('create: bank_transfer one below the NG minimum → 400 VALIDATION; at the minimum → 201', async () => {
    const customer = await newCustomer();
    const min = (await methodsOf(customer.id)).get('bank_transfer')!.min_amount_minor!;
    assertError(await pay({ customer_id: customer.id, amount_minor: min - 1, method: 'bank_transfer' }), 400, 'VALIDATION');
    assert.equal((await pay({ customer_id: customer.id, amount_minor: min, method: 'bank_transfer' })).status, 201);
  });

  it('create: amount_minor as a float or a string, or an extra field → 400 VALIDATION', async () => {
    const customer = await newCustomer();
    assertError(await pay({ customer_id: customer.id, amount_minor: 50_000.5, method: 'bank_transfer' }), 400, 'VALIDATION');
    assertError(await pay({ customer_id: customer.id, amount_minor: '50000', method: 'bank_transfer' }), 400, 'VALIDATION');
    assertError(await pay({ customer_id: customer.id, amount_minor: 50_000, method: 'bank_transfer', tip: 1 }), 400, 'VALIDATION');
  });

  it('create: bank_transfer above the tier_1 per-transaction limit → 422 LIMIT_EXCEEDED', async () => {
    const customer = await newCustomer();
    assertError(await pay({ customer_id: customer.id, amount_minor: 10_000_001, method: 'bank_transfer' }), 422, 'LIMIT_EXCEEDED');
  });

  it('create: wallet with an empty wallet → 422 INSUFFICIENT_FUNDS', async () => {
    const customer = await newCustomer();
    assertError(await pay({ customer_id: customer.id, amount_minor: 1_000, method: 'wallet' }), 422, 'INSUFFICIENT_FUNDS');
  });

  it('create: wallet for one more than the wallet holds → 422 INSUFFICIENT_FUNDS, wallet untouched', async () => {
    const customer = await funded(100_000);
    assertError(await pay({ customer_id: customer.id, amount_minor: customer.netMinor + 1, method: 'wallet' }), 422, 'INSUFFICIENT_FUNDS');
    const w = await wallet(customer.walletId);
    assert.equal(w.balance_minor, customer.netMinor);
    assert.equal(w.held_minor, 0);
  });

  it('create: without Idempotency-Key → 422 IDEMPOTENCY_KEY_REQUIRED', async () => {
    const customer = await newCustomer();
    assertError(await api('POST', '/v1/payments', { body: { customer_id: customer.id, amount_minor: 50_000, currency: 'NGN', method: 'bank_transfer' } }), 422, 'IDEMPOTENCY_KEY_REQUIRED');
  });

  it('create: another account\'s customer → 403 FORBIDDEN', async () => {
    const foreign = await newCustomer(apiOther);
    assertError(await pay({ customer_id: foreign.id, amount_minor: 50_000, method: 'bank_transfer' }), 403, 'FORBIDDEN');
  });
});

describe('POST /v1/payments: bank_transfer', () => {
  it('create: bank_transfer NGN 2 500.00 → 201 pending with instructions (10-digit account, bank, reference, future expiry)', async () => {
    const customer = await newCustomer();
    const p = await payOk({ customer_id: customer.id, amount_minor: 250_000, method: 'bank_transfer', reference: 'inv-42' });
    assert.match(p.id, ULID);
    assert.match(p.transaction_id, ULID);
    assert.equal(p.method, 'bank_transfer');
    assert.equal(p.status, 'pending');
    assert.equal(p.amount_minor, 250_000);
    assert.equal(p.fee_minor, 2_500); // 1% of 250 000, under the 30 000 cap
    assert.equal(p.wallet_id, customer.walletId);
    assert.equal(p.provider.type, 'bank_transfer');
    const i = p.provider.instructions;
    assert.ok(i);
    assert.match(i.account_number, /^\d{10}$/);
    assert.ok(i.bank_name.length > 0);
    assert.ok(i.reference.length > 0);
    assert.ok(Date.parse(i.expires_at) > Date.parse(p.created_at));
    assert.equal(i.amount_minor, 250_000);
    assert.equal(i.currency, 'NGN');
    const t = await api('GET', `/v1/transactions/${p.transaction_id}`);
    assert.equal(t.body.data.status, 'pending');
    assert.equal(t.body.data.type, 'payment');
  });

  it('create: large bank_transfer → fee capped at 300.00 NGN', async () => {
    const customer = await newCustomer();
    const p = await payOk({ customer_id: customer.id, amount_minor: 9_000_000, method: 'bank_transfer' });
    assert.equal(p.fee_minor, 30_000);
  });

  it('create: same Idempotency-Key and body twice → one payment; other body → 409 IDEMPOTENCY_REPLAY', async () => {
    const customer = await newCustomer();
    const key = idem('pay-replay');
    const body = { customer_id: customer.id, amount_minor: 30_000, currency: 'NGN', method: 'bank_transfer' };
    const first = await api('POST', '/v1/payments', { idempotencyKey: key, body });
    const second = await api('POST', '/v1/payments', { idempotencyKey: key, body });
    assert.equal(first.status, 201);
    assert.deepEqual(second.body, first.body);
    assertError(await api('POST', '/v1/payments', { idempotencyKey: key, body: { ...body, amount_minor: 30_001 } }), 409, 'IDEMPOTENCY_REPLAY');
  });

  it('settle helper: pending bank_transfer → 200 completed, wallet credited amount − fee, transaction completed', async () => {
    const customer = await newCustomer();
    const p = await payOk({ customer_id: customer.id, amount_minor: 250_000, method: 'bank_transfer' });
    const settled = await api<{ data: PaymentData }>('POST', `/v1/test_helpers/payments/${p.id}/settle`);
    assert.equal(settled.status, 200, JSON.stringify(settled.body));
    assert.equal(settled.body.data.status, 'completed');
    const w = await wallet(customer.walletId);
    assert.equal(w.balance_minor, 250_000 - p.fee_minor);
    assert.equal(w.available_minor, 250_000 - p.fee_minor);
    assert.equal(w.held_minor, 0);
    const t = await api('GET', `/v1/transactions/${p.transaction_id}`);
    assert.equal(t.body.data.status, 'completed');
    assert.deepEqual(t.body.data.status_history.map((h: { status: string }) => h.status), ['pending', 'completed']);
    assert.equal((await api('GET', `/v1/payments/${p.id}`)).body.data.status, 'completed');
  });

  it('settle helper: twice → 409 CONFLICT, wallet credited once', async () => {
    const customer = await newCustomer();
    const p = await payOk({ customer_id: customer.id, amount_minor: 100_000, method: 'bank_transfer' });
    assert.equal((await api('POST', `/v1/test_helpers/payments/${p.id}/settle`)).status, 200);
    assertError(await api('POST', `/v1/test_helpers/payments/${p.id}/settle`), 409, 'CONFLICT');
    assert.equal((await wallet(customer.walletId)).balance_minor, 100_000 - p.fee_minor);
  });

  it('fail helper: a completed payment → 409 CONFLICT, stays completed', async () => {
    const customer = await newCustomer();
    const p = await payOk({ customer_id: customer.id, amount_minor: 100_000, method: 'bank_transfer' });
    assert.equal((await api('POST', `/v1/test_helpers/payments/${p.id}/settle`)).status, 200);
    assertError(await api('POST', `/v1/test_helpers/payments/${p.id}/fail`), 409, 'CONFLICT');
    assert.equal((await api('GET', `/v1/payments/${p.id}`)).body.data.status, 'completed');
  });

  it('fail helper: pending bank_transfer → failed, wallet not credited', async () => {
    const customer = await newCustomer();
    const p = await payOk({ customer_id: customer.id, amount_minor: 100_000, method: 'bank_transfer' });
    const failed = await api('POST', `/v1/test_helpers/payments/${p.id}/fail`, { body: { failure_code: 'COMPLIANCE_DENIED' } });
    assert.equal(failed.status, 200);
    assert.equal(failed.body.data.status, 'failed');
    const t = await api('GET', `/v1/transactions/${p.transaction_id}`);
    assert.equal(t.body.data.failure.code, 'COMPLIANCE_DENIED');
    assert.equal((await wallet(customer.walletId)).balance_minor, 0);
  });

  it('cancel: the transaction of a pending bank_transfer → payment failed, settle then 409 CONFLICT', async () => {
    const customer = await newCustomer();
    const p = await payOk({ customer_id: customer.id, amount_minor: 100_000, method: 'bank_transfer' });
    const cancelled = await api('POST', `/v1/transactions/${p.transaction_id}/cancel`);
    assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body));
    assert.equal(cancelled.body.data.failure.code, 'CANCELLED');
    const read = await api('GET', `/v1/payments/${p.id}`);
    assert.equal(read.body.data.status, 'failed');
    assertError(await api('POST', `/v1/test_helpers/payments/${p.id}/settle`), 409, 'CONFLICT');
    assert.equal((await wallet(customer.walletId)).balance_minor, 0);
  });
});

describe('POST /v1/payments: wallet', () => {
  it('create: wallet, funded → 201 processing; the rail then completes it and the balance drops by the amount', async () => {
    const customer = await funded(200_000);
    const p = await payOk({ customer_id: customer.id, amount_minor: 50_000, method: 'wallet' });
    assert.equal(p.status, 'processing');
    assert.equal(p.method, 'wallet');
    assert.equal(p.fee_minor, 0);
    assert.equal(p.provider.type, 'wallet');
    const done = await waitFor(() => api('GET', `/v1/payments/${p.id}`), (r) => r.body.data.status === 'completed');
    assert.equal(done.body.data.status, 'completed');
    const w = await wallet(customer.walletId);
    assert.equal(w.balance_minor, customer.netMinor - 50_000);
    assert.equal(w.held_minor, 0);
    assert.equal(w.available_minor, w.balance_minor - w.held_minor);
    const t = await api('GET', `/v1/transactions/${p.transaction_id}`);
    assert.equal(t.body.data.status, 'completed');
    assert.deepEqual(t.body.data.hold, { status: 'posted', amount_minor: 50_000 });
    assert.deepEqual(t.body.data.status_history.map((h: { status: string }) => h.status), ['pending', 'processing', 'completed']);
  });

  it('create: wallet for exactly the balance → 201, balance then 0', async () => {
    const customer = await funded(100_000);
    const p = await payOk({ customer_id: customer.id, amount_minor: customer.netMinor, method: 'wallet' });
    await waitFor(() => api('GET', `/v1/payments/${p.id}`), (r) => r.body.data.status === 'completed');
    const w = await wallet(customer.walletId);
    assert.equal(w.balance_minor, 0);
    assert.equal(w.available_minor, 0);
  });

  it('create: two wallet payments that together pass the balance → the second 422 INSUFFICIENT_FUNDS', async () => {
    const customer = await funded(100_000);
    const half = Math.floor(customer.netMinor / 2) + 1;
    assert.equal((await pay({ customer_id: customer.id, amount_minor: half, method: 'wallet' })).status, 201);
    assertError(await pay({ customer_id: customer.id, amount_minor: half, method: 'wallet' }), 422, 'INSUFFICIENT_FUNDS');
  });

  it('create: the country’s method bounds are in the home currency: USD 0.99 from a USD wallet → 201; NGN 0.99 → 400; card in USD → 422 METHOD_NOT_SELECTABLE', async () => {
    const customer = await funded(2_000_000);
    const methods = await methodsOf(customer.id);
    const walletMin = methods.get('wallet')?.min_amount_minor ?? 0;
    assert.ok(walletMin >= 100, 'NG wallet payments have a minimum in kobo');
    const quote = (await api('POST', '/v1/exchange/quotes', { body: { customer_id: customer.id, from_currency: 'NGN', to_currency: 'USD', from_amount_minor: 1_000_000 } })).body.data;
    const exchanged = await api('POST', '/v1/exchange', { idempotencyKey: idem('fx'), body: { quote_id: quote.id } });
    assert.equal(exchanged.status, 201, JSON.stringify(exchanged.body));
    assert.ok(quote.to_amount_minor > 99);
    const usd = await pay({ customer_id: customer.id, amount_minor: 99, currency: 'USD', method: 'wallet' });
    assert.equal(usd.status, 201, `USD 0.99 is not compared with a minimum in kobo: ${JSON.stringify(usd.body)}`);
    assertError(await pay({ customer_id: customer.id, amount_minor: walletMin - 1, method: 'wallet' }), 400, 'VALIDATION');
    assertError(await pay({ customer_id: customer.id, amount_minor: 2_000, currency: 'USD', method: 'card' }), 422, 'METHOD_NOT_SELECTABLE');
  });
});

describe('GET /v1/payments/{id}', () => {
  it('get: own payment → 200 with the same fields as at creation', async () => {
    const customer = await newCustomer();
    const p = await payOk({ customer_id: customer.id, amount_minor: 40_000, method: 'bank_transfer' });
    const read = await api('GET', `/v1/payments/${p.id}`);
    assert.equal(read.status, 200);
    assert.deepEqual(read.body.data, p);
  });

  it('get: another account\'s payment → 403 FORBIDDEN', async () => {
    const foreign = await newCustomer(apiOther);
    const p = await payOk({ customer_id: foreign.id, amount_minor: 40_000, method: 'bank_transfer' }, apiOther);
    assertError(await api('GET', `/v1/payments/${p.id}`), 403, 'FORBIDDEN');
    assertError(await api('POST', `/v1/test_helpers/payments/${p.id}/settle`), 403, 'FORBIDDEN');
    assert.equal((await apiOther('GET', `/v1/payments/${p.id}`)).body.data.status, 'pending');
  });

  it('get: unknown payment → 404 NOT_FOUND; malformed id → 400 VALIDATION', async () => {
    assertError(await api('GET', `/v1/payments/${mintId(11, Date.now())}`), 404, 'NOT_FOUND');
    assertError(await api('GET', '/v1/payments/pay_1'), 400, 'VALIDATION');
  });

  it('settle helper: unknown payment → 404 NOT_FOUND', async () => {
    assertError(await api('POST', `/v1/test_helpers/payments/${mintId(11, Date.now())}/settle`), 404, 'NOT_FOUND');
  });
});

describe('sandbox and live', () => {
  it('test helpers with a live key → 404 NOT_FOUND (a live collection without a connector is not offered: 422)', async () => {
    const customer = await newCustomer(apiLive);
    assertError(await pay({ customer_id: customer.id, amount_minor: 40_000, method: 'bank_transfer' }, apiLive), 422, 'METHOD_NOT_SELECTABLE');
    const someId = mintId(11, Date.now());
    assertError(await apiLive('POST', `/v1/test_helpers/payments/${someId}/settle`), 404, 'NOT_FOUND');
    assertError(await apiLive('POST', `/v1/test_helpers/payments/${someId}/fail`), 404, 'NOT_FOUND');
    assertError(await apiLive('POST', '/v1/test_helpers/clock/advance', { body: { seconds: 60 } }), 404, 'NOT_FOUND');
  });

  it('get: a sandbox payment with a live key → 404 NOT_FOUND (sandbox and live never mix)', async () => {
    const customer = await newCustomer();
    const p = await payOk({ customer_id: customer.id, amount_minor: 40_000, method: 'bank_transfer' });
    assertError(await apiLive('GET', `/v1/payments/${p.id}`), 404, 'NOT_FOUND');
  });
});

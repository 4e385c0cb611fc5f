// The gaps an outside audit found between the spec and the running server (issue #11), each reproduced
// over real HTTP: order recipient checks, operator_code, per-method bounds and quote binding, the
// pending step, customer-scoped order reads, exchange inputs, service selectors, limits before funds
// and on retries, honest transactions (hold, event_key), cross-border mobile money.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey, startServer, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { until } from '../helpers/wait.ts';

const key = secretKey();
let server: TestServer;
let api: ReturnType<typeof client>;
let receiver: Receiver;

before(async () => {
  [server, receiver] = await Promise.all([startServer({ keys: [`${key}@audit`] }), startReceiver()]);
  api = client(server.baseUrl, key);
});
after(async () => Promise.all([server.stop(), receiver.close()]));

let seq = 0;
/** A valid NG MTN number (0803) whose last four digits avoid the sandbox's magic endings. */
function mtnPhone(): string {
  seq += 1;
  return `+234803${String(100 + (seq % 800)).padStart(3, '0')}${String(1_000 + (seq % 8_000)).padStart(4, '0')}`;
}

async function customer(fundMinor: number, country: 'NG' | 'GB' = 'NG', kycLevel = 2): Promise<{ id: string; walletId: string }> {
  seq += 1;
  const phone = country === 'NG' ? uniquePhone() : `+4479111${String(10_000 + seq).slice(-5)}`;
  const c = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: 'Audit Customer', email: uniqueEmail(), phone, country_code: country } });
  assert.equal(c.status, 201, JSON.stringify(c.body));
  assert.equal((await api('PATCH', `/v1/customers/${c.body.data.id}`, { body: { kyc_level: kycLevel } })).status, 200);
  for (let left = fundMinor; left > 0; left -= 10_000_000) {
    const p = await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: c.body.data.id, amount_minor: Math.min(left, 10_000_000), currency: c.body.data.wallets[0].currency, method: 'bank_transfer' } });
    assert.equal(p.status, 201, JSON.stringify(p.body));
    assert.equal((await api('POST', `/v1/test_helpers/payments/${p.body.data.id}/settle`)).status, 200);
  }
  return { id: c.body.data.id, walletId: c.body.data.wallets[0].id };
}

const order = (body: Record<string, unknown>) => api('POST', '/v1/services/orders', { idempotencyKey: idem('order'), body });
const errorOf = (r: { status: number; body: any }): [number, string | undefined] => [r.status, r.body?.error?.code];

/** A complete NG order body for `service` with `recipient` in the field the service reads. */
async function orderBody(customerId: string, service: string, recipient: string): Promise<Record<string, unknown>> {
  const q = `country=NG&customer_id=${customerId}`;
  const definition = (await api('GET', `/v1/services/${service}?${q}`)).body.data;
  const operator = (await api('GET', `/v1/services/${service}/operators?${q}`)).body.data.items[0].code as string;
  const variants = (await api('GET', `/v1/services/${service}/variants?${q}`)).body.data.items as Array<{ code: string }>;
  const body: Record<string, unknown> = { customer_id: customerId, country_code: 'NG', service_code: service, currency: 'NGN', payment_method: 'wallet', operator_code: operator };
  if (variants[0] !== undefined) body.meter_type = variants[0].code;
  if (definition.pricing === 'fixed') {
    const plans = (await api('GET', `/v1/services/${service}/plans?${q}&operator=${operator}`)).body.data.items as Array<{ code: string; amount_minor: number }>;
    const plan = plans.find((p) => p.amount_minor <= 5_000_000);
    assert.ok(plan !== undefined, `${service}: a plan of ${operator}`);
    body.product_code = plan.code;
    body.provider_cost_minor = plan.amount_minor;
  } else {
    body.provider_cost_minor = definition.limits.min_amount_minor;
  }
  if (definition.recipient === 'phone') body.phone = recipient;
  else body.account_ref = recipient;
  return body;
}

describe('1. service orders check the recipient like validate', () => {
  it('the audit’s reproductions: phone "12345", a Kenyan number on NG airtime, electricity account_ref "1", gift card to "not-an-email" → 400 VALIDATION (the order’s code), nothing held', async () => {
    const c = await customer(10_000_000);
    for (const [service, recipient] of [['airtime', '12345'], ['airtime', '+254712345678'], ['electricity', '1'], ['gift_cards', 'not-an-email']] as const) {
      const r = await order(await orderBody(c.id, service, recipient));
      assert.deepEqual(errorOf(r), [400, 'VALIDATION'], `${service} ${recipient}: ${JSON.stringify(r.body)}`);
    }
    assert.equal((await api('GET', `/v1/wallets/${c.walletId}`)).body.data.held_minor, 0);
    const quote = await api('POST', '/v1/services/quote', { body: { customer_id: c.id, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 10_000, currency: 'NGN', phone: '12345' } });
    assert.deepEqual(errorOf(quote), [400, 'VALIDATION'], 'a quote naming a recipient checks it too');
  });

  it('every NG service refuses a recipient that does not fit its rule, and accepts one that does', async () => {
    const c = await customer(30_000_000);
    const good: Record<string, string> = {
      airtime: mtnPhone(), data: mtnPhone(), electricity: '45121231234', water: 'LSW-123456', internet: 'SPX123456', tv: '7012345678',
      betting: 'BETTOR123', gift_cards: 'friend@example.com', education: 'CAND12345', insurance: 'POL-12345',
    };
    for (const [service, recipient] of Object.entries(good)) {
      const bad = await order(await orderBody(c.id, service, service === 'gift_cards' ? 'nobody' : service === 'airtime' || service === 'data' ? '12345' : '1'));
      assert.deepEqual(errorOf(bad), [400, 'VALIDATION'], `${service}: ${JSON.stringify(bad.body)}`);
      const ok = await order(await orderBody(c.id, service, recipient));
      assert.equal(ok.status, 201, `${service}: ${JSON.stringify(ok.body)}`);
    }
  });

  it('the phone is stored in E.164 (a national-format number is normalised)', async () => {
    const c = await customer(1_000_000);
    const r = await order({ customer_id: c.id, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 10_000, currency: 'NGN', payment_method: 'wallet', phone: '0803 123 4567' });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.equal(r.body.data.order.phone, '+2348031234567');
  });

  it('validation_snapshot: a recipient validate reported not serviceable → 400 VALIDATION; a snapshot about another recipient is ignored', async () => {
    const c = await customer(5_000_000);
    const blocked = '45121230003';
    const validated = await api('POST', '/v1/services/electricity/validate', { body: { customer_id: c.id, country_code: 'NG', account_ref: blocked, operator_code: 'IKEDC', meter_type: 'prepaid' } });
    assert.equal(validated.status, 200, JSON.stringify(validated.body));
    assert.equal(validated.body.data.serviceability.serviceable, false);
    const base = { customer_id: c.id, country_code: 'NG', service_code: 'electricity', provider_cost_minor: 500_000, currency: 'NGN', payment_method: 'wallet', operator_code: 'IKEDC', meter_type: 'prepaid', validation_snapshot: validated.body.data };
    assert.deepEqual(errorOf(await order({ ...base, account_ref: blocked })), [400, 'VALIDATION']);
    const other = await order({ ...base, account_ref: '45121231234' });
    assert.equal(other.status, 201, JSON.stringify(other.body));
  });
});

describe('2. operator_code', () => {
  it('airtime without operator_code: derived from the number, echoed on the order and in fulfillment_snapshot', async () => {
    const c = await customer(1_000_000);
    const r = await order({ customer_id: c.id, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 10_000, currency: 'NGN', payment_method: 'wallet', phone: mtnPhone() });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.equal(r.body.data.order.operator_code, 'MTN');
    const done = await until(() => api('GET', `/v1/services/orders/${r.body.data.order.id}`).then((x) => x.body.data), (o) => o.status === 'completed', 'completed');
    assert.equal(done.fulfillment_snapshot.operator_code, 'MTN');
  });

  it('electricity (eleven distribution companies) without operator_code → 400 VALIDATION', async () => {
    const c = await customer(1_000_000);
    const r = await order({ customer_id: c.id, country_code: 'NG', service_code: 'electricity', provider_cost_minor: 500_000, currency: 'NGN', payment_method: 'wallet', meter_type: 'prepaid', account_ref: '45121231234' });
    assert.deepEqual(errorOf(r), [400, 'VALIDATION']);
    assert.match(r.body.error.message, /operator_code/);
  });
});

describe('3. per-method bounds and quote binding', () => {
  it('a 5,000 card airtime order under the card minimum of 10,000 → 400 VALIDATION', async () => {
    const c = await customer(0);
    const r = await order({ customer_id: c.id, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 5_000, currency: 'NGN', payment_method: 'card', phone: mtnPhone() });
    assert.deepEqual(errorOf(r), [400, 'VALIDATION'], JSON.stringify(r.body));
  });

  it('a quote made without payment_method binds the method it priced: a card order on it → 409 QUOTE_MISMATCH', async () => {
    const c = await customer(1_000_000);
    const phone = mtnPhone();
    const body = { customer_id: c.id, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 50_000, currency: 'NGN', phone };
    const q = await api('POST', '/v1/services/quote', { body });
    assert.equal(q.status, 200, JSON.stringify(q.body));
    assert.equal(q.body.data.payment_method, 'wallet');
    const card = await order({ ...body, payment_method: 'card', quote_id: q.body.data.quote_id });
    assert.deepEqual(errorOf(card), [409, 'QUOTE_MISMATCH']);
    assert.equal((await order({ ...body, payment_method: 'wallet', quote_id: q.body.data.quote_id })).status, 201);
  });

  it('a quote for a method the customer cannot use (card below its KYC level) → 422 METHOD_NOT_SELECTABLE at quote time', async () => {
    const c = await customer(0, 'GB', 0);
    const q = await api('POST', '/v1/services/quote', { body: { customer_id: c.id, country_code: 'GB', service_code: 'gift_cards', provider_cost_minor: 2_500, currency: 'GBP', payment_method: 'card' } });
    assert.deepEqual(errorOf(q), [422, 'METHOD_NOT_SELECTABLE'], JSON.stringify(q.body));
  });
});

describe('4. order creation shows pending', () => {
  it('the create response is pending with its payment; opening the collection is its own step (status poll and history)', async () => {
    const c = await customer(0);
    const r = await order({ customer_id: c.id, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 30_000, currency: 'NGN', payment_method: 'card', phone: mtnPhone() });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.equal(r.body.data.order.status, 'pending');
    assert.equal(r.body.data.payment.status, 'pending');
    assert.ok(r.body.data.order.payment_transaction_id !== null);
    const id = r.body.data.order.id;
    await until(() => api('GET', `/v1/services/orders/${id}/status`).then((x) => x.body.data), (s) => s.status === 'awaiting_payment', 'awaiting_payment');
    const full = (await api('GET', `/v1/services/orders/${id}`)).body.data;
    assert.deepEqual(full.status_history.map((h: { status: string }) => h.status), ['pending', 'awaiting_payment']);
  });
});

describe('5. order reads are scoped to the customer named', () => {
  it('another customer of the same account → 404 on detail and status; the owner → 200', async () => {
    const owner = await customer(1_000_000);
    const other = await customer(0);
    const r = await order({ customer_id: owner.id, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 10_000, currency: 'NGN', payment_method: 'wallet', phone: mtnPhone() });
    const id = r.body.data.order.id;
    for (const suffix of ['', '/status']) {
      assert.deepEqual(errorOf(await api('GET', `/v1/services/orders/${id}${suffix}?customer_id=${other.id}`)), [404, 'NOT_FOUND']);
      assert.equal((await api('GET', `/v1/services/orders/${id}${suffix}?customer_id=${owner.id}`)).status, 200);
    }
  });
});

describe('6. exchange', () => {
  it('customer_id accepted (another customer’s → 404); an unknown quote_id → 400 VALIDATION; the transaction shows both legs and links the exchange', async () => {
    const c = await customer(1_000_000);
    const other = await customer(0);
    const quote = (await api('POST', '/v1/exchange/quotes', { body: { customer_id: c.id, from_currency: 'NGN', to_currency: 'GHS', from_amount_minor: 500_000 } })).body.data;
    assert.deepEqual(errorOf(await api('POST', '/v1/exchange', { idempotencyKey: idem(), body: { quote_id: quote.id, customer_id: other.id } })), [404, 'NOT_FOUND']);
    assert.deepEqual(errorOf(await api('POST', '/v1/exchange', { idempotencyKey: idem(), body: { quote_id: '01ARZ3NDEKTSV4RRFFQ69G5FAV' } })), [400, 'VALIDATION']);
    const done = await api('POST', '/v1/exchange', { idempotencyKey: idem(), body: { quote_id: quote.id, customer_id: c.id } });
    assert.equal(done.status, 201, JSON.stringify(done.body));
    const txn = (await api('GET', `/v1/transactions/${done.body.data.transaction_id}`)).body.data;
    assert.equal(txn.exchange_id, done.body.data.id);
    assert.deepEqual([txn.from_amount_minor, txn.from_currency, txn.to_amount_minor, txn.to_currency], [500_000, 'NGN', quote.to_amount_minor, 'GHS']);
  });
});

describe('7. service selectors are consistent', () => {
  it('availability, definition, payment-methods, operators, plans, variants and validate all take country and customer_id', async () => {
    const c = await customer(0);
    const q = `country=NG&customer_id=${c.id}`;
    const availability = await api('GET', `/v1/services/airtime/availability?${q}`);
    assert.equal(availability.status, 200, JSON.stringify(availability.body));
    assert.equal(availability.body.data.default_country_code, 'NG');
    for (const path of ['', '/payment-methods', '/operators', '/plans', '/variants']) {
      const r = await api('GET', `/v1/services/electricity${path}?${q}${path === '/plans' ? '&operator=IKEDC' : ''}`);
      assert.equal(r.status, 200, `${path}: ${JSON.stringify(r.body)}`);
    }
    const validated = await api('POST', `/v1/services/airtime/validate?${q}`, { body: { account_ref: mtnPhone() } });
    assert.equal(validated.status, 200, JSON.stringify(validated.body));
  });

  it('open-amount plans need no operator: NG airtime (four networks) → the open_amount plan', async () => {
    const c = await customer(0);
    const r = await api('GET', `/v1/services/airtime/plans?country=NG&customer_id=${c.id}`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.data.items[0].code, 'open_amount');
    assert.equal(r.body.data.operator_code, null);
  });
});

async function bankBeneficiary(customerId: string, accountNumber: string): Promise<string> {
  const r = await api('POST', '/v1/beneficiaries', { idempotencyKey: idem(), body: { customer_id: customerId, type: 'bank_account', bank_code: '058', account_number: accountNumber, currency: 'NGN' } });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body.data.id;
}

describe('9. limits', () => {
  it('a transfer retry checks the daily limit: usage 49,500,000 + a 1,000,000 retry over the 50,000,000 limit → 422 LIMIT_EXCEEDED', async () => {
    const c = await customer(2_000_000);
    const failing = await bankBeneficiary(c.id, '0123459999');
    const t = await api('POST', '/v1/transfers', { idempotencyKey: idem(), body: { customer_id: c.id, beneficiary_id: failing, amount_minor: 1_000_000, currency: 'NGN' } });
    assert.equal(t.status, 201, JSON.stringify(t.body));
    await until(() => api('GET', `/v1/transactions/${t.body.data.transaction_id}`).then((x) => x.body.data), (x) => x.status === 'failed', 'failed');
    // Funding counted 2,000,000 today; bare transactions take usage to 49,500,000.
    for (const amount of [10_000_000, 10_000_000, 10_000_000, 10_000_000, 7_500_000]) {
      const x = await api('POST', '/v1/transactions', { idempotencyKey: idem(), body: { type: 'funding', customer_id: c.id, amount_minor: amount, currency: 'NGN' } });
      assert.equal(x.status, 201, JSON.stringify(x.body));
    }
    const retry = await api('POST', `/v1/transactions/${t.body.data.transaction_id}/retry`, { idempotencyKey: idem() });
    assert.deepEqual(errorOf(retry), [422, 'LIMIT_EXCEEDED'], JSON.stringify(retry.body));
    assert.equal((await api('GET', `/v1/wallets/${c.walletId}`)).body.data.held_minor, 0, 'nothing held again');
  });

  it('LIMIT_EXCEEDED before INSUFFICIENT_FUNDS: a 60,000,000 transfer, wallet payment and exchange from an empty wallet', async () => {
    const c = await customer(0);
    const b = await bankBeneficiary(c.id, '0123456789');
    const transfer = await api('POST', '/v1/transfers', { idempotencyKey: idem(), body: { customer_id: c.id, beneficiary_id: b, amount_minor: 60_000_000, currency: 'NGN' } });
    assert.deepEqual(errorOf(transfer), [422, 'LIMIT_EXCEEDED']);
    const payment = await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: c.id, amount_minor: 60_000_000, currency: 'NGN', method: 'wallet' } });
    assert.deepEqual(errorOf(payment), [422, 'LIMIT_EXCEEDED']);
    const quote = (await api('POST', '/v1/exchange/quotes', { body: { customer_id: c.id, from_currency: 'NGN', to_currency: 'GHS', from_amount_minor: 60_000_000 } })).body.data;
    assert.deepEqual(errorOf(await api('POST', '/v1/exchange', { idempotencyKey: idem(), body: { quote_id: quote.id } })), [422, 'LIMIT_EXCEEDED']);
    const service = await order({ customer_id: c.id, country_code: 'NG', service_code: 'electricity', operator_code: 'IKEDC', meter_type: 'prepaid', account_ref: '45121231234', provider_cost_minor: 10_000_000, currency: 'NGN', payment_method: 'wallet' });
    assert.deepEqual(errorOf(service), [422, 'LIMIT_EXCEEDED']);
  });
});

describe('10. transactions tell the truth', () => {
  it('hold.amount_minor of a transfer is amount + fee', async () => {
    const c = await customer(1_000_000);
    const b = await bankBeneficiary(c.id, '0123456789');
    const t = await api('POST', '/v1/transfers', { idempotencyKey: idem(), body: { customer_id: c.id, beneficiary_id: b, amount_minor: 100_000, currency: 'NGN' } });
    assert.equal(t.status, 201);
    // Wallet first: a hold still placed when the transaction is read afterwards was placed at the wallet read.
    const wallet = (await api('GET', `/v1/wallets/${c.walletId}`)).body.data;
    const txn = (await api('GET', `/v1/transactions/${t.body.data.transaction_id}`)).body.data;
    assert.equal(txn.hold.amount_minor, 100_000 + t.body.data.fee_minor);
    if (txn.hold.status === 'held') assert.equal(wallet.held_minor, txn.hold.amount_minor, 'the wallet holds what the transaction says');
  });

  it('event_key: a retried transfer that fails again → transfer.failed:<txn> then transfer.failed:<txn>:2', async () => {
    const sub = await api('POST', '/v1/webhooks/subscriptions', { idempotencyKey: idem(), body: { url: receiver.url, events: ['transfer.failed'] } });
    assert.equal(sub.status, 201, JSON.stringify(sub.body));
    const c = await customer(1_000_000);
    const failing = await bankBeneficiary(c.id, '0123459999');
    const t = await api('POST', '/v1/transfers', { idempotencyKey: idem(), body: { customer_id: c.id, beneficiary_id: failing, amount_minor: 100_000, currency: 'NGN' } });
    const txnId = t.body.data.transaction_id as string;
    await until(() => api('GET', `/v1/transactions/${txnId}`).then((x) => x.body.data), (x) => x.status === 'failed', 'failed');
    assert.equal((await api('POST', `/v1/transactions/${txnId}/retry`, { idempotencyKey: idem() })).status, 200);
    await until(() => api('GET', `/v1/transactions/${txnId}`).then((x) => x.body.data), (x) => x.status === 'failed' && x.attempt === 2, 'failed again');
    const keys = await until(
      async () => receiver.received.filter((r) => r.body?.data?.transaction_id === txnId).map((r) => r.body.event_key as string),
      (k) => k.length >= 2,
      'two deliveries',
    );
    assert.deepEqual([...new Set(keys)].sort(), [`transfer.failed:${txnId}`, `transfer.failed:${txnId}:2`]);
  });
});

describe('11. cross-border mobile money', () => {
  it('NGN → GHS quote to a GHS mobile-money number → 201, the fee priced on the GHS rail and held in NGN; the payout completes', async () => {
    const c = await customer(2_000_000);
    const b = await api('POST', '/v1/beneficiaries', { idempotencyKey: idem(), body: { customer_id: c.id, type: 'mobile_money', bank_code: 'MTN', account_number: '+233241234567', currency: 'GHS', country: 'GH' } });
    assert.equal(b.status, 201, JSON.stringify(b.body));
    const quote = (await api('POST', '/v1/exchange/quotes', { body: { customer_id: c.id, from_currency: 'NGN', to_currency: 'GHS', from_amount_minor: 1_000_000 } })).body.data;
    const t = await api('POST', '/v1/transfers', { idempotencyKey: idem(), body: { customer_id: c.id, beneficiary_id: b.body.data.id, amount_minor: 1_000_000, currency: 'NGN', quote_id: quote.id } });
    assert.equal(t.status, 201, JSON.stringify(t.body));
    assert.equal(t.body.data.destination_currency, 'GHS');
    assert.equal(t.body.data.destination_amount_minor, quote.to_amount_minor);
    assert.ok(t.body.data.fee_minor > 0, 'the GHS mobile-money fee, in NGN');
    const txn = await until(() => api('GET', `/v1/transactions/${t.body.data.transaction_id}`).then((x) => x.body.data), (x) => x.status === 'completed', 'completed');
    assert.equal(txn.hold.amount_minor, 1_000_000 + t.body.data.fee_minor);
  });
});

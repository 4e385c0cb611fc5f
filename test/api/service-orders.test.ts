// Service purchases end to end over HTTP (the spec's purchase flow, steps 1–9) for airtime, data,
// electricity (prepaid and postpaid), tv and education; quote binding, every order error code,
// wallet holds posted or released with the outcome, and every fulfilment path of the order table.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey, startServer, uniqueEmail, type TestServer } from '../helpers/server.ts';
import { kobo } from '../helpers/cli.ts';
import { until } from '../helpers/wait.ts';

const key = secretKey();
const otherKey = secretKey();
let server: TestServer;
let api: ReturnType<typeof client>;

before(async () => {
  server = await startServer({ keys: [`${key}@shop`, `${otherKey}@shop-other`] });
  api = client(server.baseUrl, key);
});
after(async () => server.stop());

let phoneSeq = 0;
/** A valid NG MTN number (0803 prefix) whose last four digits avoid the magic endings unless asked. */
function mtnPhone(ending?: string): string {
  phoneSeq += 1;
  const tail = ending ?? String(1_000 + (phoneSeq % 8_000)).padStart(4, '0');
  return `+234803${String(100 + (phoneSeq % 800)).padStart(3, '0')}${tail}`;
}

async function customer(fundMinor: number, country: 'NG' | 'GH' | 'GB' = 'NG'): Promise<{ id: string; walletId: string; balance: number }> {
  const phone = country === 'NG' ? mtnPhone() : country === 'GH' ? `+23324${String(1_000_000 + phoneSeq++).slice(-7)}` : `+4479111${String(10_000 + phoneSeq++).slice(-5)}`;
  const c = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: 'Shopper', email: uniqueEmail(), phone, country_code: country } });
  assert.equal(c.status, 201, JSON.stringify(c.body));
  // Bank transfers in some markets need a verified customer (KYC level 2).
  assert.equal((await api('PATCH', `/v1/customers/${c.body.data.id}`, { body: { kyc_level: 2 } })).status, 200);
  let balance = 0;
  for (let left = fundMinor; left > 0; left -= 10_000_000) {
    const p = await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: c.body.data.id, amount_minor: Math.min(left, 10_000_000), currency: c.body.data.wallets[0].currency, method: 'bank_transfer' } });
    assert.equal(p.status, 201, JSON.stringify(p.body));
    assert.equal((await api('POST', `/v1/test_helpers/payments/${p.body.data.id}/settle`)).status, 200);
    balance += p.body.data.net_amount_minor as number;
  }
  return { id: c.body.data.id, walletId: c.body.data.wallets[0].id, balance };
}


const statusOf = (id: string) => () => api('GET', `/v1/services/orders/${id}/status`).then((r) => r.body.data);

async function order(body: Record<string, unknown>, headers: Record<string, string> = {}) {
  return api('POST', '/v1/services/orders', { idempotencyKey: idem('order'), body, headers });
}

describe('purchase flows (steps 1–9)', () => {
  it('airtime (open amount, phone): catalogue → definition → operators → plans → validate → quote → order → completed', async () => {
    const c = await customer(2_000_000);
    const catalogue = await api('GET', `/v1/services?country=NG&customer_id=${c.id}`);
    assert.equal(catalogue.status, 200, JSON.stringify(catalogue.body));
    assert.ok(catalogue.body.data.items.some((i: { service_code: string }) => i.service_code === 'airtime'));
    assert.equal((await api('GET', `/v1/services/airtime?country=NG&customer_id=${c.id}`)).status, 200);
    const operators = (await api('GET', `/v1/services/airtime/operators?country=NG&customer_id=${c.id}`)).body.data.items;
    assert.ok(operators.some((o: { code: string }) => o.code === 'MTN'));
    const plans = (await api('GET', `/v1/services/airtime/plans?country=NG&operator=MTN&customer_id=${c.id}`)).body.data;
    assert.equal(plans.items[0].code, 'open_amount');
    const phone = mtnPhone();
    const validated = await api('POST', '/v1/services/airtime/validate', { body: { customer_id: c.id, country_code: 'NG', account_ref: phone, phone, operator_code: 'MTN' } });
    assert.equal(validated.status, 200, JSON.stringify(validated.body));
    assert.equal(validated.body.data.phone_validation.normalized, phone);
    const quote = await api('POST', '/v1/services/quote', { body: { customer_id: c.id, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 50_000, currency: 'NGN', payment_method: 'wallet', phone } });
    assert.equal(quote.status, 200, JSON.stringify(quote.body));
    const q = quote.body.data;
    assert.equal(q.cross_currency, false);
    assert.equal(q.fx_rate, null);
    assert.equal(q.customer_amount_minor, 50_000 + q.fee_minor, 'same-currency rule');
    const created = await order({ customer_id: c.id, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 50_000, currency: 'NGN', payment_method: 'wallet', quote_id: q.quote_id, operator_code: 'MTN', phone, validation_snapshot: validated.body.data });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const o = created.body.data.order;
    assert.equal(created.body.data.payment.status, 'processing', 'wallet: the debit is inline');
    assert.equal(o.customer_amount_minor, q.customer_amount_minor);
    assert.equal((await api('GET', `/v1/wallets/${c.walletId}`)).body.data.held_minor, o.customer_amount_minor);
    const done = await until(statusOf(o.id), (s) => s.status === 'completed', 'completed');
    assert.match(done.provider_reference, /^SVC-/);
    assert.ok(done.fulfillment_snapshot !== null);
    const wallet = (await api('GET', `/v1/wallets/${c.walletId}`)).body.data;
    assert.equal(wallet.balance_minor, c.balance - o.customer_amount_minor, 'debited once');
    assert.equal(wallet.held_minor, 0);
    const txn = (await api('GET', `/v1/transactions/${o.transaction_id}`)).body.data;
    assert.equal(txn.type, 'service');
    assert.equal(txn.status, 'completed');
  });

  it('data (fixed price): the plan amount is the provider cost; a different amount → 400', async () => {
    const c = await customer(2_000_000);
    const plans = (await api('GET', `/v1/services/data/plans?country=NG&operator=MTN&customer_id=${c.id}`)).body.data;
    const plan = plans.items.find((p: { amount_minor: number | null }) => p.amount_minor !== null);
    assert.ok(plan, JSON.stringify(plans));
    const base = { customer_id: c.id, country_code: 'NG', service_code: 'data', currency: 'NGN', payment_method: 'wallet', operator_code: 'MTN', phone: mtnPhone() };
    const wrong = await order({ ...base, provider_cost_minor: plan.amount_minor + 1, product_code: plan.code });
    assert.equal(wrong.status, 400);
    const ok = await order({ ...base, provider_cost_minor: plan.amount_minor, product_code: plan.code });
    assert.equal(ok.status, 201, JSON.stringify(ok.body));
    await until(statusOf(ok.body.data.order.id), (s) => s.status === 'completed', 'completed');
  });

  for (const meter of ['prepaid', 'postpaid']) {
    it(`electricity (${meter}): validate the meter, order → completed with a fulfillment snapshot`, async () => {
      const c = await customer(5_000_000);
      const variants = (await api('GET', `/v1/services/electricity/variants?country=NG&customer_id=${c.id}`)).body.data.items;
      assert.ok(variants.some((v: { code: string }) => v.code === meter), JSON.stringify(variants));
      const operator = (await api('GET', `/v1/services/electricity/operators?country=NG&customer_id=${c.id}`)).body.data.items[0].code;
      const meterNo = `4512${String(Date.now()).slice(-6)}7`;
      const validated = await api('POST', '/v1/services/electricity/validate', { body: { customer_id: c.id, country_code: 'NG', account_ref: meterNo, operator_code: operator, meter_type: meter } });
      assert.equal(validated.status, 200, JSON.stringify(validated.body));
      assert.equal(validated.body.data.valid, true);
      const created = await order({ customer_id: c.id, country_code: 'NG', service_code: 'electricity', provider_cost_minor: 500_000, currency: 'NGN', payment_method: 'wallet', operator_code: operator, meter_type: meter, account_ref: meterNo });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const done = await until(() => api('GET', `/v1/services/orders/${created.body.data.order.id}`).then((r) => r.body.data), (o) => o.status === 'completed', 'completed');
      assert.equal(done.meter_type, meter);
      assert.ok(done.fulfillment_snapshot !== null);
      if (meter === 'prepaid') assert.match(String(done.fulfillment_snapshot.token).replace(/-/g, ''), /^\d{20}$/, 'a 20-digit token');
    });
  }

  it('electricity without meter_type → 400', async () => {
    const c = await customer(1_000_000);
    const operator = (await api('GET', `/v1/services/electricity/operators?country=NG&customer_id=${c.id}`)).body.data.items[0].code;
    const r = await order({ customer_id: c.id, country_code: 'NG', service_code: 'electricity', provider_cost_minor: 500_000, currency: 'NGN', payment_method: 'wallet', operator_code: operator, account_ref: '45120000007' });
    assert.equal(r.status, 400);
  });

  for (const service of ['tv', 'education']) {
    it(`${service} (fixed price): plan from the catalogue, order → completed`, async () => {
      const c = await customer(10_000_000);
      const operator = (await api('GET', `/v1/services/${service}/operators?country=NG&customer_id=${c.id}`)).body.data.items[0].code;
      const plans = (await api('GET', `/v1/services/${service}/plans?country=NG&operator=${operator}&customer_id=${c.id}`)).body.data.items;
      const plan = plans.find((p: { amount_minor: number | null }) => p.amount_minor !== null && p.amount_minor <= 5_000_000);
      assert.ok(plan, JSON.stringify(plans));
      const created = await order({ customer_id: c.id, country_code: 'NG', service_code: service, provider_cost_minor: plan.amount_minor, currency: 'NGN', payment_method: 'wallet', operator_code: operator, product_code: plan.code, account_ref: `70${String(Date.now()).slice(-8)}` });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const done = await until(statusOf(created.body.data.order.id), (s) => s.status === 'completed', 'completed');
      assert.ok(done.fulfillment_snapshot !== null);
    });
  }
});

describe('orders: errors and binding', () => {
  it('idempotency: header or body key; same key replays; different body → 409 IDEMPOTENCY_REPLAY; none → 422', async () => {
    const c = await customer(2_000_000);
    const body = { customer_id: c.id, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 10_000, currency: 'NGN', payment_method: 'wallet', phone: mtnPhone() };
    const k = idem('body-key');
    const first = await api('POST', '/v1/services/orders', { body: { ...body, idempotency_key: k } });
    assert.equal(first.status, 201, JSON.stringify(first.body));
    assert.equal(first.body.data.order.idempotency_key, k);
    const again = await api('POST', '/v1/services/orders', { body: { ...body, idempotency_key: k } });
    assert.deepEqual(again.body, first.body);
    const changed = await api('POST', '/v1/services/orders', { body: { ...body, provider_cost_minor: 20_000, idempotency_key: k } });
    assert.equal(changed.status, 409);
    assert.equal(changed.body.error.code, 'IDEMPOTENCY_REPLAY');
    const none = await api('POST', '/v1/services/orders', { body });
    assert.equal(none.status, 422);
    assert.equal(none.body.error.code, 'IDEMPOTENCY_KEY_REQUIRED');
  });

  it('quote binding: mismatch → 409 QUOTE_MISMATCH; expired → 409 QUOTE_EXPIRED; used → 409 QUOTE_EXPIRED', async () => {
    const c = await customer(2_000_000);
    const phone = mtnPhone();
    const body = { customer_id: c.id, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 20_000, currency: 'NGN', payment_method: 'wallet', phone };
    const q = (await api('POST', '/v1/services/quote', { body })).body.data;
    const mismatch = await order({ ...body, provider_cost_minor: 21_000, quote_id: q.quote_id });
    assert.equal(mismatch.body.error.code, 'QUOTE_MISMATCH');
    const used = await order({ ...body, quote_id: q.quote_id });
    assert.equal(used.status, 201, JSON.stringify(used.body));
    assert.equal((await order({ ...body, quote_id: q.quote_id })).body.error.code, 'QUOTE_EXPIRED');
    const q2 = (await api('POST', '/v1/services/quote', { body })).body.data;
    await api('POST', '/v1/test_helpers/clock/advance', { body: { seconds: 301 } });
    const expired = await order({ ...body, quote_id: q2.quote_id });
    assert.equal(expired.status, 409);
    assert.equal(expired.body.error.code, 'QUOTE_EXPIRED');
  });

  it('cross-currency (GB customer buying NG airtime): no quote → 422 FX_QUOTE_UNAVAILABLE; with a live quote the locked price is charged', async () => {
    const c = await customer(50_000, 'GB');
    const body = { customer_id: c.id, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 100_000, currency: 'NGN', payment_method: 'wallet', phone: mtnPhone() };
    const noQuote = await order(body);
    assert.equal(noQuote.status, 422, JSON.stringify(noQuote.body));
    assert.equal(noQuote.body.error.code, 'FX_QUOTE_UNAVAILABLE');
    const q = (await api('POST', '/v1/services/quote', { body })).body.data;
    assert.equal(q.cross_currency, true);
    assert.equal(q.source_currency, 'GBP');
    assert.match(q.fx_rate, /^\d+\.\d+$/);
    assert.equal(q.customer_amount_minor, q.converted_amount_minor + q.fee_minor);
    const ok = await order({ ...body, quote_id: q.quote_id });
    assert.equal(ok.status, 201, JSON.stringify(ok.body));
    assert.equal(ok.body.data.order.customer_amount_minor, q.customer_amount_minor);
    assert.equal(ok.body.data.order.currency, 'GBP');
    assert.equal(ok.body.data.order.pricing_snapshot.fx_rate, q.fx_rate);
  });

  it('errors: 403 COMPLIANCE_DENIED (666), 422 INSUFFICIENT_FUNDS, 422 LIMIT_EXCEEDED, 422 SERVICE_UNAVAILABLE, 403 SERVICE_COUNTRY_NOT_ELIGIBLE, 400 VALIDATION', async () => {
    const c = await customer(100_000);
    const base = { customer_id: c.id, country_code: 'NG', service_code: 'airtime', currency: 'NGN', payment_method: 'wallet', phone: mtnPhone() };
    const denied = await order({ ...base, provider_cost_minor: 666 });
    assert.deepEqual([denied.status, denied.body.error?.code], [403, 'COMPLIANCE_DENIED']);
    const short = await order({ ...base, provider_cost_minor: 200_000 });
    assert.deepEqual([short.status, short.body.error?.code], [422, 'INSUFFICIENT_FUNDS']);
    const overBody = { ...base, service_code: 'electricity', provider_cost_minor: 10_000_000, operator_code: 'IKEDC', meter_type: 'prepaid', account_ref: '45120000017' };
    delete (overBody as { phone?: string }).phone;
    const over = await order(overBody);
    assert.deepEqual([over.status, over.body.error?.code], [422, 'LIMIT_EXCEEDED'], JSON.stringify(over.body));
    const unavailable = await order({ ...base, country_code: 'GH', currency: 'GHS', service_code: 'betting', provider_cost_minor: 1_000, account_ref: '12345678' });
    assert.deepEqual([unavailable.status, unavailable.body.error?.code], [422, 'SERVICE_UNAVAILABLE'], 'betting is residents-only');
    const ineligible = await order({ ...base, country_code: 'KE', currency: 'KES', provider_cost_minor: 10_000 });
    assert.deepEqual([ineligible.status, ineligible.body.error?.code], [403, 'SERVICE_COUNTRY_NOT_ELIGIBLE']);
    const bad = await order({ ...base, provider_cost_minor: 1.5 });
    assert.deepEqual([bad.status, bad.body.error?.code], [400, 'VALIDATION']);
    assert.equal((await api('GET', `/v1/wallets/${c.walletId}`)).body.data.held_minor, 0, 'no rejection holds money');
  });

  it('visible but not purchasable (NG betting below its KYC level) → 422 SERVICE_NOT_EXECUTABLE', async () => {
    const c = await customer(1_000_000);
    await api('PATCH', `/v1/customers/${c.id}`, { body: { kyc_level: 0 } });
    const r = await order({ customer_id: c.id, country_code: 'NG', service_code: 'betting', provider_cost_minor: 50_000, currency: 'NGN', payment_method: 'wallet', account_ref: '12345678' });
    assert.deepEqual([r.status, r.body.error?.code], [422, 'SERVICE_NOT_EXECUTABLE']);
  });

  it('the fulfilment rail down → 502 PROVIDER_FAILURE (retry-safe: nothing held), then up again → 201', async () => {
    const c = await customer(1_000_000);
    const body = { customer_id: c.id, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 10_000, currency: 'NGN', payment_method: 'wallet', phone: mtnPhone() };
    assert.equal((await api('POST', '/v1/test_helpers/services/rails', { body: { service_code: 'airtime', country: 'NG', down: true } })).status, 200);
    const k = idem('rail');
    const down = await api('POST', '/v1/services/orders', { idempotencyKey: k, body });
    assert.deepEqual([down.status, down.body.error?.code], [502, 'PROVIDER_FAILURE']);
    assert.equal((await api('GET', `/v1/wallets/${c.walletId}`)).body.data.held_minor, 0);
    assert.equal((await api('POST', '/v1/test_helpers/services/rails', { body: { service_code: 'airtime', country: 'NG', down: false } })).status, 200);
    const up = await api('POST', '/v1/services/orders', { idempotencyKey: k, body });
    assert.equal(up.status, 201, 'the same key works once the rail is back');
  });

  it('quote errors: 400 VALIDATION, 403 SERVICE_COUNTRY_NOT_ELIGIBLE, 422 SERVICE_UNAVAILABLE', async () => {
    const c = await customer(0);
    const base = { customer_id: c.id, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 10_000, currency: 'NGN' };
    const bad = await api('POST', '/v1/services/quote', { body: { ...base, provider_cost_minor: -5 } });
    assert.deepEqual([bad.status, bad.body.error?.code], [400, 'VALIDATION']);
    const ineligible = await api('POST', '/v1/services/quote', { body: { ...base, country_code: 'KE', currency: 'KES' } });
    assert.deepEqual([ineligible.status, ineligible.body.error?.code], [403, 'SERVICE_COUNTRY_NOT_ELIGIBLE']);
    const unavailable = await api('POST', '/v1/services/quote', { body: { ...base, country_code: 'GH', currency: 'GHS', service_code: 'betting', provider_cost_minor: 1_000 } });
    assert.deepEqual([unavailable.status, unavailable.body.error?.code], [422, 'SERVICE_UNAVAILABLE']);
  });

  it('a method the service does not accept (card for NG betting) → 422 METHOD_NOT_SELECTABLE on quote and order; the server stays up', async () => {
    const c = await customer(1_000_000);
    await api('PATCH', `/v1/customers/${c.id}`, { body: { kyc_level: 2 } });
    const body = { customer_id: c.id, country_code: 'NG', service_code: 'betting', provider_cost_minor: 50_000, currency: 'NGN', payment_method: 'card', account_ref: '12345678' };
    const quote = await api('POST', '/v1/services/quote', { body });
    assert.deepEqual([quote.status, quote.body.error?.code], [422, 'METHOD_NOT_SELECTABLE']);
    const created = await order(body);
    assert.deepEqual([created.status, created.body.error?.code], [422, 'METHOD_NOT_SELECTABLE']);
    assert.equal((await api('GET', `/v1/customers/${c.id}`)).status, 200);
  });

  it('cross-border fee is configured in the service currency: NG customer buying GH airtime pays converted cost + converted fee', async () => {
    const c = await customer(2_000_000);
    const body = { customer_id: c.id, country_code: 'GH', service_code: 'airtime', provider_cost_minor: 1_000, currency: 'GHS', payment_method: 'wallet', phone: '+233241234567' };
    const q = await api('POST', '/v1/services/quote', { body });
    assert.equal(q.status, 200, JSON.stringify(q.body));
    assert.equal(q.body.data.source_currency, 'NGN');
    assert.equal(q.body.data.customer_amount_minor, q.body.data.converted_amount_minor + q.body.data.fee_minor);
    assert.ok(q.body.data.converted_amount_minor > 1_000 * 90, 'GHS 10.00 is about NGN 1,000');
  });

  it('PIN step-up: 403 PIN_REQUIRED without X-Transaction-Authorization, 201 with it', async () => {
    const c = await customer(1_000_000);
    await api('PATCH', `/v1/customers/${c.id}`, { body: { pin: '2468' } });
    const body = { customer_id: c.id, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 10_000, currency: 'NGN', payment_method: 'wallet', phone: mtnPhone() };
    const missing = await order(body);
    assert.deepEqual([missing.status, missing.body.error.code], [403, 'PIN_REQUIRED']);
    assert.equal((await order(body, { 'x-transaction-authorization': '2468' })).status, 201);
  });

  it('PIN step-up under one Idempotency-Key (header or body): 403 without the PIN, 403 with a wrong one, 201 with it, then that 201 replays', async () => {
    const c = await customer(1_000_000);
    await api('PATCH', `/v1/customers/${c.id}`, { body: { pin: '2468' } });
    for (const where of ['header', 'body'] as const) {
      const k = idem(`pin-${where}`);
      const body = { customer_id: c.id, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 10_000, currency: 'NGN', payment_method: 'wallet', phone: mtnPhone() };
      const send = (pin?: string) => {
        const headers: Record<string, string> = pin === undefined ? {} : { 'x-transaction-authorization': pin };
        return where === 'header'
          ? api('POST', '/v1/services/orders', { idempotencyKey: k, body, headers })
          : api('POST', '/v1/services/orders', { body: { ...body, idempotency_key: k }, headers });
      };
      const missing = await send();
      assert.deepEqual([missing.status, missing.body.error?.code], [403, 'PIN_REQUIRED'], where);
      const wrong = await send('1357');
      assert.deepEqual([wrong.status, wrong.body.error?.code], [403, 'PIN_REQUIRED'], where);
      assert.equal((await api('GET', `/v1/wallets/${c.walletId}`)).body.data.held_minor, 0, `${where}: a refused step-up holds nothing`);
      const created = await send('2468');
      assert.equal(created.status, 201, `${where}: ${JSON.stringify(created.body)}`);
      const replayed = await send('2468');
      assert.equal(replayed.status, 201, where);
      assert.equal(replayed.body.data.order.id, created.body.data.order.id, `${where}: the key replays its order`);
    }
  });

  it('an airtime order sent with phone only → account_ref is that number (a string, as the order table types it)', async () => {
    const c = await customer(1_000_000);
    const phone = mtnPhone();
    const created = await order({ customer_id: c.id, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 10_000, currency: 'NGN', payment_method: 'wallet', phone });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.deepEqual([created.body.data.order.account_ref, created.body.data.order.phone], [phone, phone]);
    const read = (await api('GET', `/v1/services/orders/${created.body.data.order.id}`)).body.data;
    assert.equal(read.account_ref, phone);
  });

  it('an order priced from a promotion quote keeps the promotion code beside its discount in pricing_snapshot', async () => {
    const c = await customer(1_000_000);
    const phone = mtnPhone();
    const quote = await api('POST', '/v1/services/quote', { body: { customer_id: c.id, country_code: 'NG', service_code: 'data', provider_cost_minor: 35_000, currency: 'NGN', payment_method: 'card', promotion_code: 'DATA5', phone } });
    assert.equal(quote.status, 200, JSON.stringify(quote.body));
    assert.equal(quote.body.data.promotion_code, 'DATA5');
    assert.ok(quote.body.data.promotion_discount_minor > 0, 'DATA5 discounts this fee');
    const plans = (await api('GET', `/v1/services/data/plans?country=NG&operator=MTN&customer_id=${c.id}`)).body.data.items as Array<{ code: string; amount_minor: number | null }>;
    const plan = plans.find((p) => p.amount_minor === 35_000);
    assert.ok(plan !== undefined, 'an MTN plan of NGN 350.00');
    const created = await order({ customer_id: c.id, country_code: 'NG', service_code: 'data', provider_cost_minor: 35_000, currency: 'NGN', payment_method: 'card', product_code: plan.code, phone, quote_id: quote.body.data.quote_id });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const pricing = created.body.data.order.pricing_snapshot;
    assert.equal(pricing.promotion_code, 'DATA5');
    assert.equal(pricing.promotion_discount_minor, quote.body.data.promotion_discount_minor);
    assert.equal(pricing.fee_minor, quote.body.data.fee_minor);
  });

  it('a quote while the fulfilment rail is down → 502 PROVIDER_FAILURE that asks for no Idempotency-Key (quotes take none)', async () => {
    const c = await customer(0);
    assert.equal((await api('POST', '/v1/test_helpers/services/rails', { body: { service_code: 'data', country: 'NG', down: true } })).status, 200);
    try {
      const down = await api('POST', '/v1/services/quote', { body: { customer_id: c.id, country_code: 'NG', service_code: 'data', provider_cost_minor: 35_000, currency: 'NGN', phone: mtnPhone() } });
      assert.deepEqual([down.status, down.body.error?.code], [502, 'PROVIDER_FAILURE']);
      assert.match(down.body.error.message, /nothing was charged; retry later/);
    } finally {
      assert.equal((await api('POST', '/v1/test_helpers/services/rails', { body: { service_code: 'data', country: 'NG', down: false } })).status, 200);
    }
  });

  it('detail and status: another customer’s (or account’s) order → 404; malformed id → 400', async () => {
    const c = await customer(1_000_000);
    const created = await order({ customer_id: c.id, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 10_000, currency: 'NGN', payment_method: 'wallet', phone: mtnPhone() });
    const id = created.body.data.order.id;
    assert.equal((await api('GET', `/v1/services/orders/${id}`, { key: otherKey })).status, 404);
    assert.equal((await api('GET', `/v1/services/orders/${id}/status`, { key: otherKey })).status, 404);
    assert.equal((await api('GET', '/v1/services/orders/not-an-id')).status, 400);
    assert.equal((await api('GET', '/v1/services/orders/01ARZ3NDEKTSV4RRFFQ69G5FAV/status')).status, 404);
  });
});

describe('orders: fulfilment paths', () => {
  async function walletOrder(ending: string) {
    const c = await customer(1_000_000);
    const created = await order({ customer_id: c.id, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 20_000, currency: 'NGN', payment_method: 'wallet', phone: mtnPhone(ending) });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    return { c, o: created.body.data.order };
  }

  it('rail failure (…0000) → failed, hold released, service transaction failed at fulfilment', async () => {
    const { c, o } = await walletOrder('0000');
    await until(statusOf(o.id), (s) => s.status === 'failed', 'failed');
    const wallet = (await api('GET', `/v1/wallets/${c.walletId}`)).body.data;
    assert.deepEqual([wallet.balance_minor, wallet.held_minor], [c.balance, 0]);
    const txn = (await api('GET', `/v1/transactions/${o.transaction_id}`)).body.data;
    assert.deepEqual([txn.status, txn.failure.code, txn.failure.stage], ['failed', 'PROVIDER_ERROR', 'fulfilment']);
  });

  it('rail timeout (…0001) → unknown until the sandbox clock passes the 5-minute requery, then reconciliation completes it; debited once', async () => {
    const { c, o } = await walletOrder('0001');
    await until(statusOf(o.id), (s) => s.status === 'unknown', 'unknown');
    await new Promise((resolve) => setTimeout(resolve, 600));
    assert.equal((await statusOf(o.id)()).status, 'unknown', 'real time alone does not requery');
    assert.equal((await api('POST', '/v1/test_helpers/clock/advance', { body: { seconds: 300 } })).status, 200);
    const done = await until(statusOf(o.id), (s) => s.status === 'completed', 'reconciled');
    assert.ok(done.fulfillment_snapshot !== null);
    const txn = (await api('GET', `/v1/transactions/${o.transaction_id}`)).body.data;
    assert.ok(txn.status_history.some((h: { status: string }) => h.status === 'unknown'));
    assert.equal((await api('GET', `/v1/wallets/${c.walletId}`)).body.data.balance_minor, c.balance - o.customer_amount_minor);
    assert.equal((await api('POST', `/v1/transactions/${o.transaction_id}/retry`, { idempotencyKey: idem() })).status, 409, 'never re-purchased');
  });

  it('provider funding failure (…0003) → provider_funding_failure → refund_pending → refunded; money back', async () => {
    const { c, o } = await walletOrder('0003');
    await until(statusOf(o.id), (s) => s.status === 'refunded', 'refunded');
    assert.equal((await api('GET', `/v1/wallets/${c.walletId}`)).body.data.available_minor, c.balance);
  });

  it('controlled retry (…0005) → retry_required, re-dispatched, completed', async () => {
    const { o } = await walletOrder('0005');
    const done = await until(statusOf(o.id), (s) => s.status === 'completed', 'completed');
    assert.match(done.provider_reference, /-2$/, 'second dispatch');
  });

  it('manual fulfilment (…0004) → held; kobo orders resolve --outcome delivered → completed', async () => {
    const { o } = await walletOrder('0004');
    await until(statusOf(o.id), (s) => s.status === 'manual_fulfilment', 'held');
    const resolved = kobo(server.dataDir, 'orders', 'resolve', o.id, '--outcome', 'delivered');
    assert.equal(resolved.status, 0, resolved.stderr + resolved.stdout);
    await until(statusOf(o.id), (s) => s.status === 'completed', 'completed');
    const again = kobo(server.dataDir, 'orders', 'resolve', o.id, '--outcome', 'failed');
    assert.notEqual(again.status, 0, 'a completed order cannot be resolved again');
  });

  it('card payment: checkout_url returned, order awaits payment, paying on the page fulfils it', async () => {
    const c = await customer(0);
    const created = await order({ customer_id: c.id, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 30_000, currency: 'NGN', payment_method: 'card', phone: mtnPhone() });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(created.body.data.order.status, 'pending', 'the create response shows pending; the collection opens next');
    await until(statusOf(created.body.data.order.id), (s) => s.status === 'awaiting_payment', 'awaiting payment');
    assert.match(created.body.data.checkout_url, /\/v1\/checkout\//);
    const paid = await fetch(created.body.data.checkout_url.replace('?token=', '/complete?token='), { method: 'POST' });
    assert.equal(paid.status, 200);
    await until(statusOf(created.body.data.order.id), (s) => s.status === 'completed', 'completed');
  });

  it('bank transfer payment: instructions returned; cancel before payment → cancelled', async () => {
    const c = await customer(0);
    const created = await order({ customer_id: c.id, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 30_000, currency: 'NGN', payment_method: 'bank_transfer', phone: mtnPhone() });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.match(created.body.data.instructions.account_number, /^\d{10}$/);
    const cancelled = await api('POST', `/v1/transactions/${created.body.data.order.transaction_id}/cancel`);
    assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body));
    assert.equal((await statusOf(created.body.data.order.id)()).status, 'cancelled');
    assert.equal((await api('GET', `/v1/payments/${created.body.data.payment.id}`)).body.data.status, 'failed');
  });
});

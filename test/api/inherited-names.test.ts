// Codes a client sends (bank, operator, plan, variant, service, country, currency, method, promotion,
// beneficiary type) that happen to be names every JavaScript object inherits (`__proto__`,
// `constructor`, `toString`, …) are unknown codes like any other: 4xx, and nothing is created. A
// lookup on a plain object once took `__proto__` for a Nigerian bank and paid out to it.
import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey, startServer, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';

const INHERITED = ['__proto__', 'constructor', 'toString', 'valueOf', 'hasOwnProperty', 'isPrototypeOf', 'propertyIsEnumerable', 'toLocaleString', '__defineGetter__', '__lookupGetter__'];

const key = secretKey();
let server: TestServer;
let api: ReturnType<typeof client>;
let customerId = '';

before(async () => {
  server = await startServer({ keys: [`${key}@inherited`] });
  api = client(server.baseUrl, key);
  const c = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: 'Proto', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
  assert.equal(c.status, 201, JSON.stringify(c.body));
  customerId = c.body.data.id;
  assert.equal((await api('PATCH', `/v1/customers/${customerId}`, { body: { kyc_level: 2 } })).status, 200);
  const p = await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: customerId, amount_minor: 1_000_000, currency: 'NGN', method: 'bank_transfer' } });
  assert.equal((await api('POST', `/v1/test_helpers/payments/${p.body.data.id}/settle`)).status, 200);
});
after(async () => server.stop());

function refused(status: number, body: unknown, what: string): void {
  assert.ok(status >= 400 && status < 500, `${what} → ${status} ${JSON.stringify(body)}`);
}

it('beneficiaries: an inherited name as bank_code (bank account) or operator (mobile money) → 400, none stored', async () => {
  for (const name of INHERITED) {
    for (const body of [
      { customer_id: customerId, type: 'bank_account', bank_code: name, account_number: '0123456789', currency: 'NGN' },
      { customer_id: customerId, type: 'mobile_money', bank_code: name, account_number: '0241234567', currency: 'GHS', country_code: 'GH' },
      { customer_id: customerId, type: name, bank_code: '058', account_number: '0123456789', currency: 'NGN' },
    ]) {
      const r = await api('POST', '/v1/beneficiaries', { idempotencyKey: idem(), body });
      refused(r.status, r.body, `beneficiary ${JSON.stringify(body)}`);
    }
  }
});

it('catalogue, validate, quote, order and payment: an inherited name in any code field → 4xx, nothing charged', async () => {
  const before = (await api('GET', `/v1/customers/${customerId}`)).body.data;
  const walletId = before.wallets[0].id;
  const balance = (await api('GET', `/v1/wallets/${walletId}`)).body.data;
  for (const name of INHERITED) {
    const q = encodeURIComponent(name);
    for (const path of [
      `/v1/services/${q}?country=NG&customer_id=${customerId}`,
      `/v1/services?country=${q}&customer_id=${customerId}`,
      `/v1/services/data/plans?country=NG&operator=${q}&customer_id=${customerId}`,
      `/v1/services/data/plans?country=NG&operator=MTN&kind=${q}&customer_id=${customerId}`,
      `/v1/services/electricity/operators?country=${q}&customer_id=${customerId}`,
      `/v1/countries/${q}/context`,
    ]) {
      const r = await api('GET', path);
      refused(r.status, r.body, `GET ${path}`);
    }
    const order = { customer_id: customerId, country_code: 'NG', service_code: 'data', provider_cost_minor: 10_000, currency: 'NGN', payment_method: 'wallet', phone: '+2348031234567', operator_code: 'MTN', product_code: 'mtn-110mb-1d' };
    for (const field of ['country_code', 'service_code', 'currency', 'payment_method', 'operator_code', 'product_code', 'meter_type', 'promotion_code']) {
      const body = { ...order, [field]: name };
      const quote = await api('POST', '/v1/services/quote', { body });
      refused(quote.status, quote.body, `quote ${field}=${name}`);
      const placed = await api('POST', '/v1/services/orders', { idempotencyKey: idem(), body });
      refused(placed.status, placed.body, `order ${field}=${name}`);
    }
    const validate = await api('POST', '/v1/services/electricity/validate', { body: { customer_id: customerId, country_code: 'NG', account_ref: '45123456789', operator_code: name, meter_type: 'prepaid' } });
    refused(validate.status, validate.body, `validate operator_code=${name}`);
    for (const field of ['currency', 'method']) {
      const r = await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: customerId, amount_minor: 10_000, currency: 'NGN', method: 'bank_transfer', [field]: name } });
      refused(r.status, r.body, `payment ${field}=${name}`);
    }
  }
  const after = (await api('GET', `/v1/wallets/${walletId}`)).body.data;
  assert.deepEqual([after.balance_minor, after.held_minor], [balance.balance_minor, balance.held_minor], 'nothing charged or held');
});

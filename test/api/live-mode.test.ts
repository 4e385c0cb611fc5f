// Live mode with no connector configured: every money-moving path that needs an external rail refuses
// with the spec's error and holds or posts nothing; the catalogue and payment methods say why; the
// sandbox (same account, sk_test_ key) behaves as before. Real server over HTTP; node:test.
// Invariant checked: an sk_live_ key never reaches a simulated rail, magic value or test helper.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey, startServer, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';
import { mintId } from '../../src/ids.ts';

const TEST_KEY = secretKey('test');
const LIVE_KEY = secretKey('live');

let server: TestServer;
let sandbox: ReturnType<typeof client>;
let live: ReturnType<typeof client>;
type Api = typeof live;

function assertError(response: { status: number; body: unknown }, status: number, code: string): void {
  const body = response.body as { error?: { code: string } };
  assert.equal(response.status, status, JSON.stringify(body));
  assert.equal(body.error?.code, code, JSON.stringify(body));
}

let phoneSeq = 0;
function mtnPhone(): string {
  phoneSeq += 1;
  return `+234803${String(100 + (phoneSeq % 800)).padStart(3, '0')}${String(1_000 + (phoneSeq % 8_000)).padStart(4, '0')}`;
}

async function newCustomer(a: Api, country = 'NG'): Promise<{ id: string; walletId: string }> {
  const phone = country === 'NG' ? uniquePhone() : `+2547${String(10_000_000 + Math.floor(Math.random() * 89_999_999))}`;
  const r = await a('POST', '/v1/customers', { idempotencyKey: idem('cust'), body: { name: 'Ada Obi', email: uniqueEmail(), phone, country_code: country } });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  assert.equal((await a('PATCH', `/v1/customers/${r.body.data.id}`, { body: { kyc_level: 2 } })).status, 200);
  return { id: r.body.data.id, walletId: r.body.data.wallets[0].id };
}

async function untouched(a: Api, walletId: string): Promise<void> {
  const wallet = (await a('GET', `/v1/wallets/${walletId}`)).body.data;
  assert.equal(wallet.balance_minor, 0, JSON.stringify(wallet));
  assert.equal(wallet.held_minor, 0, JSON.stringify(wallet));
  assert.equal(wallet.available_minor, 0, JSON.stringify(wallet));
}

before(async () => {
  server = await startServer({ keys: [`${TEST_KEY}@acme`, `${LIVE_KEY}@acme`] });
  sandbox = client(server.baseUrl, TEST_KEY);
  live = client(server.baseUrl, LIVE_KEY);
});

after(async () => {
  await server?.stop();
});

describe('live mode without a connector', () => {
  it('payment methods: card, bank_transfer and mobile_money are not selectable (no_live_connector); wallet is; the sandbox offers them', async () => {
    for (const country of ['NG', 'KE']) {
      const c = await newCustomer(live, country);
      const items = (await live('GET', `/v1/payments/methods?customer_id=${c.id}`)).body.data.items as Array<{ method: string; selectable: boolean; reason: string | null; enabled: boolean }>;
      for (const item of items) {
        if (item.method === 'wallet' || item.method === 'virtual_account' || !item.enabled) continue;
        assert.equal(item.selectable, false, JSON.stringify(item));
        assert.equal(item.reason, 'no_live_connector', JSON.stringify(item));
      }
      assert.equal(items.find((i) => i.method === 'wallet')?.selectable, true);
    }
    const s = await newCustomer(sandbox);
    const sandboxItems = (await sandbox('GET', `/v1/payments/methods?customer_id=${s.id}`)).body.data.items as Array<{ method: string; selectable: boolean; reason: string | null }>;
    assert.equal(sandboxItems.find((i) => i.method === 'card')?.selectable, true);
    assert.equal(sandboxItems.find((i) => i.method === 'bank_transfer')?.reason, null);
  });

  it('collections (card, bank_transfer, mobile_money) → 422 METHOD_NOT_SELECTABLE; nothing is opened, held or posted', async () => {
    const ng = await newCustomer(live);
    for (const method of ['card', 'bank_transfer']) {
      assertError(await live('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: ng.id, amount_minor: 50_000, currency: 'NGN', method } }), 422, 'METHOD_NOT_SELECTABLE');
    }
    const ke = await newCustomer(live, 'KE');
    assertError(await live('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: ke.id, amount_minor: 50_000, currency: 'KES', method: 'mobile_money' } }), 422, 'METHOD_NOT_SELECTABLE');
    await untouched(live, ng.walletId);
    await untouched(live, ke.walletId);
    // The same request with the sandbox key opens a collection as before.
    const s = await newCustomer(sandbox);
    const ok = await sandbox('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: s.id, amount_minor: 50_000, currency: 'NGN', method: 'card' } });
    assert.equal(ok.status, 201, JSON.stringify(ok.body));
    assert.match(ok.body.data.provider.checkout_url, /\/v1\/checkout\//);
  });

  it('beneficiaries: bank_account and mobile_money → 422 VERIFICATION_FAILED (no rail to resolve or pay them); a wallet beneficiary still works', async () => {
    const c = await newCustomer(live);
    assertError(await live('POST', '/v1/beneficiaries', { idempotencyKey: idem(), body: { customer_id: c.id, type: 'bank_account', bank_code: '058', account_number: '0123456789', currency: 'NGN' } }), 422, 'VERIFICATION_FAILED');
    assertError(await live('POST', '/v1/beneficiaries', { idempotencyKey: idem(), body: { customer_id: c.id, type: 'mobile_money', bank_code: 'MTN', account_number: '+233241234567', currency: 'GHS', country: 'GH' } }), 422, 'VERIFICATION_FAILED');
    const other = await newCustomer(live);
    const b = await live('POST', '/v1/beneficiaries', { idempotencyKey: idem(), body: { customer_id: c.id, type: 'wallet', account_number: other.walletId, currency: 'NGN' } });
    assert.equal(b.status, 201, JSON.stringify(b.body));
    // The sandbox's compliance magic amount (666) is not a live rule: this unfunded live wallet is simply short.
    assertError(await live('POST', '/v1/transfers', { idempotencyKey: idem(), body: { customer_id: c.id, beneficiary_id: b.body.data.id, amount_minor: 666, currency: 'NGN' } }), 422, 'INSUFFICIENT_FUNDS');
    await untouched(live, c.walletId);
    // Sandbox: the same bank beneficiary resolves a name.
    const s = await newCustomer(sandbox);
    const sb = await sandbox('POST', '/v1/beneficiaries', { idempotencyKey: idem(), body: { customer_id: s.id, type: 'bank_account', bank_code: '058', account_number: '0123456789', currency: 'NGN' } });
    assert.equal(sb.status, 201, JSON.stringify(sb.body));
  });

  it('services: catalogue and availability show unavailable (no_live_connector); validate, quote and order → 422 SERVICE_UNAVAILABLE, magic values included', async () => {
    const c = await newCustomer(live);
    const catalogue = await live('GET', `/v1/services?country=NG&customer_id=${c.id}`);
    assert.equal(catalogue.status, 200, JSON.stringify(catalogue.body));
    const items = catalogue.body.data.items as Array<{ service_code: string; access: { executable: boolean }; availability: { status: string; reason: string | null } }>;
    assert.ok(items.length > 0);
    for (const item of items) {
      assert.equal(item.access.executable, false, JSON.stringify(item));
      assert.deepEqual(item.availability, { status: 'unavailable', reason: 'no_live_connector' });
    }
    const availability = (await live('GET', `/v1/services/airtime/availability?customer_id=${c.id}`)).body.data.items as Array<{ country_code: string; availability: { reason: string | null }; access: { executable: boolean } }>;
    const ng = availability.find((i) => i.country_code === 'NG');
    assert.equal(ng?.access.executable, false);
    assert.equal(ng?.availability.reason, 'no_live_connector');
    const methods = await live('GET', `/v1/services/airtime/payment-methods?country=NG&customer_id=${c.id}`);
    assert.equal(methods.status, 200, JSON.stringify(methods.body));
    const card = (methods.body.data.items as Array<{ method: string; selectable: boolean; reason: string | null }>).find((m) => m.method === 'card');
    assert.deepEqual(card && { selectable: card.selectable, reason: card.reason }, { selectable: false, reason: 'no_live_connector' });
    const phone = mtnPhone();
    assertError(await live('POST', '/v1/services/airtime/validate', { body: { customer_id: c.id, country_code: 'NG', account_ref: phone, operator_code: 'MTN' } }), 422, 'SERVICE_UNAVAILABLE');
    const base = { customer_id: c.id, country_code: 'NG', service_code: 'airtime', currency: 'NGN', payment_method: 'wallet', operator_code: 'MTN', phone };
    assertError(await live('POST', '/v1/services/quote', { body: { ...base, provider_cost_minor: 50_000 } }), 422, 'SERVICE_UNAVAILABLE');
    for (const cost of [50_000, 666]) {
      assertError(await live('POST', '/v1/services/orders', { idempotencyKey: idem(), body: { ...base, provider_cost_minor: cost } }), 422, 'SERVICE_UNAVAILABLE');
    }
    await untouched(live, c.walletId);
    // Sandbox: the same catalogue is executable.
    const s = await newCustomer(sandbox);
    const sandboxItems = (await sandbox('GET', `/v1/services?country=NG&customer_id=${s.id}`)).body.data.items as Array<{ service_code: string; access: { executable: boolean } }>;
    assert.equal(sandboxItems.find((i) => i.service_code === 'airtime')?.access.executable, true);
  });

  it('exchange quotes → 400 VALIDATION ("invalid field or unsupported pair": no live FX source configured); the sandbox quotes', async () => {
    const c = await newCustomer(live);
    assertError(await live('POST', '/v1/exchange/quotes', { body: { customer_id: c.id, from_currency: 'NGN', to_currency: 'USD', from_amount_minor: 154_525 } }), 400, 'VALIDATION');
    const s = await newCustomer(sandbox);
    assert.equal((await sandbox('POST', '/v1/exchange/quotes', { body: { customer_id: s.id, from_currency: 'NGN', to_currency: 'USD', from_amount_minor: 154_525 } })).status, 201);
  });

  it('country context: a live key sees card/bank_transfer and services not enabled (no_live_connector); anonymous and sandbox views are unchanged', async () => {
    const anonymous = await live('GET', '/v1/countries/NG/context', { key: null });
    const withTest = await sandbox('GET', '/v1/countries/NG/context');
    assert.equal(anonymous.status, 200);
    assert.deepEqual(withTest.body, anonymous.body);
    assert.ok(!('reason' in anonymous.body.data.payment_methods[0]));
    const liveView = (await live('GET', '/v1/countries/NG/context')).body.data;
    for (const m of liveView.payment_methods as Array<{ method: string; enabled: boolean; reason: string | null }>) {
      if (m.method === 'wallet') assert.equal(m.reason, null);
      else assert.deepEqual([m.enabled, m.reason], [false, 'no_live_connector'], JSON.stringify(m));
    }
    assert.ok(liveView.services.length > 0);
    for (const s of liveView.services as Array<{ available: boolean; reason: string | null }>) assert.deepEqual([s.available, s.reason], [false, 'no_live_connector']);
  });

  it('test helpers and the rail switch → 404 with a live key', async () => {
    const someId = mintId(3, Date.now());
    assertError(await live('POST', `/v1/test_helpers/payments/${someId}/settle`), 404, 'NOT_FOUND');
    assertError(await live('POST', `/v1/test_helpers/payments/${someId}/fail`), 404, 'NOT_FOUND');
    assertError(await live('POST', '/v1/test_helpers/clock/advance', { body: { seconds: 60 } }), 404, 'NOT_FOUND');
    assertError(await live('POST', '/v1/test_helpers/services/rails', { body: { service_code: 'airtime', country: 'NG', down: true } }), 404, 'NOT_FOUND');
  });
});

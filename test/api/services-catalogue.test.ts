// The services catalogue over HTTP: catalogue, definition, availability, payment methods, operators,
// plans (tabs vs select, phone-resolved operator), variants and validate, resolved per customer; every
// error code these endpoints answer, including MAINTENANCE on the sandbox clock and PROVIDER_FAILURE
// from the rail-down helper. One server for the file.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey, startServer, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';
import { kobo } from '../helpers/cli.ts';

const key = secretKey();
const otherKey = secretKey();
const clockKey = secretKey();
const liveKey = secretKey('live');
let server: TestServer;
let api: ReturnType<typeof client>;


async function customer(country: string, kycLevel = 0, apiKey = key): Promise<string> {
  const c = await api('POST', '/v1/customers', { key: apiKey, idempotencyKey: idem(), body: { name: 'Buyer', email: uniqueEmail(), phone: uniquePhone(), country_code: country } });
  assert.equal(c.status, 201, JSON.stringify(c.body));
  if (kycLevel > 0) {
    const p = await api('PATCH', `/v1/customers/${c.body.data.id}`, { key: apiKey, body: { kyc_level: kycLevel } });
    assert.equal(p.status, 200, JSON.stringify(p.body));
  }
  return c.body.data.id as string;
}

let ng0 = '';
let ng1 = '';
let gh = '';
let ke = '';
let za = '';
let us = '';

before(async () => {
  server = await startServer({ keys: [`${key}@catalogue`, `${otherKey}@catalogue-other`, `${clockKey}@catalogue-clock`, `${liveKey}@catalogue`] });
  api = client(server.baseUrl, key);
  [ng0, ng1, gh, ke, za, us] = await Promise.all([customer('NG'), customer('NG', 1), customer('GH', 1), customer('KE'), customer('ZA'), customer('US')]);
});

after(async () => server?.stop());

function expectError(res: { status: number; body: any }, status: number, code: string): void {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.equal(res.body.error.code, code, JSON.stringify(res.body));
  assert.equal(typeof res.body.error.request_id, 'string');
}

const codes = (items: Array<{ code?: string; service_code?: string; country_code?: string }>): string[] => items.map((i) => i.code ?? i.service_code ?? i.country_code ?? '');

describe('GET /v1/services', () => {
  it('GET /v1/services: NG customer in NG → 200, every NG service in display order, cacheable', async () => {
    const res = await api('GET', `/v1/services?country=NG&customer_id=${ng1}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.data.country_code, 'NG');
    assert.deepEqual(codes(res.body.data.items), ['airtime', 'data', 'electricity', 'tv', 'internet', 'betting', 'education', 'water', 'gift_cards', 'insurance']);
    const airtime = res.body.data.items[0];
    assert.deepEqual(airtime.access, { visible: true, executable: true });
    assert.deepEqual(airtime.availability, { status: 'available', reason: null });
    assert.equal(airtime.category, 'mobile');
    assert.equal(airtime.state, 'active');
    assert.match(res.headers.get('cache-control') ?? '', /max-age=\d+/);
    const gift = res.body.data.items.find((i: { service_code: string }) => i.service_code === 'gift_cards');
    assert.deepEqual(gift.presentation, { badge: { label: 'New', tone: 'info' } });
  });

  it('GET /v1/services: KYC 0 customer → betting visible but not executable (restricted)', async () => {
    const res = await api('GET', `/v1/services?country=NG&customer_id=${ng0}`);
    const betting = res.body.data.items.find((i: { service_code: string }) => i.service_code === 'betting');
    assert.deepEqual(betting.access, { visible: true, executable: false });
    assert.deepEqual(betting.availability, { status: 'restricted', reason: 'kyc_level_required' });
  });

  it('GET /v1/services: GH customer in NG → residents-only betting omitted; lower-case country accepted', async () => {
    const res = await api('GET', `/v1/services?country=ng&customer_id=${gh}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.data.country_code, 'NG');
    assert.ok(!codes(res.body.data.items).includes('betting'));
    assert.ok(codes(res.body.data.items).includes('airtime'));
  });

  it('GET /v1/services: KE customer in KE → insurance coming_soon with an interest sign-up action', async () => {
    const res = await api('GET', `/v1/services?country=KE&customer_id=${ke}`);
    assert.equal(res.status, 200);
    assert.ok(!codes(res.body.data.items).includes('education'), 'KE sells no exam PINs');
    const insurance = res.body.data.items.find((i: { service_code: string }) => i.service_code === 'insurance');
    assert.equal(insurance.state, 'coming_soon');
    assert.deepEqual(insurance.access, { visible: true, executable: false });
    assert.equal(insurance.availability.status, 'coming_soon');
    assert.equal(insurance.actions[0].type, 'interest_signup');
  });

  it('GET /v1/services: US customer in US → airtime (state unavailable) omitted, gift cards listed', async () => {
    const res = await api('GET', `/v1/services?country=US&customer_id=${us}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(codes(res.body.data.items), ['gift_cards']);
  });

  it('GET /v1/services: NG customer in ZA → 403 SERVICE_COUNTRY_NOT_ELIGIBLE', async () => {
    expectError(await api('GET', `/v1/services?country=ZA&customer_id=${ng1}`), 403, 'SERVICE_COUNTRY_NOT_ELIGIBLE');
    expectError(await api('GET', `/v1/services?country=NG&customer_id=${za}`), 403, 'SERVICE_COUNTRY_NOT_ELIGIBLE');
  });

  it('GET /v1/services: missing or malformed country → 400 VALIDATION; unknown or disabled country → 404 NOT_FOUND', async () => {
    expectError(await api('GET', `/v1/services?customer_id=${ng1}`), 400, 'VALIDATION');
    expectError(await api('GET', `/v1/services?country=N1&customer_id=${ng1}`), 400, 'VALIDATION');
    expectError(await api('GET', `/v1/services?country=NGA&customer_id=${ng1}`), 400, 'VALIDATION');
    expectError(await api('GET', `/v1/services?country=FR&customer_id=${ng1}`), 404, 'NOT_FOUND');
    expectError(await api('GET', `/v1/services?country=CM&customer_id=${ng1}`), 404, 'NOT_FOUND');
  });

  it('GET /v1/services: no customer_id → 400; unknown customer → 404; another account’s customer → 403 FORBIDDEN; no key → 401', async () => {
    expectError(await api('GET', '/v1/services?country=NG'), 400, 'VALIDATION');
    expectError(await api('GET', '/v1/services?country=NG&customer_id=01ARZ3NDEKTSV4RRFFQ69G5FAV'), 404, 'NOT_FOUND');
    expectError(await api('GET', `/v1/services?country=NG&customer_id=${ng1}`, { key: otherKey }), 403, 'FORBIDDEN');
    expectError(await api('GET', `/v1/services?country=NG&customer_id=${ng1}`, { key: null }), 401, 'UNAUTHENTICATED');
  });
});

describe('customer-scoped key', () => {
  it('customer-scoped key: no customer_id → acts for its customer (GET and POST); naming another customer → 403 FORBIDDEN', async () => {
    const created = kobo(server.dataDir, 'keys', 'create', '--account', 'catalogue', '--customer', ng1);
    assert.equal(created.status, 0, created.stderr);
    const scoped = /secret \(shown once\): (\S+)/.exec(created.stdout)?.[1] ?? '';
    const list = await api('GET', '/v1/services?country=NG', { key: scoped });
    assert.equal(list.status, 200, JSON.stringify(list.body));
    assert.ok(codes(list.body.data.items).includes('betting'), 'resolved for ng1 (NG resident, KYC 1)');
    const checked = await api('POST', '/v1/services/airtime/validate', { key: scoped, body: { country_code: 'NG', account_ref: '08051234567' } });
    assert.equal(checked.status, 200, JSON.stringify(checked.body));
    assert.equal(checked.body.data.operator_code, 'GLO');
    expectError(await api('GET', `/v1/services?country=NG&customer_id=${ng0}`, { key: scoped }), 403, 'FORBIDDEN');
  });
});

describe('GET /v1/services/{code}', () => {
  it('GET /v1/services/electricity?country=NG → definition with steps, validation, limits, country context, form schema, rules', async () => {
    const res = await api('GET', `/v1/services/electricity?country=NG&customer_id=${ng1}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const d = res.body.data;
    assert.deepEqual(d.steps, ['operator', 'variant', 'account_ref', 'amount']);
    assert.equal(d.requires_validation, true);
    assert.equal(d.pricing, 'open');
    assert.deepEqual({ min: d.limits.min_amount_minor, max: d.limits.max_amount_minor, currency: d.limits.currency }, { min: 100_000, max: 10_000_000, currency: 'NGN' });
    assert.equal(d.country_context.currency_code, 'NGN');
    assert.equal(d.country_context.phone_code, '+234');
    assert.deepEqual(d.form_schema.required, ['operator_code', 'meter_type', 'account_ref', 'provider_cost_minor']);
    assert.ok(d.form_schema.properties.operator_code.enum.includes('IKEDC'));
    assert.deepEqual(d.form_schema.properties.meter_type.enum, ['prepaid', 'postpaid']);
    assert.equal(d.form_schema.properties.provider_cost_minor.minimum, 100_000);
    assert.ok(d.rules.some((r: { rule: string }) => r.rule === 'validate_first'));
    assert.ok(d.rules.some((r: { rule: string; field: string }) => r.rule === 'pattern' && r.field === 'account_ref'));
  });

  it('GET /v1/services/airtime?country=NG → phone step and no validation required', async () => {
    const res = await api('GET', `/v1/services/airtime?country=NG&customer_id=${ng1}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.data.steps, ['operator', 'phone', 'amount']);
    assert.equal(res.body.data.requires_validation, false);
  });

  it('GET /v1/services/insurance?country=KE (coming_soon) → 422 SERVICE_NOT_EXECUTABLE', async () => {
    expectError(await api('GET', `/v1/services/insurance?country=KE&customer_id=${ke}`), 422, 'SERVICE_NOT_EXECUTABLE');
  });

  it('GET /v1/services/betting?country=NG, KYC 0 → 422 SERVICE_NOT_EXECUTABLE; KYC 1 → 200', async () => {
    expectError(await api('GET', `/v1/services/betting?country=NG&customer_id=${ng0}`), 422, 'SERVICE_NOT_EXECUTABLE');
    assert.equal((await api('GET', `/v1/services/betting?country=NG&customer_id=${ng1}`)).status, 200);
  });

  it('GET /v1/services/{code}: not offered in the country (KE education, US airtime unavailable) → 422 SERVICE_UNAVAILABLE', async () => {
    expectError(await api('GET', `/v1/services/education?country=KE&customer_id=${ke}`), 422, 'SERVICE_UNAVAILABLE');
    expectError(await api('GET', `/v1/services/airtime?country=US&customer_id=${us}`), 422, 'SERVICE_UNAVAILABLE');
    expectError(await api('GET', `/v1/services/betting?country=NG&customer_id=${gh}`), 422, 'SERVICE_UNAVAILABLE');
  });

  it('GET /v1/services/{code}: unknown or upper-case code → 404 NOT_FOUND; ineligible country → 403; no country → 400', async () => {
    expectError(await api('GET', `/v1/services/lottery?country=NG&customer_id=${ng1}`), 404, 'NOT_FOUND');
    expectError(await api('GET', `/v1/services/AIRTIME?country=NG&customer_id=${ng1}`), 404, 'NOT_FOUND');
    expectError(await api('GET', `/v1/services/lottery/operators?country=NG&customer_id=${ng1}`), 404, 'NOT_FOUND');
    expectError(await api('GET', `/v1/services/airtime?country=KE&customer_id=${ng1}`), 403, 'SERVICE_COUNTRY_NOT_ELIGIBLE');
    expectError(await api('GET', `/v1/services/airtime?customer_id=${ng1}`), 400, 'VALIDATION');
  });
});

describe('routing beside the order endpoints', () => {
  it('GET /v1/services/quote (POST-only) → 405 with Allow: POST; GET /v1/services/orders → the orders list; neither is a service lookup', async () => {
    const quote = await api('GET', '/v1/services/quote');
    assert.equal(quote.status, 405, JSON.stringify(quote.body));
    assert.equal(quote.headers.get('allow'), 'POST');
    const orders = await api('GET', '/v1/services/orders');
    assert.equal(orders.status, 200, JSON.stringify(orders.body));
    assert.ok(Array.isArray(orders.body.data) && typeof orders.body.has_more === 'boolean', JSON.stringify(orders.body));
  });
});

describe('GET /v1/services/{code}/availability', () => {
  it('availability: airtime for a US customer → NG, GH, KE (US airtime is unavailable), NG first', async () => {
    const res = await api('GET', `/v1/services/airtime/availability?customer_id=${us}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.data.home_country, 'US');
    assert.deepEqual(codes(res.body.data.items), ['NG', 'GH', 'KE']);
    assert.equal(res.body.data.default_country_code, 'NG');
    assert.equal(res.body.data.items[0].currency, 'NGN');
  });

  it('availability: betting for an NG customer of KYC 0 → NG only, restricted (GH betting is residents-only)', async () => {
    const res = await api('GET', `/v1/services/betting/availability?customer_id=${ng0}`);
    assert.equal(res.status, 200);
    assert.deepEqual(codes(res.body.data.items), ['NG']);
    assert.deepEqual(res.body.data.items[0].access, { visible: true, executable: false });
    assert.equal(res.body.data.items[0].availability.reason, 'kyc_level_required');
  });

  it('availability: betting for a GH customer → GH in maintenance, not executable', async () => {
    const res = await api('GET', `/v1/services/betting/availability?customer_id=${gh}`);
    assert.deepEqual(codes(res.body.data.items), ['GH']);
    assert.equal(res.body.data.items[0].state, 'maintenance');
    assert.equal(res.body.data.items[0].access.executable, false);
  });

  it('availability: education for a ZA customer → no country (ZA sells none); unknown code → 404', async () => {
    const res = await api('GET', `/v1/services/education/availability?customer_id=${za}`);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.data.items, []);
    assert.equal(res.body.data.default_country_code, null);
    expectError(await api('GET', `/v1/services/lottery/availability?customer_id=${za}`), 404, 'NOT_FOUND');
  });
});

describe('GET /v1/services/{code}/payment-methods', () => {
  it('payment-methods: NG betting → wallet and bank_transfer only (no card), with fee per method', async () => {
    const res = await api('GET', `/v1/services/betting/payment-methods?country=NG&customer_id=${ng1}&amount_minor=100000`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.data.items.map((m: { method: string }) => m.method), ['wallet', 'bank_transfer']);
    const bank = res.body.data.items[1];
    assert.deepEqual(bank.fee, { flat_minor: 5_000, percent_bps: 0, cap_minor: null, currency: 'NGN' });
    assert.equal(bank.fee_minor, 5_000);
    assert.equal(bank.selectable, true);
  });

  it('payment-methods: KE electricity with amount → card fee = KSh10 + 2.9%; without amount → fee_minor null', async () => {
    const res = await api('GET', `/v1/services/electricity/payment-methods?country=KE&customer_id=${ke}&amount_minor=100000`);
    const card = res.body.data.items.find((m: { method: string }) => m.method === 'card');
    assert.equal(card.fee_minor, 1_000 + 2_900);
    assert.equal(res.body.data.paying_currency, 'KES');
    const bare = await api('GET', `/v1/services/electricity/payment-methods?country=KE&customer_id=${ke}`);
    assert.ok(bare.body.data.items.every((m: { fee_minor: number | null }) => m.fee_minor === null));
  });

  it('payment-methods: US customer (KYC 0) buying NG airtime → pays in USD; card and bank transfer not selectable (KYC)', async () => {
    const res = await api('GET', `/v1/services/airtime/payment-methods?country=NG&customer_id=${us}`);
    assert.equal(res.status, 200);
    assert.equal(res.body.data.paying_currency, 'USD');
    assert.equal(res.body.data.currency, 'NGN');
    const byMethod = Object.fromEntries(res.body.data.items.map((m: { method: string; selectable: boolean; reason: string | null }) => [m.method, [m.selectable, m.reason]]));
    assert.deepEqual(byMethod, { wallet: [true, null], card: [false, 'kyc_level_too_low'], bank_transfer: [false, 'kyc_level_too_low'] });
  });

  it('payment-methods: malformed amount_minor → 400; ineligible country → 403', async () => {
    expectError(await api('GET', `/v1/services/airtime/payment-methods?country=NG&customer_id=${ng1}&amount_minor=1.5`), 400, 'VALIDATION');
    expectError(await api('GET', `/v1/services/airtime/payment-methods?country=ZA&customer_id=${ng1}`), 403, 'SERVICE_COUNTRY_NOT_ELIGIBLE');
  });
});

describe('operators, plans, variants', () => {
  it('operators: NG airtime → MTN, AIRTEL, GLO, 9MOBILE as operator items', async () => {
    const res = await api('GET', `/v1/services/airtime/operators?country=NG&customer_id=${ng1}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.data.items.map((o: { code: string }) => o.code), ['MTN', 'AIRTEL', 'GLO', '9MOBILE']);
    assert.deepEqual(res.body.data.items[0], { code: 'MTN', title: 'MTN', service_code: 'airtime', country: 'NG' });
  });

  it('operators: coming_soon KE insurance → still browsable (200); not offered → 422 SERVICE_UNAVAILABLE; ineligible → 403', async () => {
    const res = await api('GET', `/v1/services/insurance/operators?country=KE&customer_id=${ke}`);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.data.items.map((o: { code: string }) => o.code), ['JUBILEE', 'BRITAM', 'CIC']);
    expectError(await api('GET', `/v1/services/water/operators?country=ZA&customer_id=${za}`), 422, 'SERVICE_UNAVAILABLE');
    expectError(await api('GET', `/v1/services/airtime/operators?country=GH&customer_id=${ke}`), 403, 'SERVICE_COUNTRY_NOT_ELIGIBLE');
  });

  it('plans: NG MTN data (large, categorized) → picker tabs, categories daily, weekly, monthly, others', async () => {
    const res = await api('GET', `/v1/services/data/plans?country=NG&operator=MTN&customer_id=${ng1}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.data.presentation, { picker: 'tabs', categories: ['daily', 'weekly', 'monthly', 'others'] });
    assert.equal(res.body.data.kind, 'plans');
    assert.equal(res.body.data.operator_code, 'MTN');
    assert.ok(res.body.data.items.length >= 8);
    assert.ok(res.body.data.items.every((p: { operator_code: string; pricing: string; amount_minor: number }) => p.operator_code === 'MTN' && p.pricing === 'fixed' && Number.isInteger(p.amount_minor)));
  });

  it('plans: NG 9mobile data (small) → picker select', async () => {
    const res = await api('GET', `/v1/services/data/plans?country=NG&operator=9mobile&customer_id=${ng1}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.data.presentation.picker, 'select');
    assert.equal(res.body.data.operator_code, '9MOBILE');
  });

  it('plans: operator missing on a multi-operator catalogue → 400 VALIDATION; unknown operator → 400', async () => {
    expectError(await api('GET', `/v1/services/data/plans?country=NG&customer_id=${ng1}`), 400, 'VALIDATION');
    expectError(await api('GET', `/v1/services/data/plans?country=NG&operator=VODACOM&customer_id=${ng1}`), 400, 'VALIDATION');
    expectError(await api('GET', `/v1/services/data/plans?operator=MTN&customer_id=${ng1}`), 400, 'VALIDATION');
  });

  it('plans: phone instead of operator → operator resolved from the prefix (0802 → AIRTEL) and plans filtered', async () => {
    const res = await api('GET', `/v1/services/data/plans?country=NG&phone=${encodeURIComponent('+2348021234567')}&customer_id=${ng1}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.data.operator_code, 'AIRTEL');
    assert.ok(res.body.data.items.every((p: { operator_code: string }) => p.operator_code === 'AIRTEL'));
    expectError(await api('GET', `/v1/services/data/plans?country=NG&phone=12345&customer_id=${ng1}`), 400, 'VALIDATION');
  });

  it('plans: open-amount airtime → the single open_amount plan, pricing open, amount null; single-operator KE electricity needs no operator', async () => {
    const airtime = await api('GET', `/v1/services/airtime/plans?country=NG&operator=GLO&customer_id=${ng1}`);
    assert.equal(airtime.status, 200);
    assert.deepEqual(airtime.body.data.items, [{ code: 'open_amount', title: 'Enter an amount', operator_code: 'GLO', service_code: 'airtime', country: 'NG', amount_minor: null, currency: 'NGN', validity: null, category: 'others', pricing: 'open' }]);
    assert.equal(airtime.body.data.presentation.picker, 'select');
    const kplc = await api('GET', `/v1/services/electricity/plans?country=KE&customer_id=${ke}`);
    assert.equal(kplc.status, 200, JSON.stringify(kplc.body));
    assert.equal(kplc.body.data.items[0].operator_code, 'KPLC');
  });

  it('plans: kind=packages on NG DStv → the add-ons only', async () => {
    const res = await api('GET', `/v1/services/tv/plans?country=NG&operator=DSTV&kind=packages&customer_id=${ng1}`);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.data.items.map((p: { code: string }) => p.code), ['dstv-xtraview', 'dstv-french-touch']);
    expectError(await api('GET', `/v1/services/tv/plans?country=NG&operator=DSTV&kind=bundles&customer_id=${ng1}`), 400, 'VALIDATION');
  });

  it('variants: NG electricity → prepaid, postpaid; NG water (no metered billing) → []', async () => {
    const power = await api('GET', `/v1/services/electricity/variants?country=NG&customer_id=${ng1}`);
    assert.equal(power.status, 200);
    assert.deepEqual(power.body.data.items, [{ code: 'prepaid', title: 'Prepaid' }, { code: 'postpaid', title: 'Postpaid' }]);
    const water = await api('GET', `/v1/services/water/variants?country=NG&customer_id=${ng1}`);
    assert.deepEqual(water.body.data.items, []);
  });
});

describe('POST /v1/services/{code}/validate', () => {
  const validate = (code: string, body: Record<string, unknown>, apiKey = key) => api('POST', `/v1/services/${code}/validate`, { key: apiKey, body });

  it('validate: NG prepaid meter → 200 valid, customer name, serviceable, no phone_validation', async () => {
    const res = await validate('electricity', { customer_id: ng1, country_code: 'NG', account_ref: '45012345678', operator_code: 'IKEDC', meter_type: 'prepaid' });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const d = res.body.data;
    assert.equal(d.valid, true);
    assert.match(d.customer_name, /\S+ \S+/);
    assert.equal(typeof d.address, 'string');
    assert.deepEqual(d.serviceability, { serviceable: true, reason: null });
    assert.equal(d.phone_validation, null);
    assert.deepEqual([d.service_code, d.country_code, d.account_ref, d.operator_code, d.meter_type], ['electricity', 'NG', '45012345678', 'IKEDC', 'prepaid']);
  });

  it('validate: meter ending 0003 → 200 valid but not serviceable (meter_blocked)', async () => {
    const res = await validate('electricity', { customer_id: ng1, country_code: 'NG', account_ref: '45012340003', operator_code: 'EKEDC', meter_type: 'postpaid' });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.data.serviceability, { serviceable: false, reason: 'meter_blocked' });
  });

  it('validate: account ending 0002 → 422 VALIDATION_ERROR (rail rejected the lookup)', async () => {
    expectError(await validate('electricity', { customer_id: ng1, country_code: 'NG', account_ref: '45012340002', operator_code: 'IKEDC', meter_type: 'prepaid' }), 422, 'VALIDATION_ERROR');
    expectError(await validate('tv', { customer_id: ng1, country_code: 'NG', account_ref: '7012340002', operator_code: 'DSTV' }), 422, 'VALIDATION_ERROR');
  });

  it('validate: missing account_ref or country_code → 422 VALIDATION_ERROR (not 400)', async () => {
    expectError(await validate('electricity', { customer_id: ng1, country_code: 'NG', operator_code: 'IKEDC' }), 422, 'VALIDATION_ERROR');
    expectError(await validate('electricity', { customer_id: ng1, country_code: 'NG', account_ref: '  ', operator_code: 'IKEDC' }), 422, 'VALIDATION_ERROR');
    expectError(await validate('electricity', { customer_id: ng1, account_ref: '45012345678', operator_code: 'IKEDC' }), 422, 'VALIDATION_ERROR');
  });

  it('validate: malformed meter number, missing meter type on a two-variant rail, unknown operator → 422 VALIDATION_ERROR', async () => {
    expectError(await validate('electricity', { customer_id: ng1, country_code: 'NG', account_ref: '12AB', operator_code: 'IKEDC', meter_type: 'prepaid' }), 422, 'VALIDATION_ERROR');
    expectError(await validate('electricity', { customer_id: ng1, country_code: 'NG', account_ref: '45012345678', operator_code: 'IKEDC' }), 422, 'VALIDATION_ERROR');
    expectError(await validate('electricity', { customer_id: ng1, country_code: 'NG', account_ref: '45012345678', operator_code: 'ESKOM', meter_type: 'prepaid' }), 422, 'VALIDATION_ERROR');
  });

  it('validate: unknown body field → 400 VALIDATION; unknown service → 404', async () => {
    expectError(await validate('electricity', { customer_id: ng1, country_code: 'NG', account_ref: '45012345678', colour: 'red' }), 400, 'VALIDATION');
    expectError(await validate('lottery', { customer_id: ng1, country_code: 'NG', account_ref: '45012345678' }), 404, 'NOT_FOUND');
  });

  it('validate: airtime with a national MTN number → phone_validation normalized to E.164, MOBILE, carrier MTN', async () => {
    const res = await validate('airtime', { customer_id: ng1, country_code: 'NG', account_ref: '08031234567' });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.data.phone_validation, { valid: true, normalized: '+2348031234567', country_code: 'NG', number_type: 'MOBILE', carrier: 'MTN', messages: [] });
    assert.equal(res.body.data.operator_code, 'MTN', 'operator resolved from the prefix');
    assert.equal(res.body.data.valid, true);
  });

  it('validate: data with a Ghanaian number for NG, or an impossible number → 422 VALIDATION_ERROR', async () => {
    expectError(await validate('data', { customer_id: ng1, country_code: 'NG', account_ref: '+233241234567' }), 422, 'VALIDATION_ERROR');
    expectError(await validate('airtime', { customer_id: ng1, country_code: 'NG', account_ref: '0803123' }), 422, 'VALIDATION_ERROR');
  });

  it('validate: impossible phone while the airtime rail is down → 422 VALIDATION_ERROR, not 502: the rail is never reached', async () => {
    const down = await api('POST', '/v1/test_helpers/services/rails', { body: { service_code: 'airtime', country: 'GH', down: true } });
    assert.equal(down.status, 200, JSON.stringify(down.body));
    try {
      expectError(await validate('airtime', { customer_id: gh, country_code: 'GH', account_ref: '024123' }), 422, 'VALIDATION_ERROR');
      expectError(await validate('airtime', { customer_id: gh, country_code: 'GH', account_ref: '0241234567' }), 502, 'PROVIDER_FAILURE');
    } finally {
      await api('POST', '/v1/test_helpers/services/rails', { body: { service_code: 'airtime', country: 'GH', down: false } });
    }
    assert.equal((await validate('airtime', { customer_id: gh, country_code: 'GH', account_ref: '0241234567' })).status, 200);
  });

  it('validate: coming_soon KE insurance → 422 SERVICE_NOT_EXECUTABLE; not offered → 422 SERVICE_UNAVAILABLE; ineligible → 403', async () => {
    expectError(await validate('insurance', { customer_id: ke, country_code: 'KE', account_ref: 'KDA123A', operator_code: 'JUBILEE' }), 422, 'SERVICE_NOT_EXECUTABLE');
    expectError(await validate('education', { customer_id: ke, country_code: 'KE', account_ref: '1234567890' }), 422, 'SERVICE_UNAVAILABLE');
    expectError(await validate('electricity', { customer_id: za, country_code: 'NG', account_ref: '45012345678', operator_code: 'IKEDC', meter_type: 'prepaid' }), 403, 'SERVICE_COUNTRY_NOT_ELIGIBLE');
  });
});

describe('rail down → 502 PROVIDER_FAILURE', () => {
  it('rails helper: NG electricity down → operators, plans, variants, validate 502; other accounts and services unaffected; up → 200', async () => {
    const down = await api('POST', '/v1/test_helpers/services/rails', { body: { service_code: 'electricity', country: 'NG', down: true } });
    assert.deepEqual(down.body.data, { service_code: 'electricity', country: 'NG', down: true });
    try {
      const q = `country=NG&customer_id=${ng1}`;
      expectError(await api('GET', `/v1/services/electricity/operators?${q}`), 502, 'PROVIDER_FAILURE');
      expectError(await api('GET', `/v1/services/electricity/plans?${q}&operator=IKEDC`), 502, 'PROVIDER_FAILURE');
      expectError(await api('GET', `/v1/services/electricity/variants?${q}`), 502, 'PROVIDER_FAILURE');
      expectError(await api('POST', '/v1/services/electricity/validate', { body: { customer_id: ng1, country_code: 'NG', account_ref: '45012345678', operator_code: 'IKEDC', meter_type: 'prepaid' } }), 502, 'PROVIDER_FAILURE');
      assert.equal((await api('GET', `/v1/services/airtime/operators?${q}`)).status, 200, 'another service');
      const other = await customer('NG', 0, otherKey);
      assert.equal((await api('GET', `/v1/services/electricity/operators?country=NG&customer_id=${other}`, { key: otherKey })).status, 200, 'another account');
    } finally {
      await api('POST', '/v1/test_helpers/services/rails', { body: { service_code: 'electricity', country: 'NG', down: false } });
    }
    assert.equal((await api('GET', `/v1/services/electricity/operators?country=NG&customer_id=${ng1}`)).status, 200);
  });

  it('rails helper: a live key → 404 (sandbox only); a service the country does not offer → 422 SERVICE_UNAVAILABLE', async () => {
    expectError(await api('POST', '/v1/test_helpers/services/rails', { key: liveKey, body: { service_code: 'airtime', country: 'NG', down: true } }), 404, 'NOT_FOUND');
    expectError(await api('POST', '/v1/test_helpers/services/rails', { body: { service_code: 'water', country: 'ZA', down: true } }), 422, 'SERVICE_UNAVAILABLE');
  });
});

describe('catalogue maintenance window (sandbox clock)', () => {
  it('GET /v1/services?country=UG: clock moved to 02:01 UTC → 503 MAINTENANCE with Retry-After; 02:31 → 200', async () => {
    const clock = client(server.baseUrl, clockKey);
    const buyer = await customer('KE', 0, clockKey);
    const now = Date.parse((await clock('GET', '/v1/test_helpers/clock')).body.data.now);
    const dayStart = now - (now % 86_400_000);
    let target = dayStart + (2 * 60 + 1) * 60_000;
    if (target <= now + 5_000) target += 86_400_000;
    const advanced = await clock('POST', '/v1/test_helpers/clock/advance', { body: { seconds: Math.ceil((target - now) / 1000) } });
    assert.equal(advanced.status, 200, JSON.stringify(advanced.body));
    assert.equal(new Date(advanced.body.data.now).getUTCHours(), 2);

    const closed = await clock('GET', `/v1/services?country=UG&customer_id=${buyer}`);
    expectError(closed, 503, 'MAINTENANCE');
    const retryAfter = Number(closed.headers.get('retry-after'));
    assert.ok(retryAfter > 0 && retryAfter <= 30 * 60, `Retry-After ${retryAfter}`);
    expectError(await clock('GET', `/v1/services/airtime/operators?country=UG&customer_id=${buyer}`), 503, 'MAINTENANCE');
    assert.equal((await clock('GET', `/v1/services?country=KE&customer_id=${buyer}`)).status, 200, 'only UG has the window');
    const selector = await clock('GET', `/v1/services/airtime/availability?customer_id=${buyer}`);
    const ug = selector.body.data.items.find((i: { country_code: string }) => i.country_code === 'UG');
    assert.deepEqual([ug.state, ug.access.executable], ['maintenance', false]);

    assert.equal((await clock('POST', '/v1/test_helpers/clock/advance', { body: { seconds: 30 * 60 } })).status, 200);
    const open = await clock('GET', `/v1/services?country=UG&customer_id=${buyer}`);
    assert.equal(open.status, 200, JSON.stringify(open.body));
    assert.deepEqual(codes(open.body.data.items), ['airtime', 'data', 'electricity', 'water', 'tv', 'internet']);
  });
});

// Covers the public country endpoints over HTTP: GET /v1/countries and GET /v1/countries/{code}/context.
// Runs under node:test against one real server process; no request carries a key.
// Invariant checked: a malformed code is 400 VALIDATION; an unknown or disabled country is 404 NOT_FOUND.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { client, startServer, type ApiResponse, type TestServer } from '../helpers/server.ts';

const REQUIRED_MARKETS = ['NG', 'GH', 'KE', 'ZA', 'UG', 'US', 'GB'];
const COUNTRY_FIELDS: Record<string, 'string' | 'boolean'> = {
  code: 'string',
  name: 'string',
  currency_code: 'string',
  currency_symbol: 'string',
  phone_code: 'string',
  locale: 'string',
  flag_emoji: 'string',
  registration_enabled: 'boolean',
  exchange_enabled: 'boolean',
  payments_enabled: 'boolean',
  services_enabled: 'boolean',
  timezone: 'string',
  default_language_code: 'string',
};

let server: TestServer;
let api: ReturnType<typeof client>;

function expectError(res: ApiResponse, status: number, code: string): void {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.equal(res.body?.error?.code, code, JSON.stringify(res.body));
  assert.equal(res.body.error.request_id, res.headers.get('x-request-id'));
}

function assertCountry(country: Record<string, unknown>): void {
  for (const [field, type] of Object.entries(COUNTRY_FIELDS)) {
    assert.equal(typeof country[field], type, `${String(country.code)}.${field}`);
  }
  assert.match(country.code as string, /^[A-Z]{2}$/);
  assert.match(country.currency_code as string, /^[A-Z]{3}$/);
  assert.match(country.phone_code as string, /^\+\d{1,3}$/);
  assert.match(country.default_language_code as string, /^[a-z]{2,3}$/);
  assert.ok((country.name as string).length > 0);
  assert.ok((country.currency_symbol as string).length > 0);
  assert.doesNotThrow(() => new Intl.DateTimeFormat('en', { timeZone: country.timezone as string }), `${String(country.code)} timezone`);
  assert.deepEqual(Intl.getCanonicalLocales(country.locale as string).length, 1);
}

before(async () => {
  server = await startServer({});
  api = client(server.baseUrl);
});

after(async () => {
  await server?.stop();
});

describe('GET /v1/countries', () => {
  it('GET /v1/countries: no key → 200 with NG, GH, KE, ZA, UG, US, GB', async () => {
    const res = await api('GET', '/v1/countries', { key: null });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.ok(Array.isArray(res.body.data));
    const codes = (res.body.data as Array<{ code: string }>).map((c) => c.code);
    for (const code of REQUIRED_MARKETS) assert.ok(codes.includes(code), `${code} missing`);
    assert.equal(new Set(codes).size, codes.length, 'each country once');
  });

  it("GET /v1/countries: every item → exactly the spec's Country fields with their types", async () => {
    const res = await api('GET', '/v1/countries', { key: null });
    for (const country of res.body.data as Array<Record<string, unknown>>) {
      assert.deepEqual(Object.keys(country).sort(), Object.keys(COUNTRY_FIELDS).sort(), String(country.code));
      assertCountry(country);
    }
  });

  it('GET /v1/countries: NG → Nigeria, NGN, ₦, +234, Africa/Lagos, 🇳🇬, every market flag on', async () => {
    const res = await api('GET', '/v1/countries', { key: null });
    const ng = (res.body.data as Array<Record<string, unknown>>).find((c) => c.code === 'NG');
    assert.ok(ng);
    assert.equal(ng.name, 'Nigeria');
    assert.equal(ng.currency_code, 'NGN');
    assert.match(ng.currency_symbol as string, /₦/);
    assert.equal(ng.phone_code, '+234');
    assert.equal(ng.timezone, 'Africa/Lagos');
    assert.equal(ng.flag_emoji, '🇳🇬');
    for (const flag of ['registration_enabled', 'exchange_enabled', 'payments_enabled', 'services_enabled']) assert.equal(ng[flag], true, flag);
  });

  it('GET /v1/countries: disabled country CM → absent', async () => {
    const res = await api('GET', '/v1/countries', { key: null });
    assert.ok(!(res.body.data as Array<{ code: string }>).some((c) => c.code === 'CM'));
  });
});

describe('GET /v1/countries/{code}/context', () => {
  it('context NG: no key → 200 with the Country fields, services, payment_methods, supported_language_codes', async () => {
    const res = await api('GET', '/v1/countries/NG/context', { key: null });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const context = res.body.data;
    assertCountry(context);
    assert.equal(context.code, 'NG');

    assert.ok(Array.isArray(context.services) && context.services.length > 0);
    let previous = -Infinity;
    for (const service of context.services) {
      assert.deepEqual(Object.keys(service).sort(), ['description', 'icon', 'service_code', 'sort_order', 'title']);
      for (const field of ['service_code', 'title', 'description', 'icon']) assert.equal(typeof service[field], 'string', field);
      assert.ok(Number.isInteger(service.sort_order));
      assert.ok(service.sort_order > previous, 'services in sort_order');
      previous = service.sort_order;
    }
    assert.ok(context.services.some((s: { service_code: string }) => s.service_code === 'airtime'));

    assert.ok(Array.isArray(context.payment_methods) && context.payment_methods.length > 0);
    for (const method of context.payment_methods) {
      assert.deepEqual(Object.keys(method).sort(), ['enabled', 'max_amount_minor', 'method', 'min_amount_minor']);
      assert.equal(typeof method.method, 'string');
      assert.equal(typeof method.enabled, 'boolean');
      for (const bound of ['min_amount_minor', 'max_amount_minor']) {
        assert.ok(method[bound] === null || Number.isSafeInteger(method[bound]), `${method.method}.${bound}`);
      }
    }
    assert.ok(context.payment_methods.some((m: { method: string; enabled: boolean }) => m.method === 'bank_transfer' && m.enabled));

    assert.ok(Array.isArray(context.supported_language_codes) && context.supported_language_codes.length > 0);
    for (const code of context.supported_language_codes) assert.equal(typeof code, 'string');
    assert.ok(context.supported_language_codes.includes(context.default_language_code));
  });

  it('context: every listed country → 200 whose Country fields equal its list entry', async () => {
    const list = await api('GET', '/v1/countries', { key: null });
    for (const country of list.body.data as Array<Record<string, unknown>>) {
      const res = await api('GET', `/v1/countries/${String(country.code)}/context`, { key: null });
      assert.equal(res.status, 200, String(country.code));
      const { services: _services, payment_methods: _methods, supported_language_codes: _languages, ...fields } = res.body.data;
      assert.deepEqual(fields, country);
    }
  });

  it('context: catalogue → differs per country (NG and US offer different services)', async () => {
    const ng = await api('GET', '/v1/countries/NG/context', { key: null });
    const us = await api('GET', '/v1/countries/US/context', { key: null });
    const codes = (res: ApiResponse) => (res.body.data.services as Array<{ service_code: string }>).map((s) => s.service_code).sort();
    assert.notDeepEqual(codes(ng), codes(us));
  });

  it('context: lowercase or mixed-case code ("ng", "Ng") → 200 for NG', async () => {
    for (const code of ['ng', 'Ng']) {
      const res = await api('GET', `/v1/countries/${code}/context`, { key: null });
      assert.equal(res.status, 200, code);
      assert.equal(res.body.data.code, 'NG');
    }
  });

  for (const code of ['NGA', '1X', 'N', 'N1', '%4E%47A', '%zz']) {
    it(`context: "${code}" is not a 2-letter code → 400 VALIDATION`, async () => {
      expectError(await api('GET', `/v1/countries/${code}/context`, { key: null }), 400, 'VALIDATION');
    });
  }

  for (const code of ['ZZ', 'CM', 'cm']) {
    it(`context: "${code}" unknown or disabled → 404 NOT_FOUND`, async () => {
      expectError(await api('GET', `/v1/countries/${code}/context`, { key: null }), 404, 'NOT_FOUND');
    });
  }
});

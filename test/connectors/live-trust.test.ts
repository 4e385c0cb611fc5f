// What kobo takes from a live connector's answers where money is concerned. An FX mid rate is checked
// against kobo's reference table (a band, ±10 % by default, per pair by configuration) and refused
// outside it with 422 FX_QUOTE_UNAVAILABLE, logged and counted: an inverted NGN → USD rate created
// money before. Amounts a collection or fulfilment answer restates are never taken over kobo's own.
// The connector is a small signed fake in this process, so each test chooses exactly what it answers.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { client, idem, secretKey, startServer, tempDataDir, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';
import { connectorsFile } from '../helpers/connector.ts';
import { until } from '../helpers/wait.ts';
import { signedHeaders } from '../../src/connectors/signing.ts';
import { midRate } from '../../src/catalogue/fx.ts';
import { formatRate } from '../../src/money/convert.ts';

const SECRET = 'live-trust-connector-secret-89';
const LIVE = secretKey('live');
/** FX mid rates the fake answers, by `FROM/TO` (missing: failed). */
const rates = new Map<string, string>();
/** What the fake hands back when it settles a purchase. */
let fulfilmentDetail: Record<string, unknown> = {};
let fake: http.Server;
let server: TestServer;
let api: ReturnType<typeof client>;

function answer(res: http.ServerResponse, payload: object): void {
  const text = JSON.stringify(payload);
  res.writeHead(200, { 'content-type': 'application/json', ...signedHeaders(SECRET, text) });
  res.end(text);
}

function fakeConnector(req: http.IncomingMessage, res: http.ServerResponse): void {
  let text = '';
  req.on('data', (chunk: Buffer) => (text += chunk.toString()));
  req.on('end', () => {
    const body = JSON.parse(text) as Record<string, unknown>;
    const reference = body.reference;
    const rail = /^\/v1\/(\w+)\//.exec(req.url ?? '')?.[1];
    if (rail === 'fx') {
      const rate = rates.get(`${String(body.from_currency)}/${String(body.to_currency)}`);
      return answer(res, rate === undefined ? { reference, status: 'failed', failure_code: 'PROVIDER_ERROR' } : { reference, status: 'settled', detail: { mid_rate: rate } });
    }
    if (rail === 'collections') return answer(res, { reference, status: 'accepted', provider_reference: 'PSP-1', checkout_url: 'https://psp.example/pay' });
    if (rail === 'resolutions') return answer(res, { reference, status: 'settled', detail: { account_name: 'ADA OBI', serviceable: true, reason: null } });
    if (rail === 'fulfilments') return answer(res, { reference, status: 'settled', provider_reference: 'BILLER-1', detail: fulfilmentDetail });
    answer(res, { reference, status: 'unknown' });
  });
}

before(async () => {
  fake = http.createServer(fakeConnector);
  await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
  const file = connectorsFile([{ name: 'fake', url: `http://127.0.0.1:${(fake.address() as { port: number }).port}`, secret: SECRET, rails: ['collection', 'resolve', 'fulfilment', 'fx'], timeout_ms: 2000 }]);
  server = await startServer({ keys: [`${LIVE}@acme`], dataDir: tempDataDir('live-trust'), env: { KOBO_CONNECTORS_FILE: file, KOBO_FX_PAIR_BANDS_BPS: 'GBP/NGN:1500', KOBO_LOG_LEVEL: 'warn' } });
  api = client(server.baseUrl, LIVE);
});

after(async () => {
  await server?.stop();
  fake?.close();
});

async function liveCustomer(country: 'NG' | 'GB' = 'NG'): Promise<{ id: string; walletId: string }> {
  const phone = country === 'NG' ? uniquePhone() : `+4479111${String(10_000 + Math.floor(Math.random() * 89_999)).slice(-5)}`;
  const c = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: 'Live Trust', email: uniqueEmail(), phone, country_code: country } });
  assert.equal(c.status, 201, JSON.stringify(c.body));
  assert.equal((await api('PATCH', `/v1/customers/${c.body.data.id}`, { body: { kyc_level: 2 } })).status, 200);
  return { id: c.body.data.id, walletId: c.body.data.wallets[0].id };
}

/** The reference mid rate for from → to moved by `bps` basis points, as a connector would answer it. */
function moved(from: string, to: string, bps: number): string {
  const mid = midRate(from, to);
  return formatRate({ num: mid.num * BigInt(10_000 + bps), den: mid.den * 10_000n });
}

async function metric(series: string): Promise<number> {
  const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

const REFUSED = 'kobo_fx_rates_refused_total{connector="fake",pair="NGN/USD",reason="outside_band"}';

test('live exchange quote: an inverted, a 1e12 or a vanishing mid rate → 422 FX_QUOTE_UNAVAILABLE (the connector\'s fault, never the client\'s amount), logged at warn and counted; nothing is quoted', async () => {
  const c = await liveCustomer();
  const before = await metric(REFUSED);
  for (const rate of ['1545.25', '1000000000000', '0.000000000001']) {
    rates.set('NGN/USD', rate);
    const quote = await api('POST', '/v1/exchange/quotes', { idempotencyKey: idem(), body: { customer_id: c.id, from_currency: 'NGN', to_currency: 'USD', from_amount_minor: 100_000 } });
    assert.equal(quote.status, 422, `${rate}: ${JSON.stringify(quote.body)}`);
    assert.equal(quote.body.error.code, 'FX_QUOTE_UNAVAILABLE', rate);
    assert.doesNotMatch(quote.body.error.message, /from_amount_minor/, 'the client\'s amount is not blamed');
  }
  assert.equal(await metric(REFUSED), before + 3);
  // Not a plain decimal at all: refused as before, and now counted too.
  rates.set('NGN/USD', '6.47e-4');
  const garbled = await api('POST', '/v1/exchange/quotes', { idempotencyKey: idem(), body: { customer_id: c.id, from_currency: 'NGN', to_currency: 'USD', from_amount_minor: 100_000 } });
  assert.equal(garbled.status, 422, JSON.stringify(garbled.body));
  assert.equal(await metric('kobo_fx_rates_refused_total{connector="fake",pair="NGN/USD",reason="unusable"}'), 1);
  const warned = await until(async () => server.output(), (out) => out.split('\n').filter((l) => l.includes('"level":"warn"') && l.includes('FX rate') && l.includes('NGN/USD')).length >= 3, 'three warn lines');
  assert.match(warned, /"connector":"fake"/);
});

test('live exchange quote: a rate inside the default ±10 % band is taken (at the connector\'s rate); just outside it, on either side → 422', async () => {
  const c = await liveCustomer();
  for (const [bps, status] of [[900, 201], [-900, 201], [1_000, 201], [1_100, 422], [-1_100, 422]] as const) {
    rates.set('NGN/USD', moved('NGN', 'USD', bps));
    const quote = await api('POST', '/v1/exchange/quotes', { idempotencyKey: idem(), body: { customer_id: c.id, from_currency: 'NGN', to_currency: 'USD', from_amount_minor: 10_000_000 } });
    assert.equal(quote.status, status, `${bps} bps: ${JSON.stringify(quote.body)}`);
    if (status === 201) assert.equal(quote.body.data.mid_rate, moved('NGN', 'USD', bps));
  }
});

test('live exchange quote: a pair\'s own band (KOBO_FX_PAIR_BANDS_BPS=GBP/NGN:1500) holds in both directions; other pairs keep the default', async () => {
  const c = await liveCustomer();
  for (const [from, to, bps, status] of [['NGN', 'GBP', 1_400, 201], ['NGN', 'GBP', -1_400, 201], ['NGN', 'GBP', 1_600, 422], ['NGN', 'USD', 1_400, 422]] as const) {
    rates.set(`${from}/${to}`, moved(from, to, bps));
    const quote = await api('POST', '/v1/exchange/quotes', { idempotencyKey: idem(), body: { customer_id: c.id, from_currency: from, to_currency: to, from_amount_minor: 10_000_000 } });
    assert.equal(quote.status, status, `${from}/${to} ${bps} bps: ${JSON.stringify(quote.body)}`);
  }
});

test('live cross-currency service quote (GB customer, NG airtime): an inverted NGN → GBP rate → 422 FX_QUOTE_UNAVAILABLE; a sane one prices it', async () => {
  const gb = await liveCustomer('GB');
  const body = { customer_id: gb.id, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 100_000, currency: 'NGN', payment_method: 'wallet', phone: `+234803${String(1_000_000 + Math.floor(Math.random() * 8_999_999)).slice(-7)}` };
  rates.set('NGN/GBP', formatRate(midRate('GBP', 'NGN')));
  const refused = await api('POST', '/v1/services/quote', { body });
  assert.equal(refused.status, 422, JSON.stringify(refused.body));
  assert.equal(refused.body.error.code, 'FX_QUOTE_UNAVAILABLE');
  rates.set('NGN/GBP', moved('NGN', 'GBP', 50));
  const quoted = await api('POST', '/v1/services/quote', { body });
  assert.equal(quoted.status, 200, JSON.stringify(quoted.body));
  assert.ok(quoted.body.data.customer_amount_minor < 1_000, `about GBP 0.52 for NGN 1,000: ${quoted.body.data.customer_amount_minor}`);
});

test('amounts a connector restates are not taken: a collection callback claiming more credits the payment\'s amount; a purchase\'s snapshot keeps the order\'s amount and currency', async () => {
  const c = await liveCustomer();
  const created = await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: c.id, amount_minor: 500_000, currency: 'NGN', method: 'card' } });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const id = created.body.data.id as string;
  await until(async () => (await api('GET', `/v1/payments/${id}`)).body.data, (p) => p.provider.checkout_url !== null, 'accepted by the connector');
  const claim = JSON.stringify({ reference: `${id}:1`, kind: 'collection', status: 'settled', provider_reference: 'PSP-1', failure_code: null, detail: { amount_minor: 999_999_999, currency: 'USD' } });
  const called = await fetch(`${server.baseUrl}/v1/connectors/fake/callbacks`, { method: 'POST', headers: { 'content-type': 'application/json', ...signedHeaders(SECRET, claim) }, body: claim });
  assert.equal(called.status, 200, await called.text());
  const paid = await until(async () => (await api('GET', `/v1/payments/${id}`)).body.data, (p) => p.status === 'completed', 'settled by callback');
  const wallet = (await api('GET', `/v1/wallets/${c.walletId}`)).body.data;
  assert.equal(wallet.balance_minor, paid.amount_minor - paid.fee_minor, 'credited the payment\'s own amount, net of its fee');

  fulfilmentDetail = { token: 'TOKEN-1', amount_minor: 1, currency: 'USD', service_code: 'tv', provider_reference: 'FORGED' };
  const order = await api('POST', '/v1/services/orders', { idempotencyKey: idem(), body: { customer_id: c.id, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 20_000, currency: 'NGN', payment_method: 'wallet', phone: `+234803${String(1_000_000 + Math.floor(Math.random() * 8_999_999)).slice(-7)}` } });
  assert.equal(order.status, 201, JSON.stringify(order.body));
  const done = await until(async () => (await api('GET', `/v1/services/orders/${order.body.data.order.id}/status`)).body.data, (o) => o.status === 'completed', 'delivered', 10_000);
  const snapshot = done.fulfillment_snapshot;
  assert.equal(snapshot.token, 'TOKEN-1', 'what the rail hands back is kept');
  assert.deepEqual([snapshot.amount_minor, snapshot.currency, snapshot.service_code, snapshot.provider_reference], [20_000, 'NGN', 'airtime', 'BILLER-1'], 'kobo\'s own fields are not overwritten');
});

// Live lookups and retries through the reference connector as a separate process (signed both ways):
// FX rates for exchange quotes, service recipient lookup, a failed live collection retried as a new
// attempt (`<id>:2`) at the connector, and the connector metrics on /metrics. Also the refusals when the
// configured connectors do not cover an FX pair or a lookup.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey, startServer, tempDataDir, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';
import { connectorsFile, startConnector, type TestConnector } from '../helpers/connector.ts';
import { until } from '../helpers/wait.ts';
import { signedHeaders } from '../../src/connectors/signing.ts';
import { midRate } from '../../src/catalogue/fx.ts';
import { formatRate, parseRate } from '../../src/money/convert.ts';

const SECRET = 'reference-connector-secret-4567';
const LIVE = secretKey('live');
let connector: TestConnector;
let server: TestServer;
let api: ReturnType<typeof client>;

before(async () => {
  connector = await startConnector(['--secret', SECRET, '--name', 'ref', '--fx-drift-bps', '100']);
  // FX only between NGN and USD; recipient lookup only for electricity (the fulfilment rail serves all).
  const file = connectorsFile([
    { name: 'ref', url: connector.url, secret: SECRET, rails: ['collection', 'payout', 'fulfilment'], timeout_ms: 2000 },
    { name: 'ref-fx', url: connector.url, secret: SECRET, rails: ['fx'], currencies: ['NGN', 'USD', 'GBP'], timeout_ms: 2000 },
    { name: 'ref-lookup', url: connector.url, secret: SECRET, rails: ['resolve'], services: ['electricity'], timeout_ms: 2000 },
  ]);
  server = await startServer({ keys: [`${LIVE}@acme`], dataDir: tempDataDir('live-rails'), env: { KOBO_CONNECTORS_FILE: file } });
  api = client(server.baseUrl, LIVE);
});

after(async () => {
  await server?.stop();
  await connector?.stop();
});

async function liveCustomer(country: 'NG' | 'GB' | 'KE' = 'NG', phone = uniquePhone()): Promise<{ id: string; walletId: string }> {
  const c = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: 'Live Rails', email: uniqueEmail(), phone, country_code: country } });
  assert.equal(c.status, 201, JSON.stringify(c.body));
  assert.equal((await api('PATCH', `/v1/customers/${c.body.data.id}`, { body: { kyc_level: 2 } })).status, 200);
  return { id: c.body.data.id, walletId: c.body.data.wallets[0].id };
}

async function metrics(): Promise<string> {
  return (await fetch(`${server.baseUrl}/metrics`)).text();
}

function sample(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

test('live exchange quote: priced at the FX connector\'s mid rate (reference table + 100 bps) less kobo\'s spread', async () => {
  const c = await liveCustomer();
  const quote = await api('POST', '/v1/exchange/quotes', { idempotencyKey: idem(), body: { customer_id: c.id, from_currency: 'NGN', to_currency: 'USD', from_amount_minor: 10_000_000 } });
  assert.equal(quote.status, 201, JSON.stringify(quote.body));
  const table = midRate('NGN', 'USD');
  assert.equal(quote.body.data.mid_rate, formatRate({ num: table.num * 10_100n, den: table.den * 10_000n }), 'the connector\'s rate, not the table\'s');
  assert.notEqual(quote.body.data.mid_rate, formatRate(table));
  assert.ok(Number(quote.body.data.rate) < Number(quote.body.data.mid_rate), 'the customer rate is below mid (spread)');
  assert.ok(connector.output().includes('submit fx fx-'), connector.output());
});

// The contract's exchange quote error: "400 VALIDATION (invalid field or unsupported pair)".
test('live exchange quote for a pair no FX connector covers → 400 VALIDATION (unsupported pair: no live FX source), no quote', async () => {
  const c = await liveCustomer();
  const quote = await api('POST', '/v1/exchange/quotes', { idempotencyKey: idem(), body: { customer_id: c.id, from_currency: 'NGN', to_currency: 'KES', from_amount_minor: 10_000_000 } });
  assert.equal(quote.status, 400, JSON.stringify(quote.body));
  assert.equal(quote.body.error.code, 'VALIDATION');
  assert.match(quote.body.error.message, /no live FX source is configured for NGN → KES/);
});

test('live cross-currency service quote (GB customer, NG airtime): priced at the FX connector\'s NGN → GBP rate; GH airtime (no FX source for GHS) → 400 VALIDATION, the quote\'s code for it', async () => {
  const gb = await liveCustomer('GB', `+4479111${String(10_000 + Math.floor(Math.random() * 89_999)).slice(-5)}`);
  const body = { customer_id: gb.id, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 100_000, currency: 'NGN', payment_method: 'wallet', phone: `+234803${String(1_000_000 + Math.floor(Math.random() * 8_999_999)).slice(-7)}` };
  const quote = await api('POST', '/v1/services/quote', { body });
  assert.equal(quote.status, 200, JSON.stringify(quote.body));
  assert.equal(quote.body.data.cross_currency, true);
  assert.equal(quote.body.data.source_currency, 'GBP');
  // The rate charged is the connector's mid (reference + 100 bps) plus kobo's 150 bps spread, not the table's.
  const table = midRate('NGN', 'GBP');
  const answered = parseRate(formatRate({ num: table.num * 10_100n, den: table.den * 10_000n }));
  assert.equal(quote.body.data.fx_rate, formatRate({ num: answered.num * 10_150n, den: answered.den * 10_000n }));
  assert.ok(connector.output().includes('submit fx fx-'), connector.output());
  const ghAirtime = { ...body, country_code: 'GH', currency: 'GHS', provider_cost_minor: 1_000, phone: `+23324${String(1_000_000 + Math.floor(Math.random() * 8_999_999)).slice(-7)}` };
  const refused = await api('POST', '/v1/services/quote', { body: ghAirtime });
  assert.equal(refused.status, 400, JSON.stringify(refused.body));
  assert.equal(refused.body.error.code, 'VALIDATION');
  assert.match(refused.body.error.message, /no live FX source is configured for GHS → GBP/);
});

test('live recipient lookup: electricity resolved by the lookup connector; a failing meter → 422 VALIDATION_ERROR; airtime (no lookup connector) → 422 SERVICE_UNAVAILABLE', async () => {
  const c = await liveCustomer();
  const body = { customer_id: c.id, country_code: 'NG', operator_code: 'IKEDC', meter_type: 'prepaid' };
  const ok = await api('POST', '/v1/services/electricity/validate', { body: { ...body, account_ref: '45012345678' } });
  assert.equal(ok.status, 200, JSON.stringify(ok.body));
  assert.equal(ok.body.data.valid, true);
  assert.match(ok.body.data.customer_name, /^[A-Z]+ [A-Z]+$/);
  assert.match(ok.body.data.address, /Marina Road$/, 'the connector\'s address, not a sandbox one');
  assert.deepEqual(ok.body.data.serviceability, { serviceable: true, reason: null });
  const failed = await api('POST', '/v1/services/electricity/validate', { body: { ...body, account_ref: '45012349999' } });
  assert.equal(failed.status, 422, JSON.stringify(failed.body));
  assert.equal(failed.body.error.code, 'VALIDATION_ERROR');
  const airtime = await api('POST', '/v1/services/airtime/validate', { body: { customer_id: c.id, country_code: 'NG', account_ref: '08031234567' } });
  assert.equal(airtime.status, 422, JSON.stringify(airtime.body));
  assert.equal(airtime.body.error.code, 'SERVICE_UNAVAILABLE');
});

test('retrying a failed live collection makes a new connector call (`<id>:2`) with a new page; the old attempt\'s callback changes nothing', async () => {
  const c = await liveCustomer();
  const before = await metrics();
  const created = await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: c.id, amount_minor: 500_000, currency: 'NGN', method: 'card' } });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const id = created.body.data.id as string;
  const payment = async () => (await api('GET', `/v1/payments/${id}`)).body.data;
  const first = await until(payment, (p) => p.provider.checkout_url !== null, 'attempt 1 accepted');
  assert.ok(first.provider.checkout_url.endsWith(`/pay/${encodeURIComponent(`${id}:1`)}`), first.provider.checkout_url);
  assert.equal((await fetch(`${first.provider.checkout_url}?outcome=failed`)).status, 200);
  await until(payment, (p) => p.status === 'failed', 'attempt 1 failed by callback');

  const retried = await api('POST', `/v1/transactions/${created.body.data.transaction_id}/retry`, { idempotencyKey: idem() });
  assert.equal(retried.status, 200, JSON.stringify(retried.body));
  const second = await until(payment, (p) => p.status === 'pending' && p.provider.checkout_url !== null, 'attempt 2 accepted');
  assert.ok(second.provider.checkout_url.endsWith(`/pay/${encodeURIComponent(`${id}:2`)}`), second.provider.checkout_url);
  assert.ok(connector.output().includes(`submit collections ${id}:2 → accepted`), connector.output());

  // A (replayed) callback for attempt 1 is acknowledged and applies nothing.
  const stale = JSON.stringify({ reference: `${id}:1`, kind: 'collection', status: 'settled', provider_reference: 'OLD', failure_code: null, detail: null });
  const replay = await fetch(`${server.baseUrl}/v1/connectors/ref/callbacks`, { method: 'POST', headers: { 'content-type': 'application/json', ...signedHeaders(SECRET, stale) }, body: stale });
  assert.equal(replay.status, 200);
  assert.equal((await replay.json()).data.applied, false);
  assert.equal((await payment()).status, 'pending');

  assert.equal((await fetch(`${second.provider.checkout_url}?outcome=settled`)).status, 200);
  const done = await until(payment, (p) => p.status === 'completed', 'attempt 2 settled by callback');
  const wallet = (await api('GET', `/v1/wallets/${c.walletId}`)).body.data;
  assert.equal(wallet.balance_minor, done.amount_minor - done.fee_minor, 'credited once');

  // Connector metrics: two collection submits more, accepted; callbacks accepted; a forged one rejected.
  const forged = await fetch(`${server.baseUrl}/v1/connectors/ref/callbacks`, { method: 'POST', headers: { 'content-type': 'application/json', ...signedHeaders('not-the-secret-at-all', stale) }, body: stale });
  assert.equal(forged.status, 401);
  const series = 'kobo_connector_calls_total{connector="ref",kind="collection",op="submit",outcome="accepted"}';
  const afterText = await until(metrics, (text) => sample(text, series) >= sample(before, series) + 2, 'two collection submits counted', 5_000);
  const callbacks = (result: string, text: string) => sample(text, `kobo_connector_callbacks_total{connector="ref",result="${result}"}`);
  assert.ok(callbacks('accepted', afterText) >= callbacks('accepted', before) + 3, 'payer callbacks and the replay accepted');
  assert.equal(callbacks('rejected', afterText), callbacks('rejected', before) + 1, 'the forged callback rejected');
  assert.match(afterText, /^kobo_connector_call_duration_seconds_count\{connector="ref",kind="collection",op="submit"\} [1-9]/m);
  assert.ok(sample(afterText, 'kobo_connector_calls_total{connector="ref-fx",kind="fx",op="submit",outcome="settled"}') >= 1, 'FX lookups from the main thread counted');
  assert.ok(!afterText.includes(id), 'labels never carry references');
});

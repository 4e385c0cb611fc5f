// Live money through an operator connector: kobo and the reference connector (`kobo connector`) run as
// separate processes and sign every message both ways (docs/connectors.md). Covers live card,
// bank-transfer and mobile-money collections, service orders (wallet- and card-paid, timeout → unknown →
// requery → delivered), account-name resolution, payouts (settled, timeout →
// unknown → requery → completed), callbacks (replayed twice: applied once; forged or stale: 401,
// nothing changes) and kill -9 of kobo while the connector has decided but kobo has not committed.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey, startServer, tempDataDir, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';
import { connectorsFile, startConnector, type TestConnector } from '../helpers/connector.ts';
import { until } from '../helpers/wait.ts';
import { signedHeaders } from '../../src/connectors/signing.ts';

const SECRET = 'reference-connector-secret-0123';
const LIVE = secretKey('live');
const dataDir = tempDataDir('live-connector');
let connector: TestConnector;
let serverEnv: Record<string, string>;
let server: TestServer;
let api: ReturnType<typeof client>;

async function startKobo(): Promise<void> {
  server = await startServer({ keys: [`${LIVE}@acme`], dataDir, env: serverEnv });
  api = client(server.baseUrl, LIVE);
}

before(async () => {
  // Answers held 2.5 s (ending 9998) outlast kobo's 1 s timeout; asynchronous payouts (ending 9997) are
  // called back only after a minute, so the test sends (and replays) that callback itself.
  connector = await startConnector(['--secret', SECRET, '--name', 'ref', '--timeout-hold-ms', '2500', '--callback-delay-ms', '60000']);
  const file = connectorsFile([{ name: 'ref', url: connector.url, secret: SECRET, rails: ['collection', 'payout', 'resolve', 'fulfilment'], timeout_ms: 1000 }]);
  serverEnv = { KOBO_CONNECTORS_FILE: file, KOBO_REQUERY_AFTER_MS: '1500' };
  await startKobo();
});

after(async () => {
  await server?.stop();
  await connector?.stop();
});

async function liveCustomer(country: 'NG' | 'KE' = 'NG'): Promise<{ id: string; walletId: string; currency: string }> {
  const phone = country === 'NG' ? uniquePhone() : `+2547${String(10_000_000 + Math.floor(Math.random() * 89_999_999))}`;
  const c = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: 'Live Payer', email: uniqueEmail(), phone, country_code: country } });
  assert.equal(c.status, 201, JSON.stringify(c.body));
  assert.equal((await api('PATCH', `/v1/customers/${c.body.data.id}`, { body: { kyc_level: 2 } })).status, 200);
  return { id: c.body.data.id, walletId: c.body.data.wallets[0].id, currency: c.body.data.wallets[0].currency };
}

const wallet = async (id: string) => (await api('GET', `/v1/wallets/${id}`)).body.data as { balance_minor: number; held_minor: number; available_minor: number };
const payment = (id: string) => async () => (await api('GET', `/v1/payments/${id}`)).body.data;
const transfer = (id: string) => async () => (await api('GET', `/v1/transfers/${id}`)).body.data;

/** A live collection paid on the connector's page: returns the net credited. */
async function collect(customer: { id: string; currency: string }, method: string, amountMinor: number): Promise<number> {
  const created = await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: customer.id, amount_minor: amountMinor, currency: customer.currency, method } });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  assert.equal(created.body.data.status, 'pending');
  const accepted = await until(payment(created.body.data.id), (p) => p.provider.checkout_url !== null, 'the connector accepted the collection');
  assert.ok(accepted.provider.checkout_url.startsWith(`${connector.url}/pay/`), accepted.provider.checkout_url);
  // kobo's own sandbox page never completes a live payment.
  assert.equal((await fetch(`${server.baseUrl}/v1/checkout/${created.body.data.id}/complete?token=${'0'.repeat(32)}`, { method: 'POST' })).status, 404);
  const paid = await fetch(`${accepted.provider.checkout_url}?outcome=settled`);
  assert.equal(paid.status, 200, await paid.text());
  const done = await until(payment(created.body.data.id), (p) => p.status === 'completed', 'the connector called back settled');
  return done.amount_minor - done.fee_minor;
}

async function liveBeneficiary(customerId: string, accountNumber: string): Promise<{ id: string; account_name: string }> {
  const b = await api('POST', '/v1/beneficiaries', { idempotencyKey: idem(), body: { customer_id: customerId, type: 'bank_account', bank_code: '058', account_number: accountNumber, currency: 'NGN' } });
  assert.equal(b.status, 201, JSON.stringify(b.body));
  return b.body.data;
}

async function send(customerId: string, beneficiaryId: string, amountMinor: number) {
  const t = await api('POST', '/v1/transfers', { idempotencyKey: idem(), body: { customer_id: customerId, beneficiary_id: beneficiaryId, amount_minor: amountMinor, currency: 'NGN' } });
  assert.equal(t.status, 201, JSON.stringify(t.body));
  return t.body.data as { id: string; transaction_id: string; fee_minor: number };
}

function signedCallback(body: object, secret = SECRET, nowMs = Date.now()): { rawBody: string; headers: Record<string, string> } {
  const rawBody = JSON.stringify(body);
  return { rawBody, headers: { 'content-type': 'application/json', ...signedHeaders(secret, rawBody, nowMs) } };
}

test('live collections (card, bank_transfer; mobile_money in KE) run through the connector: accepted → payer pays on its page → signed callback → completed, wallet credited net', async () => {
  const ng = await liveCustomer();
  const methods = (await api('GET', `/v1/payments/methods?customer_id=${ng.id}`)).body.data.items as Array<{ method: string; selectable: boolean }>;
  assert.equal(methods.find((m) => m.method === 'card')?.selectable, true);
  let net = await collect(ng, 'card', 5_000_000);
  net += await collect(ng, 'bank_transfer', 2_000_000);
  assert.deepEqual(await wallet(ng.walletId), { ...(await wallet(ng.walletId)), balance_minor: net, held_minor: 0 });
  const ke = await liveCustomer('KE');
  const keMethods = (await api('GET', `/v1/payments/methods?customer_id=${ke.id}`)).body.data.items as Array<{ method: string; selectable: boolean; enabled: boolean }>;
  if (keMethods.find((m) => m.method === 'mobile_money')?.enabled === true) {
    const keNet = await collect(ke, 'mobile_money', 100_000);
    assert.equal((await wallet(ke.walletId)).balance_minor, keNet);
  }
});

test('a live collection with its connector cannot be cancelled (409 CONFLICT): the payer still pays at the provider and the money lands', async () => {
  const ng = await liveCustomer();
  const created = await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: ng.id, amount_minor: 50_000, currency: 'NGN', method: 'card' } });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const accepted = await until(payment(created.body.data.id), (p) => p.provider.checkout_url !== null, 'the connector accepted the collection');
  const cancel = await api('POST', `/v1/transactions/${created.body.data.transaction_id}/cancel`, { idempotencyKey: idem() });
  assert.deepEqual([cancel.status, cancel.body.error?.code], [409, 'CONFLICT'], JSON.stringify(cancel.body));
  assert.equal((await payment(created.body.data.id)()).status, 'pending');
  assert.equal((await fetch(`${accepted.provider.checkout_url}?outcome=settled`)).status, 200);
  const done = await until(payment(created.body.data.id), (p) => p.status === 'completed', 'the connector called back settled');
  assert.equal((await wallet(ng.walletId)).balance_minor, done.amount_minor - done.fee_minor, 'the payer’s money is credited');
});

test('live payout: the connector resolves the account name, then pays it (settled) — hold posted once', async () => {
  const c = await liveCustomer();
  const funded = await collect(c, 'card', 5_000_000);
  const b = await liveBeneficiary(c.id, '0123456789');
  assert.match(b.account_name, /^[A-Z][a-z]+ [A-Z][a-z]+$/);
  const refused = await api('POST', '/v1/beneficiaries', { idempotencyKey: idem(), body: { customer_id: c.id, type: 'bank_account', bank_code: '058', account_number: '0123459999', currency: 'NGN' } });
  assert.equal(refused.status, 422, JSON.stringify(refused.body));
  assert.equal(refused.body.error.code, 'VERIFICATION_FAILED');
  const t = await send(c.id, b.id, 100_000);
  await until(transfer(t.id), (d) => d.status === 'completed', 'completed');
  assert.deepEqual([(await wallet(c.walletId)).balance_minor, (await wallet(c.walletId)).held_minor], [funded - 100_000 - t.fee_minor, 0]);
});

test('live payout timeout → unknown → requery → completed (the connector decided; kobo never resubmits)', async () => {
  const c = await liveCustomer();
  const funded = await collect(c, 'card', 5_000_000);
  const b = await liveBeneficiary(c.id, '0123459998');
  const t = await send(c.id, b.id, 200_000);
  await until(transfer(t.id), (d) => d.status === 'unknown', 'unknown after the 1 s timeout');
  assert.equal((await wallet(c.walletId)).held_minor, 200_000 + t.fee_minor, 'held while unknown');
  await until(transfer(t.id), (d) => d.status === 'completed', 'completed by requery', 10_000);
  const txn = (await api('GET', `/v1/transactions/${t.transaction_id}`)).body.data;
  assert.deepEqual(txn.status_history.map((h: { status: string }) => h.status), ['pending', 'processing', 'unknown', 'completed']);
  assert.deepEqual([(await wallet(c.walletId)).balance_minor, (await wallet(c.walletId)).held_minor], [funded - 200_000 - t.fee_minor, 0]);
  assert.equal(connector.output().split('\n').filter((l) => l.includes(`submit payouts ${t.id}:1`)).length, 1, 'submitted once');
});

test('callbacks: forged or stale → 401 and nothing changes; accepted again → applied false; a valid callback replayed twice is applied once', async () => {
  const c = await liveCustomer();
  const funded = await collect(c, 'card', 5_000_000);
  const b = await liveBeneficiary(c.id, '0123459997');
  const t = await send(c.id, b.id, 300_000);
  await until(async () => connector.output(), (out) => out.includes(`submit payouts ${t.id}:1 → accepted`), 'the connector accepted');
  const url = `${server.baseUrl}/v1/connectors/ref/callbacks`;
  const body = { reference: `${t.id}:1`, kind: 'payout', status: 'settled', provider_reference: 'BANK-REF-1' };
  for (const forged of [signedCallback(body, 'not-the-connector-secret-000'), signedCallback(body, SECRET, Date.now() - 3_600_000)]) {
    const r = await fetch(url, { method: 'POST', headers: forged.headers, body: forged.rawBody });
    assert.equal(r.status, 401, await r.text());
  }
  const tampered = signedCallback(body);
  const r = await fetch(url, { method: 'POST', headers: tampered.headers, body: tampered.rawBody.replace('settled', 'failed') });
  assert.equal(r.status, 401);
  assert.equal((await transfer(t.id)()).status, 'processing', 'nothing changed');
  assert.equal((await wallet(c.walletId)).held_minor, 300_000 + t.fee_minor);
  // Valid and signed, but it tells kobo nothing new (the payout is already with the connector).
  for (let i = 0; i < 2; i += 1) {
    const same = signedCallback({ ...body, status: 'accepted' });
    const ack = await fetch(url, { method: 'POST', headers: same.headers, body: same.rawBody });
    assert.equal(ack.status, 200);
    assert.equal((await ack.json()).data.applied, false, 'accepted again: nothing changed');
  }
  assert.equal((await transfer(t.id)()).status, 'processing', 'still processing');
  const signed = signedCallback(body);
  const first = await fetch(url, { method: 'POST', headers: signed.headers, body: signed.rawBody });
  const second = await fetch(url, { method: 'POST', headers: signed.headers, body: signed.rawBody });
  assert.deepEqual([first.status, second.status], [200, 200]);
  assert.deepEqual([(await first.json()).data.applied, (await second.json()).data.applied], [true, false]);
  await until(transfer(t.id), (d) => d.status === 'completed', 'completed');
  assert.deepEqual([(await wallet(c.walletId)).balance_minor, (await wallet(c.walletId)).held_minor], [funded - 300_000 - t.fee_minor, 0], 'debited once');
});

test('kill -9 while the connector has decided but kobo has not committed its answer: after restart a requery lands the outcome exactly once', async () => {
  const c = await liveCustomer();
  const funded = await collect(c, 'card', 5_000_000);
  const b = await liveBeneficiary(c.id, '0123459998');
  const t = await send(c.id, b.id, 400_000);
  // The connector records the payout settled on receipt and holds its answer 2.5 s: kill kobo inside that.
  await until(async () => connector.output(), (out) => out.includes(`submit payouts ${t.id}:1 → settled`), 'the connector decided');
  await server.kill();
  await startKobo();
  await until(transfer(t.id), (d) => d.status === 'completed', 'completed after restart', 10_000);
  assert.deepEqual([(await wallet(c.walletId)).balance_minor, (await wallet(c.walletId)).held_minor], [funded - 400_000 - t.fee_minor, 0], 'paid once');
  assert.equal(connector.output().split('\n').filter((l) => l.includes(`submit payouts ${t.id}:1`)).length, 1, 'never resubmitted');
  assert.ok(connector.output().includes(`requery ${t.id}:1 → settled`), 'learned by requery');
});

const order = (id: string) => async () => (await api('GET', `/v1/services/orders/${id}/status`)).body.data;
let phoneSeq = 0;
const mtnPhone = (ending: string): string => `+234803${String(100 + (phoneSeq++ % 800)).padStart(3, '0')}${ending}`;

test('live service orders: the catalogue offers airtime; a wallet-paid order is bought from the connector (receipt in the snapshot); a timeout is unknown, requeried, delivered once', async () => {
  const c = await liveCustomer();
  const funded = await collect(c, 'card', 5_000_000);
  const items = (await api('GET', `/v1/services?country=NG&customer_id=${c.id}`)).body.data.items as Array<{ service_code: string; access: { executable: boolean } }>;
  assert.equal(items.find((i) => i.service_code === 'airtime')?.access.executable, true);
  let spent = 0;
  for (const ending of ['1234', '9998']) {
    const created = await api('POST', '/v1/services/orders', { idempotencyKey: idem(), body: { customer_id: c.id, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 20_000, currency: 'NGN', payment_method: 'wallet', phone: mtnPhone(ending) } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const o = created.body.data.order;
    if (ending === '9998') await until(order(o.id), (d) => d.status === 'unknown', 'unknown after the timeout');
    const done = await until(order(o.id), (d) => d.status === 'completed', 'delivered', 10_000);
    assert.match(String(done.fulfillment_snapshot.receipt_number), /^RCPT-/);
    assert.equal(connector.output().split('\n').filter((l) => l.includes(`submit fulfilments ${o.id}:1`)).length, 1, 'bought once');
    spent += o.customer_amount_minor;
  }
  assert.deepEqual([(await wallet(c.walletId)).balance_minor, (await wallet(c.walletId)).held_minor], [funded - spent, 0]);
});

test('live card-paid service order: collected on the connector\'s page, then fulfilled by the connector', async () => {
  const c = await liveCustomer();
  const created = await api('POST', '/v1/services/orders', { idempotencyKey: idem(), body: { customer_id: c.id, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 50_000, currency: 'NGN', payment_method: 'card', phone: mtnPhone('4321') } });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  assert.equal(created.body.data.checkout_url, null, 'never kobo\'s sandbox page');
  const p = await until(payment(created.body.data.payment.id), (d) => d.provider.checkout_url !== null, 'accepted');
  assert.equal((await fetch(`${p.provider.checkout_url}?outcome=settled`)).status, 200);
  const done = await until(order(created.body.data.order.id), (d) => d.status === 'completed', 'delivered', 10_000);
  assert.match(String(done.fulfillment_snapshot.receipt_number), /^RCPT-/);
});

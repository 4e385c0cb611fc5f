// A rail outcome that contradicts a final one (settled after failed, failed after completed) is neither
// dropped nor applied: the transaction is marked for reconciliation (shown on it; its status stays one
// of the contract's), retry answers 409, the contradiction is logged at warn and counted in /metrics,
// and `kobo reconcile list` shows it until `kobo reconcile resolve` decides. Transfers, collections and
// service orders, against the reference connector in its own process (docs/connectors.md).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey, startServer, tempDataDir, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';
import { connectorsFile, startConnector, type TestConnector } from '../helpers/connector.ts';
import { until, waitFor } from '../helpers/wait.ts';
import { kobo } from '../helpers/cli.ts';
import { signedHeaders } from '../../src/connectors/signing.ts';

const SECRET = 'reference-connector-secret-0123';
const LIVE = secretKey('live');
let connector: TestConnector;
let server: TestServer;
let api: ReturnType<typeof client>;
let serverOptions: Parameters<typeof startServer>[0];

before(async () => {
  // Answers for subjects ending 9998 are decided settled but held 2.5 s, past kobo's 1 s timeout.
  connector = await startConnector(['--secret', SECRET, '--name', 'ref', '--timeout-hold-ms', '2500', '--callback-delay-ms', '60000']);
  const file = connectorsFile([{ name: 'ref', url: connector.url, secret: SECRET, rails: ['collection', 'payout', 'resolve', 'fulfilment'], timeout_ms: 1000 }]);
  serverOptions = { keys: [`${LIVE}@acme`], dataDir: tempDataDir('contradictions'), env: { KOBO_CONNECTORS_FILE: file, KOBO_REQUERY_AFTER_MS: '1500' } };
  server = await startServer(serverOptions);
  api = client(server.baseUrl, LIVE);
});

after(async () => {
  await server?.stop();
  await connector?.stop();
});

async function liveCustomer(): Promise<{ id: string; walletId: string }> {
  const c = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: 'Live Payer', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
  assert.equal(c.status, 201, JSON.stringify(c.body));
  assert.equal((await api('PATCH', `/v1/customers/${c.body.data.id}`, { body: { kyc_level: 2 } })).status, 200);
  return { id: c.body.data.id, walletId: c.body.data.wallets[0].id };
}

const payment = (id: string) => async () => (await api('GET', `/v1/payments/${id}`)).body.data;
const transfer = (id: string) => async () => (await api('GET', `/v1/transfers/${id}`)).body.data;
const transaction = (id: string) => async () => (await api('GET', `/v1/transactions/${id}`)).body.data;
const order = (id: string) => async () => (await api('GET', `/v1/services/orders/${id}/status`)).body.data;
const wallet = async (id: string) => (await api('GET', `/v1/wallets/${id}`)).body.data as { balance_minor: number; held_minor: number };

async function funded(customer: { id: string }, amountMinor: number): Promise<void> {
  const created = await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: customer.id, amount_minor: amountMinor, currency: 'NGN', method: 'card' } });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const accepted = await until(payment(created.body.data.id), (p) => p.provider.checkout_url !== null, 'accepted');
  assert.equal((await fetch(`${accepted.provider.checkout_url}?outcome=settled`)).status, 200);
  await until(payment(created.body.data.id), (p) => p.status === 'completed', 'collected');
}

/** A callback signed with the connector's secret, as the connector (or its operator's tooling) sends it. */
async function callback(body: Record<string, unknown>): Promise<{ applied: boolean }> {
  const raw = JSON.stringify(body);
  const r = await fetch(`${server.baseUrl}/v1/connectors/ref/callbacks`, { method: 'POST', headers: { 'content-type': 'application/json', ...signedHeaders(SECRET, raw) }, body: raw });
  assert.equal(r.status, 200, await r.clone().text());
  return (await r.json()).data;
}

async function send(customerId: string, accountNumber: string, amountMinor: number): Promise<{ id: string; transaction_id: string; fee_minor: number }> {
  const b = await api('POST', '/v1/beneficiaries', { idempotencyKey: idem(), body: { customer_id: customerId, type: 'bank_account', bank_code: '058', account_number: accountNumber, currency: 'NGN' } });
  assert.equal(b.status, 201, JSON.stringify(b.body));
  const t = await api('POST', '/v1/transfers', { idempotencyKey: idem(), body: { customer_id: customerId, beneficiary_id: b.body.data.id, amount_minor: amountMinor, currency: 'NGN' } });
  assert.equal(t.status, 201, JSON.stringify(t.body));
  return t.body.data;
}

const submits = (reference: string): number => connector.output().split('\n').filter((l) => l.includes(`submit payouts ${reference}`)).length;
const metric = async (kind: string, event: string): Promise<number> => {
  const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
  return Number(new RegExp(`^kobo_reconciliations_total\\{kind="${kind}",event="${event}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
};

test('payout: unknown → a signed failed callback fails it and releases the hold → the requery says settled: marked for reconciliation, retry 409, nothing paid twice; warn, metric, CLI list and resolve', { timeout: 90_000 }, async () => {
  const c = await liveCustomer();
  await funded(c, 5_000_000);
  const t = await send(c.id, '0123459998', 200_000);
  await until(transfer(t.id), (d) => d.status === 'unknown', 'unknown after the 1 s timeout');
  const ack = await callback({ reference: `${t.id}:1`, kind: 'payout', status: 'failed', failure_code: 'PROVIDER_ERROR', provider_reference: 'BANK-FAIL-1' });
  assert.equal(ack.applied, true);
  await until(transfer(t.id), (d) => d.status === 'failed', 'failed by the callback');
  assert.equal((await wallet(c.walletId)).held_minor, 0, 'hold released');
  assert.equal((await callback({ reference: `${t.id}:1`, kind: 'payout', status: 'failed', failure_code: 'PROVIDER_ERROR' })).applied, false, 'the same outcome again: a harmless duplicate');
  assert.equal((await transaction(t.transaction_id)()).reconciliation, undefined, 'agreeing outcomes mark nothing');

  await until(async () => connector.output(), (out) => out.includes(`requery ${t.id}:1 → settled`), 'the requery, which the connector answers settled', 10_000);
  const marked = await waitFor(transaction(t.transaction_id), (d) => d.reconciliation?.status === 'required');
  const retry = await api('POST', `/v1/transactions/${t.transaction_id}/retry`, { idempotencyKey: idem() });
  assert.deepEqual([retry.status, retry.body.error?.code], [409, 'CONFLICT'], `retry paid out again: ${JSON.stringify(retry.body)}`);
  assert.match(retry.body.error.message, /awaits reconciliation/);
  assert.equal(marked.status, 'failed', 'the status stays one of the contract\'s, as recorded');
  assert.deepEqual(
    { ...marked.reconciliation, reported_at: undefined },
    { status: 'required', recorded_outcome: 'failed', reported_outcome: 'completed', object: 'transfer', object_id: t.id, attempt: 1, reported_by: 'ref', provider_reference: marked.reconciliation.provider_reference, reported_at: undefined, resolution: null, resolved_at: null },
  );
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.equal(submits(`${t.id}:`), 1, 'one payout submitted, never a second');
  await until(async () => server.output(), (out) => /"level":"warn".*reconciliation required: the payout rail ref reported completed/.test(out), 'the warn line');
  await until(() => metric('payout', 'required'), (n) => n === 1, 'kobo_reconciliations_total');

  const listed = kobo(server.dataDir, 'reconcile', 'list');
  assert.equal(listed.status, 0, listed.stderr);
  assert.match(listed.stdout, new RegExp(`^${t.transaction_id} .*recorded failed, ref reported completed for payout ${t.id} attempt 1`, 'm'));
  assert.match(listed.stdout, /^1 transaction\(s\) await reconciliation$/m);
  const resolved = kobo(server.dataDir, 'reconcile', 'resolve', t.transaction_id, '--outcome', 'reported', '--note', 'the bank confirms the payout reached the beneficiary');
  assert.equal(resolved.status, 0, resolved.stderr);
  assert.match(resolved.stdout, /applied/);
  const after = await transaction(t.transaction_id)();
  assert.deepEqual([after.reconciliation.status, after.reconciliation.resolution], ['resolved', 'reported']);
  assert.equal((await api('POST', `/v1/transactions/${t.transaction_id}/retry`, { idempotencyKey: idem() })).status, 409, 'confirmed paid: never retried');
  assert.equal(submits(`${t.id}:`), 1);
  assert.match(kobo(server.dataDir, 'reconcile', 'list').stdout, /^0 transaction\(s\) await reconciliation$/m);
  assert.equal(kobo(server.dataDir, 'reconcile', 'resolve', t.transaction_id, '--outcome', 'recorded').status, 1, 'resolved once');
  await until(() => metric('payout', 'resolved'), (n) => n === 1, 'the resolution counted');
});

test('payout: completed, then a signed failed callback: marked (recorded completed, reported failed), acknowledged applied false, nothing moves', { timeout: 60_000 }, async () => {
  const c = await liveCustomer();
  await funded(c, 5_000_000);
  const t = await send(c.id, '0123456789', 100_000);
  await until(transfer(t.id), (d) => d.status === 'completed', 'completed');
  const before = await wallet(c.walletId);
  assert.equal((await callback({ reference: `${t.id}:1`, kind: 'payout', status: 'failed', failure_code: 'PROVIDER_ERROR' })).applied, false);
  const marked = await until(transaction(t.transaction_id), (d) => d.reconciliation?.status === 'required', 'marked');
  assert.deepEqual([marked.status, marked.reconciliation.recorded_outcome, marked.reconciliation.reported_outcome], ['completed', 'completed', 'failed']);
  assert.deepEqual(await wallet(c.walletId), before, 'no money moved on the rail\'s word');
  assert.equal((await transfer(t.id)()).status, 'completed');
});

test('collection: failed by a signed callback, then the payer pays on the provider\'s page (settled): marked, retry 409, no credit; resolved as recorded, the retry is allowed again', { timeout: 60_000 }, async () => {
  const c = await liveCustomer();
  const created = await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: c.id, amount_minor: 70_000, currency: 'NGN', method: 'card' } });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const p = created.body.data;
  const accepted = await until(payment(p.id), (d) => d.provider.checkout_url !== null, 'accepted');
  assert.equal((await callback({ reference: `${p.id}:1`, kind: 'collection', status: 'failed', failure_code: 'PROVIDER_ERROR' })).applied, true);
  await until(payment(p.id), (d) => d.status === 'failed', 'failed');
  assert.equal((await fetch(`${accepted.provider.checkout_url}?outcome=settled`)).status, 200, 'the payer pays at the provider anyway');
  const marked = await until(transaction(p.transaction_id), (d) => d.reconciliation?.status === 'required', 'the settled callback recorded as a contradiction');
  assert.deepEqual([marked.status, marked.reconciliation.object, marked.reconciliation.recorded_outcome, marked.reconciliation.reported_outcome], ['failed', 'payment', 'failed', 'completed']);
  assert.equal((await wallet(c.walletId)).balance_minor, 0, 'not credited on a contradicted outcome');
  assert.equal((await api('POST', `/v1/transactions/${p.transaction_id}/retry`, { idempotencyKey: idem() })).status, 409);
  assert.match(kobo(server.dataDir, 'reconcile', 'list').stdout, new RegExp(`^${p.transaction_id} .*collection ${p.id}`, 'm'));
  const resolved = kobo(server.dataDir, 'reconcile', 'resolve', p.transaction_id, '--outcome', 'recorded', '--note', 'refunded to the payer by the PSP');
  assert.equal(resolved.status, 0, resolved.stderr);
  const retried = await api('POST', `/v1/transactions/${p.transaction_id}/retry`, { idempotencyKey: idem() });
  assert.equal(retried.status, 200, JSON.stringify(retried.body));
  assert.equal(retried.body.data.attempt, 2);
  await until(async () => metric('collection', 'required'), (n) => n === 1, 'counted');
});

test('service order: unknown → a signed failed callback fails it (hold released) → the requery says delivered: its transaction is marked, the order stays failed', { timeout: 60_000 }, async () => {
  const c = await liveCustomer();
  await funded(c, 1_000_000);
  const phone = `+234803${String(100 + Math.floor(Math.random() * 800)).padStart(3, '0')}9998`;
  const created = await api('POST', '/v1/services/orders', { idempotencyKey: idem(), body: { customer_id: c.id, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 20_000, currency: 'NGN', payment_method: 'wallet', phone } });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const o = created.body.data.order;
  await until(order(o.id), (d) => d.status === 'unknown', 'unknown after the timeout');
  assert.equal((await callback({ reference: `${o.id}:1`, kind: 'fulfilment', status: 'failed', failure_code: 'PROVIDER_ERROR' })).applied, true);
  await until(order(o.id), (d) => d.status === 'failed', 'failed by the callback');
  const marked = await until(transaction(o.transaction_id), (d) => d.reconciliation?.status === 'required', 'the requery\'s delivery recorded as a contradiction', 10_000);
  assert.deepEqual([marked.reconciliation.object, marked.reconciliation.object_id, marked.reconciliation.recorded_outcome, marked.reconciliation.reported_outcome], ['service_order', o.id, 'failed', 'completed']);
  assert.equal((await order(o.id)()).status, 'failed', 'the order\'s status stays as recorded');
  assert.equal((await wallet(c.walletId)).held_minor, 0);
  assert.equal((await api('POST', `/v1/transactions/${o.transaction_id}/retry`, { idempotencyKey: idem() })).status, 409);
  await until(async () => metric('fulfilment', 'required'), (n) => n === 1, 'counted');

  // kill -9: the mark is in the WAL record and the transaction stays in the heap (and every image) while open.
  await server.kill();
  server = await startServer(serverOptions);
  api = client(server.baseUrl, LIVE);
  assert.equal((await transaction(o.transaction_id)()).reconciliation.status, 'required', 'still marked after a crash');
  assert.match(kobo(server.dataDir, 'reconcile', 'list').stdout, new RegExp(`^${o.transaction_id} .*fulfilment ${o.id}`, 'm'));
});

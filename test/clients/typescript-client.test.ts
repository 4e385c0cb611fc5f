// The generated TypeScript client (clients/typescript): regenerating it from the served document changes
// nothing (the drift check), and one journey per endpoint family runs through it against a real server.
// Runs under node:test; one real kobo process, one local webhook receiver.
// Invariant checked: the committed client matches the server, and its typed calls work over real HTTP.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Compile } from 'typebox/compile';
import { createKoboClient, idempotencyKey, type KoboClient } from '../../clients/typescript/index.ts';
import { CLIENT_DIR, GENERATED_FILES, writeClient } from '../../scripts/client-generate.ts';
import { WEBHOOK_EVENT_SCHEMAS } from '../../src/schemas/webhook-event.schema.ts';
import { verifyWebhook } from '../../src/webhooks/verify-webhook.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { secretKey, startServer, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';
import { until } from '../helpers/wait.ts';

const key = secretKey();
/** How long a rail outcome or a webhook delivery may take on a loaded machine (they take ~100 ms idle). */
const OUTCOME_MS_MAX = 15_000;
let server: TestServer;
let kobo: KoboClient;
let receiver: Receiver;

before(async () => {
  [server, receiver] = await Promise.all([startServer({ keys: [key] }), startReceiver()]);
  kobo = createKoboClient({ baseUrl: server.baseUrl, key });
});
after(async () => {
  await Promise.all([server?.stop(), receiver?.close()]);
});

const headers = () => ({ header: { 'Idempotency-Key': idempotencyKey() } });

/** An NG customer (KYC level 2) whose wallet holds `fundMinor` collected by a settled bank transfer. */
async function fundedCustomer(fundMinor: number): Promise<{ id: string; walletId: string }> {
  const phone = `+234803${String(1_000_000 + Math.floor(Math.random() * 8_999_999))}`;
  const created = await kobo.POST('/v1/customers', { params: headers(), body: { name: 'Client Journey', email: uniqueEmail(), phone, country_code: 'NG' } });
  assert.equal(created.response.status, 201, JSON.stringify(created.error));
  const customer = created.data!.data;
  const patched = await kobo.PATCH('/v1/customers/{id}', { params: { path: { id: customer.id } }, body: { kyc_level: 2 } });
  assert.equal(patched.data?.data.kyc_level, 2, JSON.stringify(patched.error));
  const payment = await kobo.POST('/v1/payments', { params: headers(), body: { customer_id: customer.id, amount_minor: fundMinor, currency: 'NGN', method: 'bank_transfer' } });
  assert.equal(payment.response.status, 201, JSON.stringify(payment.error));
  const settled = await kobo.POST('/v1/test_helpers/payments/{id}/settle', { params: { path: { id: payment.data!.data.id } } });
  assert.equal(settled.data?.data.status, 'completed', JSON.stringify(settled.error));
  const wallet = customer.wallets[0];
  assert.ok(wallet !== undefined);
  return { id: customer.id, walletId: wallet.id };
}

describe('clients/typescript drift', () => {
  it('client:generate: the served document regenerated into a temp dir → byte-identical to the committed client', async () => {
    const response = await fetch(`${server.baseUrl}/v1/openapi.json`);
    const document = (await response.json()) as object;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kobo-client-'));
    try {
      await writeClient(document, dir);
      for (const name of GENERATED_FILES) {
        const fresh = fs.readFileSync(path.join(dir, name), 'utf8');
        const committed = fs.readFileSync(path.join(CLIENT_DIR, name), 'utf8');
        assert.ok(fresh === committed, `clients/typescript/${name} is out of date with GET /v1/openapi.json: run npm run client:generate and commit the result`);
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('journeys through the typed client', () => {
  it('countries: list → NG enabled; context of NG → its payment methods; a malformed code → 400 VALIDATION', async () => {
    const public_ = createKoboClient({ baseUrl: server.baseUrl });
    const list = await public_.GET('/v1/countries');
    assert.ok(list.data?.data.some((c) => c.code === 'NG'), JSON.stringify(list.error));
    const context = await public_.GET('/v1/countries/{code}/context', { params: { path: { code: 'NG' } } });
    assert.ok((context.data?.data.payment_methods.length ?? 0) > 0, JSON.stringify(context.error));
    const bad = await public_.GET('/v1/countries/{code}/context', { params: { path: { code: 'N1' } } });
    assert.equal(bad.response.status, 400);
    assert.equal(bad.error?.error.code, 'VALIDATION');
  });

  it('customers and wallets: create → get → patch; the wallet → balance of the settled collection', async () => {
    const c = await fundedCustomer(500_000);
    const got = await kobo.GET('/v1/customers/{id}', { params: { path: { id: c.id } } });
    assert.equal(got.data?.data.id, c.id);
    const wallet = await kobo.GET('/v1/wallets/{id}', { params: { path: { id: c.walletId } } });
    assert.equal(wallet.data?.data.currency, 'NGN');
    assert.ok((wallet.data?.data.available_minor ?? 0) > 0, JSON.stringify(wallet.data));
    const dup = await kobo.POST('/v1/customers', { params: headers(), body: { name: 'Twin', email: got.data!.data.email, phone: uniquePhone(), country_code: 'NG' } });
    assert.equal(dup.response.status, 409);
    assert.equal(dup.error?.error.code, 'DUPLICATE');
  });

  it('transactions: create → pending; get; cancel → no longer pending', async () => {
    const c = await fundedCustomer(100_000);
    const created = await kobo.POST('/v1/transactions', { params: headers(), body: { type: 'payment', customer_id: c.id, amount_minor: 10_000, currency: 'NGN' } });
    assert.equal(created.data?.data.status, 'pending', JSON.stringify(created.error));
    const id = created.data!.data.id;
    assert.equal((await kobo.GET('/v1/transactions/{id}', { params: { path: { id } } })).data?.data.id, id);
    const cancelled = await kobo.POST('/v1/transactions/{id}/cancel', { params: { path: { id } } });
    assert.equal(cancelled.response.status, 200, JSON.stringify(cancelled.error));
    assert.notEqual(cancelled.data?.data.status, 'pending');
  });

  it('payments and test helpers: methods; bank_transfer → fail helper → failed; the sandbox clock advances', async () => {
    const c = await fundedCustomer(100_000);
    const methods = await kobo.GET('/v1/payments/methods', { params: { query: { customer_id: c.id } } });
    assert.ok(methods.data?.data.items.some((m) => m.method === 'bank_transfer' && m.selectable), JSON.stringify(methods.data));
    const payment = await kobo.POST('/v1/payments', { params: headers(), body: { customer_id: c.id, amount_minor: 20_000, currency: 'NGN', method: 'bank_transfer' } });
    const failed = await kobo.POST('/v1/test_helpers/payments/{id}/fail', { params: { path: { id: payment.data!.data.id } }, body: { failure_code: 'PROVIDER_ERROR' } });
    assert.equal(failed.data?.data.status, 'failed', JSON.stringify(failed.error));
    assert.equal((await kobo.GET('/v1/payments/{id}', { params: { path: { id: payment.data!.data.id } } })).data?.data.status, 'failed');
    const before = await kobo.GET('/v1/test_helpers/clock');
    const advanced = await kobo.POST('/v1/test_helpers/clock/advance', { body: { seconds: 60 } });
    assert.ok(Date.parse(advanced.data!.data.now) >= Date.parse(before.data!.data.now) + 60_000, JSON.stringify(advanced.data));
  });

  it('beneficiaries and transfers: verified beneficiary → transfer → completed', async () => {
    const c = await fundedCustomer(500_000);
    const beneficiary = await kobo.POST('/v1/beneficiaries', { params: headers(), body: { customer_id: c.id, type: 'bank_account', bank_code: '058', account_number: '0123456789', currency: 'NGN' } });
    assert.equal(beneficiary.response.status, 201, JSON.stringify(beneficiary.error));
    const beneficiaryId = beneficiary.data!.data.id;
    assert.equal((await kobo.GET('/v1/beneficiaries/{id}', { params: { path: { id: beneficiaryId } } })).data?.data.id, beneficiaryId);
    const transfer = await kobo.POST('/v1/transfers', { params: headers(), body: { customer_id: c.id, beneficiary_id: beneficiaryId, amount_minor: 10_000, currency: 'NGN', narration: 'client journey' } });
    assert.equal(transfer.response.status, 201, JSON.stringify(transfer.error));
    const id = transfer.data!.data.id;
    const done = await until(async () => (await kobo.GET('/v1/transfers/{id}', { params: { path: { id } } })).data?.data, (t) => t?.status === 'completed', 'transfer completed', OUTCOME_MS_MAX);
    assert.equal(done?.status, 'completed');
  });

  it('exchange: quote NGN → USD → execute → both legs on one exchange', async () => {
    const c = await fundedCustomer(1_000_000);
    const quote = await kobo.POST('/v1/exchange/quotes', { body: { customer_id: c.id, from_currency: 'NGN', to_currency: 'USD', from_amount_minor: 154_525 } });
    assert.equal(quote.response.status, 201, JSON.stringify(quote.error));
    const done = await kobo.POST('/v1/exchange', { params: headers(), body: { customer_id: c.id, quote_id: quote.data!.data.id } });
    assert.equal(done.response.status, 201, JSON.stringify(done.error));
    assert.equal(done.data?.data.from_currency, 'NGN');
    assert.equal(done.data?.data.to_currency, 'USD');
  });

  it('services and service orders: catalogue → definition → operators → quote → wallet order → completed', async () => {
    const c = await fundedCustomer(2_000_000);
    const query = { country: 'NG', customer_id: c.id };
    const catalogue = await kobo.GET('/v1/services', { params: { query } });
    assert.ok(catalogue.data?.data.items.some((i) => i.service_code === 'airtime'), JSON.stringify(catalogue.error));
    assert.equal((await kobo.GET('/v1/services/airtime', { params: { query } })).response.status, 200);
    const operators = await kobo.GET('/v1/services/{code}/operators', { params: { path: { code: 'airtime' }, query } });
    assert.ok(operators.data?.data.items.some((o) => o.code === 'MTN'), JSON.stringify(operators.error));
    const phone = `+234803${String(1_000_000 + Math.floor(Math.random() * 8_999_999))}`;
    const body = { customer_id: c.id, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 50_000, currency: 'NGN', payment_method: 'wallet', phone } as const;
    const quote = await kobo.POST('/v1/services/quote', { body });
    assert.equal(quote.response.status, 200, JSON.stringify(quote.error));
    const created = await kobo.POST('/v1/services/orders', { params: headers(), body: { ...body, operator_code: 'MTN', quote_id: quote.data!.data.quote_id } });
    assert.equal(created.response.status, 201, JSON.stringify(created.error));
    const id = created.data!.data.order.id;
    const done = await until(async () => (await kobo.GET('/v1/services/orders/{id}/status', { params: { path: { id } } })).data?.data, (s) => s?.status === 'completed', 'order completed', OUTCOME_MS_MAX);
    assert.equal(done?.status, 'completed');
    assert.equal((await kobo.GET('/v1/services/orders/{id}', { params: { path: { id } } })).data?.data.status, 'completed');
  });

  it('webhooks: subscribe → a settled payment is delivered signed, shaped as its webhooks schema → listed → redelivered', async () => {
    const sub = await kobo.POST('/v1/webhooks/subscriptions', { body: { url: receiver.url, events: ['payment.completed'] } });
    assert.equal(sub.response.status, 201, JSON.stringify(sub.error));
    const secret = sub.data!.data.secret ?? '';
    assert.ok((await kobo.GET('/v1/webhooks/subscriptions')).data?.data.some((s) => s.id === sub.data!.data.id));
    const c = await fundedCustomer(30_000);
    const [got] = await receiver.waitFor(1, OUTCOME_MS_MAX);
    assert.ok(got !== undefined);
    assert.deepEqual(verifyWebhook(secret, got.raw, got.headers), { ok: true });
    assert.equal(got.body.data.customer_id, c.id);
    const validator = Compile(WEBHOOK_EVENT_SCHEMAS['payment.completed']);
    assert.ok(validator.Check(got.body), `the delivered body does not match the documented payload: ${JSON.stringify([...validator.Errors(got.body)].slice(0, 3))}`);
    const deliveries = await until(async () => (await kobo.GET('/v1/webhooks/deliveries', { params: { query: { subscription_id: sub.data!.data.id } } })).data?.data ?? [], (d) => d.some((x) => x.status === 'succeeded'), 'delivery recorded', OUTCOME_MS_MAX);
    const first = deliveries[0];
    assert.ok(first !== undefined);
    const again = await kobo.POST('/v1/webhooks/deliveries/{id}/redeliver', { params: { path: { id: first.id } } });
    assert.equal(again.response.status, 201, JSON.stringify(again.error));
    assert.equal((await receiver.waitFor(2, OUTCOME_MS_MAX)).length, 2, 'the redelivery arrived');
  });
});

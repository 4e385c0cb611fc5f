// Idempotency keys are scoped to the account, so a key scoped to one customer shares them with the
// account's keys. Reusing an Idempotency-Key the account used for another customer must not hand that
// customer's stored result to it: 403 FORBIDDEN, and the body shows nothing of the other customer.
import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey, startServer, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';
import { kobo } from '../helpers/cli.ts';

const key = secretKey();
let server: TestServer;
let api: ReturnType<typeof client>;
let scoped: ReturnType<typeof client>;
let mine = '';
let theirs = '';

async function customer(): Promise<string> {
  const c = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: 'Replay', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
  assert.equal(c.status, 201, JSON.stringify(c.body));
  return c.body.data.id;
}

before(async () => {
  server = await startServer({ keys: [`${key}@replay`] });
  api = client(server.baseUrl, key);
  mine = await customer();
  theirs = await customer();
  const created = kobo(server.dataDir, 'keys', 'create', '--account', 'replay', '--customer', mine);
  assert.equal(created.status, 0, created.stderr);
  scoped = client(server.baseUrl, /secret \(shown once\): (sk_\w+_[A-Za-z0-9_-]+)/.exec(created.stdout)![1]!);
});
after(async () => server.stop());

function refusedWithoutLeak(r: { status: number; body: any }, what: string): void {
  assert.equal(r.status, 403, `${what}: ${JSON.stringify(r.body)}`);
  assert.equal(r.body.error.code, 'FORBIDDEN');
  assert.doesNotMatch(JSON.stringify(r.body), new RegExp(theirs), `${what}: nothing of the other customer`);
}

it('cancel (kept in the shard): the account cancels another customer\'s transaction under key X; the scoped key reusing X → 403, no leak', async () => {
  const txn = await api('POST', '/v1/transactions', { idempotencyKey: idem(), body: { type: 'funding', customer_id: theirs, amount_minor: 10_000, currency: 'NGN' } });
  assert.equal(txn.status, 201, JSON.stringify(txn.body));
  const reused = idem('x');
  const cancelled = await api('POST', `/v1/transactions/${txn.body.data.id}/cancel`, { idempotencyKey: reused });
  assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body));
  refusedWithoutLeak(await scoped('POST', `/v1/transactions/${txn.body.data.id}/cancel`, { idempotencyKey: reused }), 'cancel replay');
  refusedWithoutLeak(await scoped('POST', `/v1/transactions/${txn.body.data.id}/cancel`, { idempotencyKey: idem() }), 'cancel, fresh key');
  assert.equal((await api('POST', `/v1/transactions/${txn.body.data.id}/cancel`, { idempotencyKey: reused })).status, 200, 'the account still replays its own');
});

it('settle helper and payment create (idempotent routes): the scoped key reusing the account\'s key for another customer → 403, no leak', async () => {
  const paymentKey = idem('p');
  const payment = await api('POST', '/v1/payments', { idempotencyKey: paymentKey, body: { customer_id: theirs, amount_minor: 10_000, currency: 'NGN', method: 'bank_transfer' } });
  assert.equal(payment.status, 201, JSON.stringify(payment.body));
  refusedWithoutLeak(await scoped('POST', '/v1/payments', { idempotencyKey: paymentKey, body: { customer_id: theirs, amount_minor: 10_000, currency: 'NGN', method: 'bank_transfer' } }), 'payment replay');
  const settleKey = idem('s');
  assert.equal((await api('POST', `/v1/test_helpers/payments/${payment.body.data.id}/settle`, { idempotencyKey: settleKey })).status, 200);
  refusedWithoutLeak(await scoped('POST', `/v1/test_helpers/payments/${payment.body.data.id}/settle`, { idempotencyKey: settleKey }), 'settle replay');
});

it('service quote (kept in the shard): the scoped key reusing the account\'s key for another customer\'s quote → 403, no leak', async () => {
  const quoteKey = idem('q');
  const body = { customer_id: theirs, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 10_000, currency: 'NGN', phone: '+2348031234567' };
  const quoted = await api('POST', '/v1/services/quote', { idempotencyKey: quoteKey, body });
  assert.equal(quoted.status, 200, JSON.stringify(quoted.body));
  assert.equal(quoted.body.data.customer_id, theirs);
  refusedWithoutLeak(await scoped('POST', '/v1/services/quote', { idempotencyKey: quoteKey, body }), 'quote replay');
});

it('the scoped key\'s own results still replay byte for byte under its keys', async () => {
  const own = idem('own');
  const body = { type: 'funding', customer_id: mine, amount_minor: 20_000, currency: 'NGN' };
  const first = await scoped('POST', '/v1/transactions', { idempotencyKey: own, body });
  assert.equal(first.status, 201, JSON.stringify(first.body));
  const again = await scoped('POST', '/v1/transactions', { idempotencyKey: own, body });
  assert.equal(again.status, 201);
  assert.deepEqual(again.body, first.body);
});

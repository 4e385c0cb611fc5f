// What a customer-scoped key (`kobo keys create --customer C`) may change about its own customer.
// Tier and KYC level are the account's compliance decisions: the key that acts for the customer gets
// 403 FORBIDDEN on them, so it cannot raise its own limits. It may still change its contact details and
// its PIN. The sandbox levers that stand in for a rail or for the account (settle, fail, clock) are the
// account's too. Over HTTP against a real server; the customer key is minted with the CLI.
import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey, startServer, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';
import { kobo } from '../helpers/cli.ts';

const key = secretKey();
let server: TestServer;
let api: ReturnType<typeof client>;

before(async () => {
  server = await startServer({ keys: [`${key}@grants`] });
  api = client(server.baseUrl, key);
});
after(async () => server.stop());

async function customerWithKey(): Promise<{ id: string; scoped: ReturnType<typeof client> }> {
  const c = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: 'Grant Holder', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
  assert.equal(c.status, 201, JSON.stringify(c.body));
  const created = kobo(server.dataDir, 'keys', 'create', '--account', 'grants', '--customer', c.body.data.id);
  assert.equal(created.status, 0, created.stderr);
  return { id: c.body.data.id, scoped: client(server.baseUrl, /secret \(shown once\): (sk_\w+_[A-Za-z0-9_-]+)/.exec(created.stdout)![1]!) };
}

const bigPayment = (customerId: string) => ({ customer_id: customerId, amount_minor: 50_000_000, currency: 'NGN', method: 'bank_transfer' });

function forbidden(r: { status: number; body: any }, what: string): void {
  assert.equal(r.status, 403, `${what}: ${JSON.stringify(r.body)}`);
  assert.equal(r.body.error.code, 'FORBIDDEN', what);
}

it('customer-scoped key: PATCH tier or kyc_level of its own customer → 403 FORBIDDEN, nothing changes, the limit still holds', async () => {
  const c = await customerWithKey();
  const over = await c.scoped('POST', '/v1/payments', { idempotencyKey: idem(), body: bigPayment(c.id) });
  assert.equal(over.status, 422, JSON.stringify(over.body));
  assert.equal(over.body.error.code, 'LIMIT_EXCEEDED');
  for (const body of [{ tier: 'tier_3', kyc_level: 3 }, { tier: 'tier_2' }, { kyc_level: 1 }, { name: 'Grant Holder', tier: 'tier_3' }, { pin: '2468', kyc_level: 3 }]) {
    forbidden(await c.scoped('PATCH', `/v1/customers/${c.id}`, { body }), JSON.stringify(body));
  }
  const read = (await api('GET', `/v1/customers/${c.id}`)).body.data;
  assert.equal(read.tier, 'tier_1');
  assert.equal(read.kyc_level, 0);
  assert.equal(read.pin_set, false, 'a refused PATCH changes none of its fields');
  const still = await c.scoped('POST', '/v1/payments', { idempotencyKey: idem(), body: bigPayment(c.id) });
  assert.equal(still.status, 422, JSON.stringify(still.body));
  assert.equal(still.body.error.code, 'LIMIT_EXCEEDED');
  // The account decides: then the same payment goes through.
  assert.equal((await api('PATCH', `/v1/customers/${c.id}`, { body: { tier: 'tier_3', kyc_level: 3 } })).status, 200);
  const allowed = await c.scoped('POST', '/v1/payments', { idempotencyKey: idem(), body: bigPayment(c.id) });
  assert.equal(allowed.status, 201, JSON.stringify(allowed.body));
});

it('customer-scoped key: its own name, email, phone and PIN → 200 (contact details are the customer\'s); country_code → 400 for every key', async () => {
  const c = await customerWithKey();
  const email = uniqueEmail();
  const phone = uniquePhone();
  const changed = await c.scoped('PATCH', `/v1/customers/${c.id}`, { body: { name: 'Grant H. Holder', email, phone, pin: '1357' } });
  assert.equal(changed.status, 200, JSON.stringify(changed.body));
  assert.deepEqual([changed.body.data.name, changed.body.data.email, changed.body.data.phone, changed.body.data.pin_set, changed.body.data.tier], ['Grant H. Holder', email, phone, true, 'tier_1']);
  // The home country decides eligibility, currency and limits: no key may move it.
  for (const scoped of [c.scoped, api]) {
    const moved = await scoped('PATCH', `/v1/customers/${c.id}`, { body: { country_code: 'GB' } });
    assert.equal(moved.status, 400, JSON.stringify(moved.body));
  }
  assert.equal((await api('GET', `/v1/customers/${c.id}`)).body.data.country_code, 'NG');
});

it('customer-scoped key: the sandbox levers of the rail and the account (settle, fail, clock advance) → 403; reading the clock → 200', async () => {
  const c = await customerWithKey();
  const payment = await c.scoped('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: c.id, amount_minor: 500_000, currency: 'NGN', method: 'bank_transfer' } });
  assert.equal(payment.status, 201, JSON.stringify(payment.body));
  forbidden(await c.scoped('POST', `/v1/test_helpers/payments/${payment.body.data.id}/settle`), 'settle');
  forbidden(await c.scoped('POST', `/v1/test_helpers/payments/${payment.body.data.id}/fail`), 'fail');
  forbidden(await c.scoped('POST', '/v1/test_helpers/clock/advance', { body: { seconds: 86_400 } }), 'clock advance');
  assert.equal((await c.scoped('GET', '/v1/test_helpers/clock')).status, 200);
  assert.equal((await api('GET', `/v1/payments/${payment.body.data.id}`)).body.data.status, 'pending', 'the collection was neither settled nor failed');
  const wallet = (await api('GET', `/v1/wallets/${(await api('GET', `/v1/customers/${c.id}`)).body.data.wallets[0].id}`)).body.data;
  assert.equal(wallet.balance_minor, 0, 'no money appeared');
  assert.equal((await api('POST', `/v1/test_helpers/payments/${payment.body.data.id}/settle`)).status, 200, 'the account may settle it');
});

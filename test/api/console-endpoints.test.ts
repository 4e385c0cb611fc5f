// The API endpoints added for the console (beyond the contract), over HTTP: keys (list, self,
// create, revoke, rotate), resolving a service order (manual_fulfilment and unknown), re-enabling a
// webhook subscription, finding a customer by email or phone; customer-scoped keys get 403 on each.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey, startServer, type TestServer } from '../helpers/server.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { until } from '../helpers/wait.ts';
import { fundedCustomer, orderReaching } from '../console/seed.ts';

const key = secretKey();
const otherKey = secretKey();
let server: TestServer;
let api: ReturnType<typeof client>;
let other: ReturnType<typeof client>;
let receiver: Receiver;
let ada: Awaited<ReturnType<typeof fundedCustomer>>;
let customerKey: string;

before(async () => {
  server = await startServer({ keys: [`${key}@acme`, `${otherKey}@rival`], env: { KOBO_WEBHOOK_DISABLE_AFTER: '1', KOBO_WEBHOOK_TICK_MS: '25' } });
  api = client(server.baseUrl, key);
  other = client(server.baseUrl, otherKey);
  receiver = await startReceiver();
  ada = await fundedCustomer(api, 'Ada Obi', 5_000_000);
  const scoped = await api('POST', '/v1/keys', { body: { customer_id: ada.id, label: 'app' } });
  assert.equal(scoped.status, 201, JSON.stringify(scoped.body));
  customerKey = scoped.body.data.secret;
});
after(async () => {
  await receiver.close();
  await server.stop();
});

describe('keys over HTTP', () => {
  it('GET /v1/keys: → this account and environment only, never a secret or hash', async () => {
    const list = await api('GET', '/v1/keys');
    assert.equal(list.status, 200);
    assert.ok(list.body.data.length >= 2);
    for (const k of list.body.data) {
      assert.equal(k.account, 'acme');
      assert.equal(k.secret, undefined);
      assert.equal(k.hash, undefined);
      assert.match(k.prefix, /^sk_test_..$/);
    }
    assert.ok(!JSON.stringify(list.body).includes(key));
  });

  it('GET /v1/keys/self: any key (a customer-scoped one too) → its own record', async () => {
    const self = await api('GET', '/v1/keys/self', { key: customerKey });
    assert.equal(self.status, 200);
    assert.equal(self.body.data.customer_id, ada.id);
  });

  it('POST /v1/keys: → 201 with the secret once; a replay of the same Idempotency-Key → no secret', async () => {
    const idemKey = idem();
    const created = await api('POST', '/v1/keys', { idempotencyKey: idemKey, body: { label: 'ci', scopes: ['payments:read'], ip_allow: ['10.0.0.0/8'] } });
    assert.equal(created.status, 201);
    assert.match(created.body.data.secret, /^sk_test_/);
    assert.deepEqual(created.body.data.scopes, ['payments:read']);
    const replay = await api('POST', '/v1/keys', { idempotencyKey: idemKey, body: { label: 'ci', scopes: ['payments:read'], ip_allow: ['10.0.0.0/8'] } });
    assert.equal(replay.status, 201);
    assert.equal(replay.body.data.id, created.body.data.id);
    assert.equal(replay.body.data.secret, undefined, 'shown once');
  });

  it('POST /v1/keys: bad scope, bad CIDR, unknown field, another account\'s customer → 400', async () => {
    const rivalCustomer = await fundedCustomer(other, 'Rival', 10_000);
    for (const body of [{ scopes: ['everything'] }, { ip_allow: ['10.0.0.0/99'] }, { secret: 'sk_test_mine12345' }, { customer_id: rivalCustomer.id }, { customer_id: 'nope' }]) {
      const res = await api('POST', '/v1/keys', { body });
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.body.error.code, 'VALIDATION');
    }
  });

  it('key writes: a key without the * scope → 403 (it could otherwise mint a wider key)', async () => {
    const narrow = (await api('POST', '/v1/keys', { body: { scopes: ['keys', 'read'] } })).body.data.secret;
    assert.equal((await api('GET', '/v1/keys', { key: narrow })).status, 200);
    const create = await api('POST', '/v1/keys', { key: narrow, body: {} });
    assert.equal(create.status, 403);
    const self = (await api('GET', '/v1/keys/self', { key: narrow })).body.data.id;
    assert.equal((await api('POST', `/v1/keys/${self}/rotate`, { key: narrow })).status, 403);
  });

  it('revoke: → 401 for that key within a second; itself → 409; again → 409; another account\'s → 404', async () => {
    const victim = (await api('POST', '/v1/keys', { body: { label: 'victim' } })).body.data;
    const revoked = await api('POST', `/v1/keys/${victim.id}/revoke`);
    assert.equal(revoked.status, 200);
    assert.equal(revoked.body.data.status, 'revoked');
    await until(() => api('GET', '/v1/keys/self', { key: victim.secret }), (r) => r.status === 401, 'revoked', 3_000);
    assert.equal((await api('POST', `/v1/keys/${victim.id}/revoke`)).status, 409);
    const me = (await api('GET', '/v1/keys/self')).body.data.id;
    const selfRevoke = await api('POST', `/v1/keys/${me}/revoke`);
    assert.equal(selfRevoke.status, 409);
    assert.match(selfRevoke.body.error.message, /cannot revoke itself/);
    assert.equal((await api('GET', '/v1/keys/self')).status, 200, 'still works');
    assert.equal((await other('POST', `/v1/keys/${victim.id}/revoke`)).status, 404);
    assert.equal((await api('POST', '/v1/keys/key_nope/revoke')).status, 400);
  });

  it('rotate: → a new secret (once) with the same grants; the old key works through its grace, then 401', async () => {
    const old = (await api('POST', '/v1/keys', { body: { label: 'rotating', scopes: ['read'] } })).body.data;
    const rotated = await api('POST', `/v1/keys/${old.id}/rotate`, { body: { grace_hours: 0 } });
    assert.equal(rotated.status, 201, JSON.stringify(rotated.body));
    assert.notEqual(rotated.body.data.id, old.id);
    assert.deepEqual(rotated.body.data.scopes, ['read']);
    assert.equal((await api('GET', '/v1/keys/self', { key: rotated.body.data.secret })).status, 200);
    await until(() => api('GET', '/v1/keys/self', { key: old.secret }), (r) => r.status === 401, 'grace 0: expired', 3_000);
    assert.equal((await api('POST', `/v1/keys/${old.id}/rotate`)).status, 409, 'an expired key is not rotated again');
    assert.equal((await api('POST', `/v1/keys/${rotated.body.data.id}/rotate`, { body: { grace_hours: 10_000 } })).status, 400);
  });

  it('customer-scoped key: every key route but /self → 403', async () => {
    const me = (await api('GET', '/v1/keys/self', { key: customerKey })).body.data.id;
    for (const [method, path] of [['GET', '/v1/keys'], ['POST', '/v1/keys'], ['POST', `/v1/keys/${me}/rotate`], ['POST', `/v1/keys/${me}/revoke`]] as const) {
      const res = await api(method, path, { key: customerKey, ...(method === 'POST' ? { body: {} } : {}) });
      assert.equal(res.status, 403, path);
    }
  });
});

describe('POST /v1/services/orders/{id}/resolve', () => {
  it('manual_fulfilment + delivered → completed; again → 409', async () => {
    const id = await orderReaching(api, ada.id, '0004', 'manual_fulfilment');
    const res = await api('POST', `/v1/services/orders/${id}/resolve`, { body: { outcome: 'delivered' } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.data.status, 'completed');
    const again = await api('POST', `/v1/services/orders/${id}/resolve`, { body: { outcome: 'failed' } });
    assert.equal(again.status, 409);
  });

  it('unknown (rail timeout) + failed → failed, the wallet hold released', async () => {
    const before_ = (await api('GET', `/v1/wallets/${ada.walletId}`)).body.data.available_minor;
    const id = await orderReaching(api, ada.id, '0001', 'unknown');
    const res = await api('POST', `/v1/services/orders/${id}/resolve`, { body: { outcome: 'failed' } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.data.status, 'failed');
    await until(() => api('GET', `/v1/wallets/${ada.walletId}`).then((r) => r.body.data.available_minor), (a) => a === before_, 'money back');
    // The requery still due answers delivered (the sandbox's …0001): a contradiction to reconcile, not a change.
    assert.equal((await api('POST', '/v1/test_helpers/clock/advance', { body: { seconds: 300 } })).status, 200);
    const txn = await until(() => api('GET', `/v1/transactions/${res.body.data.transaction_id}`).then((r) => r.body.data), (t) => t.reconciliation?.status === 'required', 'contradiction recorded', 10_000);
    assert.equal(txn.status, 'failed');
    assert.equal((await api('GET', `/v1/services/orders/${id}`)).body.data.status, 'failed', 'the operator\'s outcome stands');
  });

  it('bad outcome → 400; unknown id → 404; another account → 403; customer-scoped key → 403', async () => {
    const id = await orderReaching(api, ada.id, '0004', 'manual_fulfilment');
    assert.equal((await api('POST', `/v1/services/orders/${id}/resolve`, { body: { outcome: 'maybe' } })).status, 400);
    assert.equal((await api('POST', `/v1/services/orders/${id}/resolve`)).status, 400, 'a body is required');
    assert.equal((await api('POST', '/v1/services/orders/01ARZ3NDEKTSV4RRFFQ69G5FAV/resolve', { body: { outcome: 'failed' } })).status, 404);
    assert.equal((await other('POST', `/v1/services/orders/${id}/resolve`, { body: { outcome: 'failed' } })).status, 403);
    assert.equal((await api('POST', `/v1/services/orders/${id}/resolve`, { key: customerKey, body: { outcome: 'failed' } })).status, 403);
    assert.equal((await api('GET', `/v1/services/orders/${id}`)).body.data.status, 'manual_fulfilment', 'nothing changed');
  });
});

describe('POST /v1/webhooks/subscriptions/{id}/enable', () => {
  it('a subscription disabled by failures → active, failures 0; another account → 404; customer key → 403', async () => {
    receiver.behave({ status: 500 });
    const sub = (await api('POST', '/v1/webhooks/subscriptions', { body: { url: receiver.url, events: ['payment.completed'] } })).body.data;
    // Two failed attempts pass the threshold of 1 (the second one is the retry, seconds later, or a second event).
    await fundedCustomer(api, 'Trigger', 10_000);
    await fundedCustomer(api, 'Trigger two', 10_000);
    await until(() => api('GET', '/v1/webhooks/subscriptions').then((r) => r.body.data.find((s: { id: string }) => s.id === sub.id)), (s) => s.status === 'disabled', 'disabled', 10_000);
    assert.equal((await other('POST', `/v1/webhooks/subscriptions/${sub.id}/enable`)).status, 404);
    assert.equal((await api('POST', `/v1/webhooks/subscriptions/${sub.id}/enable`, { key: customerKey })).status, 403);
    assert.equal((await api('POST', '/v1/webhooks/subscriptions/nope/enable')).status, 400);
    const enabled = await api('POST', `/v1/webhooks/subscriptions/${sub.id}/enable`);
    assert.equal(enabled.status, 200);
    assert.equal(enabled.body.data.status, 'active');
    assert.equal(enabled.body.data.consecutive_failures, 0);
    receiver.behave({ status: 200 });
  });
});

describe('GET /v1/search/customers', () => {
  it('by email (any case) or phone → the customer; no match → empty; both or neither → 400; customer key → 403', async () => {
    const byEmail = await api('GET', `/v1/search/customers?email=${encodeURIComponent(ada.email.toUpperCase())}`);
    assert.equal(byEmail.status, 200);
    assert.equal(byEmail.body.data[0].id, ada.id);
    assert.equal(byEmail.body.has_more, false);
    const byPhone = await api('GET', `/v1/search/customers?phone=${encodeURIComponent(ada.phone)}`);
    assert.equal(byPhone.body.data[0].id, ada.id);
    assert.deepEqual((await api('GET', '/v1/search/customers?email=nobody@example.com')).body.data, []);
    assert.deepEqual((await other('GET', `/v1/search/customers?email=${encodeURIComponent(ada.email)}`)).body.data, [], 'another account sees nothing');
    assert.equal((await api('GET', '/v1/search/customers')).status, 400);
    assert.equal((await api('GET', `/v1/search/customers?email=a@b.co&phone=${encodeURIComponent(ada.phone)}`)).status, 400);
    assert.equal((await api('GET', '/v1/search/customers?email=not-an-email')).status, 400);
    assert.equal((await api('GET', `/v1/search/customers?email=${encodeURIComponent(ada.email)}`, { key: customerKey })).status, 403);
  });
});

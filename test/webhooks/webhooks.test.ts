// Webhooks end to end with real local receivers: subscriptions and URL rules, signed payloads, the
// retry schedule on the sandbox clock, redirects and slow receivers as failures, auto-disable and
// re-enable, redelivery with the same event_key, and a dead receiver not slowing the others.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey, startServer, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { kobo } from '../helpers/cli.ts';
import { verifyWebhook } from '../../src/webhooks/verify-webhook.ts';
import { until } from '../helpers/wait.ts';

const DISABLE_AFTER = 10;
const TIMEOUT_MS = 400;
let server: TestServer;
let api: ReturnType<typeof client>;
const receivers: Receiver[] = [];

async function receiver(): Promise<Receiver> {
  const r = await startReceiver();
  receivers.push(r);
  return r;
}

/** A fresh account per scenario: deliveries and clocks do not mix between tests. */
const accounts: string[] = Array.from({ length: 12 }, () => secretKey());
const liveKey = secretKey('live');
// accounts[0] is `api`, whose subscription tests leave subscriptions behind; scenarios start at 1.
let nextAccount = 1;
function account(): ReturnType<typeof client> {
  return client(server.baseUrl, accounts[nextAccount++]!);
}

before(async () => {
  server = await startServer({
    keys: [...accounts.map((k, i) => `${k}@hooks-${i}`), `${liveKey}@hooks-live`],
    env: { KOBO_WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS), KOBO_WEBHOOK_DISABLE_AFTER: String(DISABLE_AFTER), KOBO_WEBHOOK_TICK_MS: '25' },
  });
  api = client(server.baseUrl, accounts[0]!);
});
after(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await server.stop();
});

async function subscribe(on: ReturnType<typeof client>, url: string, events = ['payment.completed', 'transfer.completed', 'transfer.failed']): Promise<{ id: string; secret: string }> {
  const r = await on('POST', '/v1/webhooks/subscriptions', { body: { url, events } });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return { id: r.body.data.id, secret: r.body.data.secret };
}

/** A collection that completes: one payment.completed event. */
async function completedPayment(on: ReturnType<typeof client>, amountMinor = 100_000): Promise<{ customerId: string; transactionId: string }> {
  const c = await on('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: 'Hook', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
  const p = await on('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: c.body.data.id, amount_minor: amountMinor, currency: 'NGN', method: 'bank_transfer' } });
  assert.equal((await on('POST', `/v1/test_helpers/payments/${p.body.data.id}/settle`)).status, 200);
  return { customerId: c.body.data.id, transactionId: p.body.data.transaction_id };
}

async function deliveries(on: ReturnType<typeof client>, query = ''): Promise<any[]> {
  const r = await on('GET', `/v1/webhooks/deliveries${query}`);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.data;
}


describe('subscriptions', () => {
  it('create → 201 with a whsec_ secret once; list never shows it', async () => {
    const r = await receiver();
    const created = await api('POST', '/v1/webhooks/subscriptions', { body: { url: r.url, events: ['payment.completed'] } });
    assert.equal(created.status, 201);
    assert.match(created.body.data.secret, /^whsec_/);
    assert.equal(created.body.data.status, 'active');
    assert.equal(created.body.data.consecutive_failures, 0);
    const list = await api('GET', '/v1/webhooks/subscriptions');
    const listed = list.body.data.find((s: { id: string }) => s.id === created.body.data.id);
    assert.ok(listed);
    assert.equal(listed.secret, undefined);
    assert.ok(!JSON.stringify(list.body).includes(created.body.data.secret));
  });

  it('create replayed under its Idempotency-Key (again, and twice at once) → the same subscription without its secret', async () => {
    const r = await receiver();
    const k = idem('sub');
    const body = { url: r.url, events: ['payment.completed'] };
    const created = await api('POST', '/v1/webhooks/subscriptions', { idempotencyKey: k, body });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.match(created.body.data.secret, /^whsec_/);
    const replays = [await api('POST', '/v1/webhooks/subscriptions', { idempotencyKey: k, body }), ...(await Promise.all([0, 1].map(() => api('POST', '/v1/webhooks/subscriptions', { idempotencyKey: k, body }))))];
    for (const replay of replays) {
      assert.equal(replay.status, 201);
      assert.equal(replay.body.data.id, created.body.data.id, 'one subscription');
      assert.equal(replay.body.data.secret, undefined, 'the secret is shown once');
      assert.ok(!JSON.stringify(replay.body).includes(created.body.data.secret));
    }
  });

  it('URL rules: private, link-local, non-http(s), credentials → 400; loopback http allowed in the sandbox only', async () => {
    for (const url of ['ftp://127.0.0.1/x', 'https://10.0.0.5/hook', 'https://192.168.1.2/h', 'https://169.254.169.254/latest', 'http://example.com/hook', 'https://user:pw@example.com/h', 'https://printer.local/h', 'not a url']) {
      const r = await api('POST', '/v1/webhooks/subscriptions', { body: { url, events: ['payment.completed'] } });
      assert.equal(r.status, 400, url);
      assert.equal(r.body.error.code, 'VALIDATION');
    }
    assert.equal((await api('POST', '/v1/webhooks/subscriptions', { body: { url: 'http://localhost:9/h', events: ['payment.completed'] } })).status, 201);
    assert.equal((await api('POST', '/v1/webhooks/subscriptions', { body: { url: 'https://hooks.example.com/kobo', events: ['transfer.failed'] } })).status, 201);
    const bad = await api('POST', '/v1/webhooks/subscriptions', { body: { url: 'https://hooks.example.com/k', events: ['payment.exploded'] } });
    assert.equal(bad.status, 400);
    assert.equal((await api('POST', '/v1/webhooks/subscriptions', { body: { url: 'https://hooks.example.com/k', events: [] } })).status, 400);
  });

  it('live key: loopback and plain http refused, https on a public name accepted', async () => {
    for (const url of ['http://127.0.0.1:9/h', 'https://127.0.0.1/h', 'https://localhost/h', 'https://[::1]/h', 'http://hooks.example.com/h']) {
      const r = await api('POST', '/v1/webhooks/subscriptions', { key: liveKey, body: { url, events: ['payment.completed'] } });
      assert.equal(r.status, 400, url);
    }
    const ok = await api('POST', '/v1/webhooks/subscriptions', { key: liveKey, body: { url: 'https://hooks.example.com/kobo', events: ['payment.completed'] } });
    assert.equal(ok.status, 201);
    const sandboxList = (await api('GET', '/v1/webhooks/subscriptions')).body.data as Array<{ id: string }>;
    assert.ok(!sandboxList.some((s) => s.id === ok.body.data.id), 'live and sandbox subscriptions never mix');
  });
});

describe('delivery', () => {
  it('payment.completed → one signed POST: verifyWebhook accepts it; payload has id, event_type, event_key, occurred_at, data', async () => {
    const on = account();
    const r = await receiver();
    const sub = await subscribe(on, r.url);
    const { transactionId } = await completedPayment(on);
    const [got] = await r.waitFor(1);
    assert.ok(got, 'delivered');
    assert.deepEqual(verifyWebhook(sub.secret, got.raw, got.headers), { ok: true });
    assert.deepEqual(verifyWebhook('whsec_wrong', got.raw, got.headers), { ok: false, reason: 'bad_signature' });
    assert.deepEqual(verifyWebhook(sub.secret, got.raw, got.headers, Date.now() + 301_000), { ok: false, reason: 'stale_timestamp' });
    assert.match(String(got.headers['x-service-signature']), /^sha256=[0-9a-f]{64}$/);
    assert.equal(got.body.event_type, 'payment.completed');
    assert.equal(got.body.event_key, `payment.completed:${transactionId}`);
    assert.equal(got.body.data.transaction_id, transactionId);
    assert.equal(got.body.data.status, 'completed');
    assert.equal(got.body.data.amount_minor, 100_000);
    assert.equal(got.body.data.currency, 'NGN');
    assert.ok(!Number.isNaN(Date.parse(got.body.occurred_at)));
    const [d] = await until(() => deliveries(on), (l) => l[0]?.status === 'succeeded', 'succeeded');
    assert.equal(d.last_response_code, 200);
    assert.equal(d.attempt_log.length, 1);
  });

  it('transfer.completed and transfer.failed are delivered to a subscription listing them', async () => {
    const on = account();
    const r = await receiver();
    await subscribe(on, r.url, ['transfer.completed', 'transfer.failed']);
    const { customerId } = await completedPayment(on, 5_000_000);
    for (const account_number of ['0123451234', '0123459999']) {
      const b = await on('POST', '/v1/beneficiaries', { idempotencyKey: idem(), body: { customer_id: customerId, type: 'bank_account', bank_code: '058', account_number, currency: 'NGN' } });
      assert.equal((await on('POST', '/v1/transfers', { idempotencyKey: idem(), body: { customer_id: customerId, beneficiary_id: b.body.data.id, amount_minor: 10_000, currency: 'NGN' } })).status, 201);
    }
    const got = await r.waitFor(2);
    assert.deepEqual(got.map((g) => g.body.event_type).sort(), ['transfer.completed', 'transfer.failed']);
    const failed = got.find((g) => g.body.event_type === 'transfer.failed')!;
    assert.equal(failed.body.data.status, 'failed');
    assert.equal(failed.body.data.failure.code, 'PROVIDER_ERROR');
  });

  it('a 302 answer counts as a failure; the redirect is not followed', async () => {
    const on = account();
    const target = await receiver();
    const r = await receiver();
    r.behave({ status: 302, location: target.url });
    await subscribe(on, r.url);
    await completedPayment(on);
    const [d] = await until(() => deliveries(on), (l) => l[0]?.attempts === 1, 'first attempt');
    assert.equal(d.status, 'pending');
    assert.equal(d.last_response_code, 302);
    assert.match(d.last_error, /redirect/);
    assert.equal(target.received.length, 0, 'the redirect target was never called');
  });

  it('a 2xx other than 200/201/202/204 (203) counts as a failure', async () => {
    const on = account();
    const r = await receiver();
    r.behave({ status: 203 });
    await subscribe(on, r.url);
    await completedPayment(on);
    const [d] = await until(() => deliveries(on), (l) => l[0]?.attempts === 1, 'first attempt');
    assert.deepEqual([d.status, d.last_response_code], ['pending', 203]);
  });

  it('service_order.completed and service_order.failed are delivered for service orders', async () => {
    const on = account();
    const r = await receiver();
    await subscribe(on, r.url, ['service_order.completed', 'service_order.failed']);
    const { customerId } = await completedPayment(on, 1_000_000);
    for (const phone of ['+2348031237777', '+2348031230000']) {
      const o = await on('POST', '/v1/services/orders', { idempotencyKey: idem(), body: { customer_id: customerId, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 10_000, currency: 'NGN', payment_method: 'wallet', phone } });
      assert.equal(o.status, 201, JSON.stringify(o.body));
    }
    const got = await r.waitFor(2);
    assert.deepEqual(got.map((g) => g.body.event_type).sort(), ['service_order.completed', 'service_order.failed']);
    for (const g of got) assert.match(g.body.event_key, /^service_order\.(completed|failed):[0-9A-Z]{26}$/);
  });

  it('a wallet-paid order that is delivered sends payment.completed for its payment; a failed one does not', async () => {
    const on = account();
    const r = await receiver();
    const { customerId } = await completedPayment(on, 1_000_000);
    await subscribe(on, r.url, ['payment.completed', 'service_order.completed', 'service_order.failed']);
    const orders: Array<{ order: { id: string; payment_transaction_id: string }; payment: { id: string } }> = [];
    for (const phone of ['+2348031237777', '+2348031230000']) {
      const o = await on('POST', '/v1/services/orders', { idempotencyKey: idem(), body: { customer_id: customerId, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 10_000, currency: 'NGN', payment_method: 'wallet', phone } });
      assert.equal(o.status, 201, JSON.stringify(o.body));
      orders.push(o.body.data);
    }
    await r.waitFor(3);
    await new Promise((resolve) => setTimeout(resolve, 300));
    // The funding payment's own payment.completed may reach the subscription too (events are matched to
    // subscriptions when they are handed over, and it can be handed after the subscription exists).
    const orderPayments = new Set(orders.map((o) => o.payment.id));
    const got = r.received.filter((g) => g.body.event_type !== 'payment.completed' || orderPayments.has(g.body.data.payment_id));
    const types = got.map((g) => g.body.event_type).sort();
    assert.deepEqual(types, ['payment.completed', 'service_order.completed', 'service_order.failed'], 'one payment.completed, for the delivered order only');
    const paid = got.find((g) => g.body.event_type === 'payment.completed')!;
    assert.equal(paid.body.data.payment_id, orders[0]!.payment.id);
    assert.equal(paid.body.data.method, 'wallet');
    assert.equal(paid.body.data.transaction_id, orders[0]!.order.payment_transaction_id);
    assert.equal(paid.body.event_key, `payment.completed:${orders[0]!.order.payment_transaction_id}`);
  });

  it('a receiver slower than the timeout → failure "no answer within"', async () => {
    const on = account();
    const r = await receiver();
    r.behave({ status: 200, delayMs: TIMEOUT_MS * 3 });
    await subscribe(on, r.url);
    await completedPayment(on);
    const [d] = await until(() => deliveries(on), (l) => l[0]?.attempts === 1, 'first attempt');
    assert.equal(d.last_response_code, null);
    assert.match(d.last_error, /no answer within/);
  });

  it('retry schedule on the sandbox clock: 30 s, 2 min, 10 min, 1 h, 4 h, 12 h, then terminal after 7', async () => {
    const on = account();
    const r = await receiver();
    r.behave({ status: 500 });
    const sub = await subscribe(on, r.url);
    await completedPayment(on);
    await r.waitFor(1);
    const delaysS = [30, 120, 600, 3_600, 14_400, 43_200];
    for (const [i, delay] of delaysS.entries()) {
      const before = await until(() => deliveries(on), (l) => l[0]?.attempts === i + 1 && l[0]?.next_attempt_at !== null, `attempt ${i + 1} recorded`);
      const last = before[0].attempt_log.at(-1);
      assert.equal(Date.parse(before[0].next_attempt_at) - Date.parse(last.at), delay * 1000, `delay before attempt ${i + 2}`);
      // Not yet due one second early.
      await on('POST', '/v1/test_helpers/clock/advance', { body: { seconds: delay - 1 } });
      await new Promise((resolve) => setTimeout(resolve, 100));
      assert.equal(r.received.length, i + 1, `attempt ${i + 2} waits for its time`);
      await on('POST', '/v1/test_helpers/clock/advance', { body: { seconds: 1 } });
      await r.waitFor(i + 2);
    }
    const [final] = await until(() => deliveries(on), (l) => l[0]?.status === 'failed', 'terminal');
    assert.equal(final.attempts, 7);
    assert.equal(final.next_attempt_at, null);
    // One clock for the whole resource: the sandbox clock moved 61,950 s between attempts, and updated_at with it.
    assert.equal(final.updated_at, final.attempt_log.at(-1).at, 'updated_at is the last attempt\'s time');
    assert.ok(Date.parse(final.updated_at) >= Date.parse(final.created_at) + 61_950_000, `${final.created_at} → ${final.updated_at}`);
    await on('POST', '/v1/test_helpers/clock/advance', { body: { seconds: 86_400 } });
    await new Promise((resolve) => setTimeout(resolve, 150));
    assert.equal(r.received.length, 7, 'nothing after the seventh attempt');
    const subs = (await on('GET', '/v1/webhooks/subscriptions')).body.data;
    assert.equal(subs.find((s: { id: string }) => s.id === sub.id).consecutive_failures, 7);
  });

  it('redeliver → a fresh attempt with the same id and event_key, new signature; unknown → 404, malformed → 400', async () => {
    const on = account();
    const r = await receiver();
    const sub = await subscribe(on, r.url);
    await completedPayment(on);
    const [first] = await r.waitFor(1);
    const [d] = await until(() => deliveries(on), (l) => l[0]?.status === 'succeeded', 'delivered');
    await new Promise((resolve) => setTimeout(resolve, 1_050)); // a new second: a fresh timestamp
    const again = await on('POST', `/v1/webhooks/deliveries/${d.id}/redeliver`);
    assert.equal(again.status, 201);
    assert.notEqual(again.body.data.id, d.id);
    const got = await r.waitFor(2);
    const second = got[1]!;
    assert.equal(second.body.event_key, first!.body.event_key, 'duplicates carry the same event_key');
    assert.equal(second.body.id, first!.body.id);
    assert.notEqual(second.headers['x-service-timestamp'], first!.headers['x-service-timestamp']);
    assert.deepEqual(verifyWebhook(sub.secret, second.raw, second.headers), { ok: true });
    assert.equal((await on('POST', '/v1/webhooks/deliveries/01ARZ3NDEKTSV4RRFFQ69G5FAV/redeliver')).status, 404);
    assert.equal((await on('POST', '/v1/webhooks/deliveries/nope/redeliver')).status, 400);
    assert.equal((await api('POST', `/v1/webhooks/deliveries/${d.id}/redeliver`)).status, 404, 'another account');
    const filtered = await deliveries(on, `?subscription_id=${sub.id}&event_type=payment.completed`);
    assert.equal(filtered.length, 2);
    assert.equal((await deliveries(on, '?event_type=transfer.failed')).length, 0);
    assert.equal((await on('GET', '/v1/webhooks/deliveries?limit=0')).status, 400);
  });

  it('auto-disable after the threshold: nothing delivered or queued while disabled; kobo webhooks enable resumes', async () => {
    const on = account();
    const r = await receiver();
    r.behave({ status: 503 });
    const sub = await subscribe(on, r.url);
    for (let i = 0; i <= DISABLE_AFTER; i += 1) await completedPayment(on);
    await until(() => on('GET', '/v1/webhooks/subscriptions').then((x) => x.body.data[0]), (s) => s.status === 'disabled', 'disabled');
    const [s] = (await on('GET', '/v1/webhooks/subscriptions')).body.data;
    assert.equal(s.consecutive_failures, DISABLE_AFTER + 1);
    const queued = (await deliveries(on)).length;
    const receivedBefore = r.received.length;
    await completedPayment(on);
    await on('POST', '/v1/test_helpers/clock/advance', { body: { seconds: 3_600 } });
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal((await deliveries(on)).length, queued, 'events fired while disabled are not queued');
    assert.equal(r.received.length, receivedBefore, 'nothing delivered while disabled');
    const redeliver = await on('POST', `/v1/webhooks/deliveries/${(await deliveries(on))[0].id}/redeliver`);
    assert.equal(redeliver.status, 409);

    r.behave({ status: 204 });
    const enabled = kobo(server.dataDir, 'webhooks', 'enable', sub.id);
    assert.equal(enabled.status, 0, enabled.stderr);
    await completedPayment(on);
    await until(() => on('GET', '/v1/webhooks/subscriptions').then((x) => x.body.data[0]), (x) => x.status === 'active', 'active');
    await until(() => deliveries(on, '?status=succeeded'), (l) => l.length >= 1, 'delivered after re-enable');
  });

  it('a dead receiver does not slow deliveries to others', async () => {
    const on = account();
    const dead = await receiver();
    dead.behave({ status: 200, delayMs: TIMEOUT_MS * 5 });
    const live = await receiver();
    await subscribe(on, dead.url);
    await subscribe(on, live.url);
    const started = Date.now();
    for (let i = 0; i < 6; i += 1) await completedPayment(on);
    await live.waitFor(6, 5_000);
    assert.equal(live.received.length, 6);
    const slowest = Math.max(...live.received.map((g) => g.atMs)) - started;
    assert.ok(slowest < TIMEOUT_MS * 4, `live receiver got everything within ${slowest} ms while the other hung`);
  });
});

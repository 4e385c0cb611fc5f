// Five documented decisions that contradicted the API contract (issue #25), each reproduced over real
// HTTP against the contract's own line: a definite fulfilment failure ends `failed`; a failed order
// transaction with a retryable code is retried; recipient failures on quotes and orders are 400
// VALIDATION; open-amount plans say null, not ""; a live exchange quote with no FX source is 400.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey, startServer, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { kobo } from '../helpers/cli.ts';
import { until } from '../helpers/wait.ts';

const key = secretKey();
const liveKey = secretKey('live');
let server: TestServer;
let api: ReturnType<typeof client>;
let live: ReturnType<typeof client>;
let receiver: Receiver;

before(async () => {
  [server, receiver] = await Promise.all([startServer({ keys: [`${key}@contract`, `${liveKey}@contract`] }), startReceiver()]);
  api = client(server.baseUrl, key);
  live = client(server.baseUrl, liveKey);
  const sub = await api('POST', '/v1/webhooks/subscriptions', { idempotencyKey: idem(), body: { url: receiver.url, events: ['service_order.failed', 'service_order.completed'] } });
  assert.equal(sub.status, 201, JSON.stringify(sub.body));
});
after(async () => Promise.all([server.stop(), receiver.close()]));

let seq = 0;
/** A valid NG MTN number (0803) ending in `ending`, or in four digits that avoid the sandbox's magic endings. */
function mtnPhone(ending?: string): string {
  seq += 1;
  return `+234803${String(100 + (seq % 800)).padStart(3, '0')}${ending ?? String(1_000 + (seq % 8_000)).padStart(4, '0')}`;
}
/** An NG meter number (IKEDC's format) ending in `ending`. */
function meter(ending: string): string {
  seq += 1;
  return `4512${String(100 + (seq % 800)).padStart(3, '0')}${ending}`;
}

async function customer(fundMinor: number): Promise<{ id: string; walletId: string }> {
  const c = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: 'Contract Customer', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
  assert.equal(c.status, 201, JSON.stringify(c.body));
  assert.equal((await api('PATCH', `/v1/customers/${c.body.data.id}`, { body: { kyc_level: 2 } })).status, 200);
  for (let left = fundMinor; left > 0; left -= 10_000_000) {
    const p = await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: c.body.data.id, amount_minor: Math.min(left, 10_000_000), currency: 'NGN', method: 'bank_transfer' } });
    assert.equal(p.status, 201, JSON.stringify(p.body));
    assert.equal((await api('POST', `/v1/test_helpers/payments/${p.body.data.id}/settle`)).status, 200);
  }
  return { id: c.body.data.id, walletId: c.body.data.wallets[0].id };
}

const errorOf = (r: { status: number; body: any }): [number, string | undefined] => [r.status, r.body?.error?.code];
const orderOf = (id: string) => () => api('GET', `/v1/services/orders/${id}`).then((r) => r.body.data);
const txnOf = (id: string) => api('GET', `/v1/transactions/${id}`).then((r) => r.body.data);
const walletOf = (id: string) => api('GET', `/v1/wallets/${id}`).then((r) => r.body.data);

async function order(body: Record<string, unknown>): Promise<any> {
  const r = await api('POST', '/v1/services/orders', { idempotencyKey: idem('order'), body });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body.data;
}

function electricity(customerId: string, method: string, accountRef: string): Record<string, unknown> {
  return { customer_id: customerId, country_code: 'NG', service_code: 'electricity', provider_cost_minor: 500_000, currency: 'NGN', payment_method: method, operator_code: 'IKEDC', meter_type: 'prepaid', account_ref: accountRef };
}

/** An order that no longer moves: an outcome (completed, failed) or a terminal status. */
const settled = (o: any): boolean =>
  ['completed', 'failed', 'refunded', 'cancelled'].includes(o.status) && ((o.refunds ?? []) as Array<{ status: string }>).every((r) => r.status !== 'pending');

/** The webhook deliveries about one transaction, by event_key. */
function deliveries(txnId: string, count: number): Promise<Map<string, any>> {
  return until(async () => {
    const byKey = new Map<string, any>();
    for (const r of receiver.received) if (r.body?.data?.transaction_id === txnId) byKey.set(r.body.event_key, r.body);
    return byKey;
  }, (m) => m.size >= count, `${count} events about ${txnId}`);
}

describe('1. "fulfilling | fulfilment fails | definite failure | failed | funds released or refunded; event service_order.failed"', () => {
  it('a bank-transfer electricity order to …0000: paid, the rail fails it → failed (never refund_pending/refunded), the refund shown on the order and its payment transaction', async () => {
    const c = await customer(0);
    const created = await order(electricity(c.id, 'bank_transfer', meter('0000')));
    const o = created.order;
    assert.equal((await api('POST', `/v1/test_helpers/payments/${created.payment.id}/settle`)).status, 200);
    const done = await until(orderOf(o.id), settled, 'failed with its refund done');
    assert.equal(done.status, 'failed');
    assert.deepEqual(done.status_history.map((h: { status: string }) => h.status), ['pending', 'awaiting_payment', 'fulfilling', 'failed']);
    assert.equal(done.refunds.length, 1, JSON.stringify(done.refunds));
    assert.deepEqual(
      [done.refunds[0].status, done.refunds[0].amount_minor, done.refunds[0].currency, done.refunds[0].payment_transaction_id],
      ['completed', o.customer_amount_minor, 'NGN', o.payment_transaction_id],
    );
    const serviceTxn = await txnOf(o.transaction_id);
    assert.deepEqual([serviceTxn.status, serviceTxn.failure.code, serviceTxn.failure.stage], ['failed', 'PROVIDER_ERROR', 'fulfilment']);
    const paymentTxn = await txnOf(o.payment_transaction_id);
    assert.equal(paymentTxn.status, 'completed', 'the collection itself succeeded');
    assert.deepEqual([paymentTxn.refund?.status, paymentTxn.refund?.amount_minor], ['completed', o.customer_amount_minor]);
    // The event and the resource agree.
    const event = (await deliveries(o.transaction_id, 1)).get(`service_order.failed:${o.transaction_id}`);
    assert.equal(event.data.status, 'failed');
    assert.equal(event.data.order_id, o.id);
    assert.equal(done.status, event.data.status);
  });

  it('a card-paid order to …0000 → failed, refund completed; a wallet-paid one → failed, hold released (no refund)', async () => {
    const c = await customer(2_000_000);
    const card = await order(electricity(c.id, 'card', meter('0000')));
    await until(orderOf(card.order.id), (x) => x.status === 'awaiting_payment', 'awaiting payment');
    const paid = await fetch(card.checkout_url.replace('?token=', '/complete?token='), { method: 'POST' });
    assert.equal(paid.status, 200);
    const cardDone = await until(orderOf(card.order.id), settled, 'card order settled');
    assert.deepEqual([cardDone.status, cardDone.refunds.map((r: { status: string }) => r.status)], ['failed', ['completed']]);
    const wallet = await order(electricity(c.id, 'wallet', meter('0000')));
    const walletDone = await until(orderOf(wallet.order.id), settled, 'wallet order settled');
    assert.deepEqual([walletDone.status, walletDone.refunds], ['failed', []]);
    assert.equal((await walletOf(c.walletId)).held_minor, 0);
  });

  it('an operator failing an order held for manual fulfilment (…0004) → failed, not refunded', async () => {
    const c = await customer(0);
    const created = await order(electricity(c.id, 'bank_transfer', meter('0004')));
    assert.equal((await api('POST', `/v1/test_helpers/payments/${created.payment.id}/settle`)).status, 200);
    await until(orderOf(created.order.id), (x) => x.status === 'manual_fulfilment', 'held for an operator');
    const resolved = kobo(server.dataDir, 'orders', 'resolve', created.order.id, '--outcome', 'failed');
    assert.equal(resolved.status, 0, resolved.stderr + resolved.stdout);
    const done = await until(orderOf(created.order.id), settled, 'resolved');
    assert.deepEqual([done.status, done.refunds.map((r: { status: string }) => r.status)], ['failed', ['completed']]);
  });

  it('the contract\'s own path to refunded stays: provider funding failure (…0003) → provider_funding_failure → refund_pending → refunded', async () => {
    const c = await customer(0);
    const created = await order(electricity(c.id, 'bank_transfer', meter('0003')));
    assert.equal((await api('POST', `/v1/test_helpers/payments/${created.payment.id}/settle`)).status, 200);
    const done = await until(orderOf(created.order.id), settled, 'refunded');
    assert.equal(done.status, 'refunded');
    assert.deepEqual(done.status_history.map((h: { status: string }) => h.status).slice(-3), ['provider_funding_failure', 'refund_pending', 'refunded']);
  });
});

describe('2. "failed | POST /v1/transactions/{id}/retry | failure.code is PROVIDER_ERROR, INTERNAL or RATE_LIMITED | pending", service orders included', () => {
  it('a wallet-paid order failed at fulfilment (PROVIDER_ERROR): retry → 200 pending, attempt 2; re-dispatched under the same order (…-2), its own event_key …:2', async () => {
    const c = await customer(2_000_000);
    const balance = (await walletOf(c.walletId)).balance_minor;
    const o = (await order({ customer_id: c.id, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 20_000, currency: 'NGN', payment_method: 'wallet', phone: mtnPhone('0000') })).order;
    await until(orderOf(o.id), settled, 'failed');
    const retried = await api('POST', `/v1/transactions/${o.transaction_id}/retry`, { idempotencyKey: idem() });
    assert.equal(retried.status, 200, JSON.stringify(retried.body));
    assert.deepEqual([retried.body.data.id, retried.body.data.status, retried.body.data.attempt, retried.body.data.failure], [o.transaction_id, 'pending', 2, null]);
    // The sandbox rail fails …0000 every time: the second attempt fails again, on its own.
    const done = await until(orderOf(o.id), (x) => settled(x) && x.provider_reference?.endsWith('-2'), 'second attempt failed');
    assert.equal(done.status, 'failed');
    assert.deepEqual(done.status_history.map((h: { status: string }) => h.status), ['pending', 'awaiting_payment', 'fulfilling', 'failed', 'awaiting_payment', 'fulfilling', 'failed']);
    const txn = await txnOf(o.transaction_id);
    assert.deepEqual([txn.status, txn.attempt, txn.failure.code], ['failed', 2, 'PROVIDER_ERROR']);
    const keys = [...(await deliveries(o.transaction_id, 2)).keys()].sort();
    assert.deepEqual(keys, [`service_order.failed:${o.transaction_id}`, `service_order.failed:${o.transaction_id}:2`]);
    const wallet = await walletOf(c.walletId);
    assert.deepEqual([wallet.balance_minor, wallet.held_minor], [balance, 0], 'each attempt held and released the funds');
  });

  it('a retry checks funds again: the wallet spent meanwhile → 422 INSUFFICIENT_FUNDS, the transaction and the order stay failed', async () => {
    const c = await customer(1_000_000);
    const o = (await order(electricity(c.id, 'wallet', meter('0000')))).order;
    await until(orderOf(o.id), settled, 'failed');
    const available = (await walletOf(c.walletId)).available_minor;
    const spend = await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: c.id, amount_minor: available - 1_000, currency: 'NGN', method: 'wallet' } });
    assert.equal(spend.status, 201, JSON.stringify(spend.body));
    assert.deepEqual(errorOf(await api('POST', `/v1/transactions/${o.transaction_id}/retry`, { idempotencyKey: idem() })), [422, 'INSUFFICIENT_FUNDS']);
    assert.equal((await txnOf(o.transaction_id)).attempt, 1);
    assert.equal((await orderOf(o.id)()).status, 'failed');
  });

  it('a retry checks the limits again: today\'s usage taken near the daily limit → 422 LIMIT_EXCEEDED, nothing held', async () => {
    const c = await customer(1_000_000);
    const o = (await order(electricity(c.id, 'wallet', meter('0000')))).order;
    await until(orderOf(o.id), settled, 'failed');
    // The funding counted 1,000,000 today (the failed order gave its amount back); bare transactions take it to 49,900,000.
    for (const amount of [10_000_000, 10_000_000, 10_000_000, 10_000_000, 8_900_000]) {
      const x = await api('POST', '/v1/transactions', { idempotencyKey: idem(), body: { type: 'funding', customer_id: c.id, amount_minor: amount, currency: 'NGN' } });
      assert.equal(x.status, 201, JSON.stringify(x.body));
    }
    assert.deepEqual(errorOf(await api('POST', `/v1/transactions/${o.payment_transaction_id}/retry`, { idempotencyKey: idem() })), [422, 'LIMIT_EXCEEDED']);
    assert.equal((await walletOf(c.walletId)).held_minor, 0);
    assert.equal((await orderOf(o.id)()).status, 'failed');
  });

  it('a funding failure is final: its transactions fail with PROVIDER_FUNDING_FAILURE, a retry is 409 CONFLICT and the order stays refunded', async () => {
    const c = await customer(2_000_000);
    const o = (await order(electricity(c.id, 'wallet', meter('0003')))).order;
    await until(orderOf(o.id), (x) => x.status === 'refunded', 'refunded');
    for (const txnId of [o.transaction_id, o.payment_transaction_id]) {
      assert.equal((await txnOf(txnId)).failure.code, 'PROVIDER_FUNDING_FAILURE');
      assert.deepEqual(errorOf(await api('POST', `/v1/transactions/${txnId}/retry`, { idempotencyKey: idem() })), [409, 'CONFLICT']);
    }
    assert.equal((await orderOf(o.id)()).status, 'refunded');
  });

  for (const code of ['PROVIDER_ERROR', 'INTERNAL', 'RATE_LIMITED']) {
    it(`a card order whose collection failed with ${code}: retry of its payment transaction → 200 pending; the order awaits payment again and is fulfilled when paid`, async () => {
      const c = await customer(0);
      const created = await order({ customer_id: c.id, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 30_000, currency: 'NGN', payment_method: 'card', phone: mtnPhone() });
      await until(orderOf(created.order.id), (x) => x.status === 'awaiting_payment', 'awaiting payment');
      assert.equal((await api('POST', `/v1/test_helpers/payments/${created.payment.id}/fail`, { body: { failure_code: code } })).status, 200);
      await until(orderOf(created.order.id), (x) => x.status === 'failed', 'failed');
      const retried = await api('POST', `/v1/transactions/${created.order.payment_transaction_id}/retry`, { idempotencyKey: idem() });
      assert.equal(retried.status, 200, JSON.stringify(retried.body));
      assert.deepEqual([retried.body.data.status, retried.body.data.attempt], ['pending', 2]);
      const waiting = await orderOf(created.order.id)();
      assert.equal(waiting.status, 'awaiting_payment');
      assert.deepEqual([(await txnOf(created.order.transaction_id)).status, (await txnOf(created.order.transaction_id)).attempt], ['pending', 2]);
      const paid = await fetch(created.checkout_url.replace('?token=', '/complete?token='), { method: 'POST' });
      assert.equal(paid.status, 200);
      await until(orderOf(created.order.id), (x) => x.status === 'completed', 'completed');
    });
  }

  it('a final code stays final: a collection failed with COMPLIANCE_DENIED → retry 409 CONFLICT on either transaction', async () => {
    const c = await customer(0);
    const created = await order({ customer_id: c.id, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 30_000, currency: 'NGN', payment_method: 'card', phone: mtnPhone() });
    await until(orderOf(created.order.id), (x) => x.status === 'awaiting_payment', 'awaiting payment');
    assert.equal((await api('POST', `/v1/test_helpers/payments/${created.payment.id}/fail`, { body: { failure_code: 'COMPLIANCE_DENIED' } })).status, 200);
    await until(orderOf(created.order.id), (x) => x.status === 'failed', 'failed');
    for (const txnId of [created.order.transaction_id, created.order.payment_transaction_id]) {
      assert.deepEqual(errorOf(await api('POST', `/v1/transactions/${txnId}/retry`, { idempotencyKey: idem() })), [409, 'CONFLICT']);
    }
  });

  it('a bank-transfer order failed after collection (money refunded): retry opens a new collection for the same order; paid, it is dispatched again', async () => {
    const c = await customer(0);
    const created = await order(electricity(c.id, 'bank_transfer', meter('0000')));
    assert.equal((await api('POST', `/v1/test_helpers/payments/${created.payment.id}/settle`)).status, 200);
    await until(orderOf(created.order.id), settled, 'failed, refunded');
    const retried = await api('POST', `/v1/transactions/${created.order.transaction_id}/retry`, { idempotencyKey: idem() });
    assert.equal(retried.status, 200, JSON.stringify(retried.body));
    assert.deepEqual([retried.body.data.status, retried.body.data.attempt], ['pending', 2]);
    const waiting = await orderOf(created.order.id)();
    assert.equal(waiting.status, 'awaiting_payment');
    assert.notEqual(waiting.payment_transaction_id, created.order.payment_transaction_id, 'a new collection');
    const payment = (await txnOf(waiting.payment_transaction_id)).payment_id;
    assert.equal((await api('POST', `/v1/test_helpers/payments/${payment}/settle`)).status, 200);
    const done = await until(orderOf(created.order.id), (x) => settled(x) && x.provider_reference?.endsWith('-2'), 'second attempt failed');
    assert.equal(done.status, 'failed');
    assert.deepEqual(done.refunds.map((r: { payment_transaction_id: string; status: string }) => [r.payment_transaction_id, r.status]), [
      [created.order.payment_transaction_id, 'completed'],
      [waiting.payment_transaction_id, 'completed'],
    ]);
    // The refunded collection itself is completed, not failed: it is not retried.
    assert.deepEqual(errorOf(await api('POST', `/v1/transactions/${created.order.payment_transaction_id}/retry`, { idempotencyKey: idem() })), [409, 'CONFLICT']);
  });
});

describe('3. quotes and orders: "Errors: 400 VALIDATION" (422 VALIDATION_ERROR is validate\'s own)', () => {
  it('every recipient failure on POST /v1/services/quote and /orders → 400 VALIDATION; validate keeps 422 VALIDATION_ERROR', async () => {
    const c = await customer(5_000_000);
    const airtime = { customer_id: c.id, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 10_000, currency: 'NGN', payment_method: 'wallet' };
    const badRecipients: Array<Record<string, unknown>> = [
      { ...airtime, phone: '12345' },
      { ...airtime, phone: '+254712345678' },
      { ...airtime, phone: mtnPhone(), account_ref: mtnPhone() },
      { ...electricity(c.id, 'wallet', '1') },
      { ...electricity(c.id, 'wallet', meter('1234')), meter_type: 'smart' },
      { ...electricity(c.id, 'wallet', meter('1234')), operator_code: 'NOPE' },
    ];
    for (const body of badRecipients) {
      const quote = await api('POST', '/v1/services/quote', { body });
      assert.deepEqual(errorOf(quote), [400, 'VALIDATION'], `quote ${JSON.stringify(body)}: ${JSON.stringify(quote.body)}`);
      const placed = await api('POST', '/v1/services/orders', { idempotencyKey: idem('order'), body });
      assert.deepEqual(errorOf(placed), [400, 'VALIDATION'], `order ${JSON.stringify(body)}: ${JSON.stringify(placed.body)}`);
    }
    // The rail's verdict carried in validation_snapshot: not serviceable → 400 VALIDATION on the order.
    const blocked = meter('0003');
    const validated = await api('POST', '/v1/services/electricity/validate', { body: { customer_id: c.id, country_code: 'NG', account_ref: blocked, operator_code: 'IKEDC', meter_type: 'prepaid' } });
    assert.equal(validated.body.data.serviceability.serviceable, false);
    const refused = await api('POST', '/v1/services/orders', { idempotencyKey: idem('order'), body: { ...electricity(c.id, 'wallet', blocked), validation_snapshot: validated.body.data } });
    assert.deepEqual(errorOf(refused), [400, 'VALIDATION']);
    assert.equal((await walletOf(c.walletId)).held_minor, 0, 'nothing held');
    // validate itself: "422 VALIDATION_ERROR (missing account_ref or country_code, or rail rejected lookup)".
    assert.deepEqual(errorOf(await api('POST', '/v1/services/electricity/validate', { body: { customer_id: c.id, country_code: 'NG', account_ref: '1', operator_code: 'IKEDC', meter_type: 'prepaid' } })), [422, 'VALIDATION_ERROR']);
    assert.deepEqual(errorOf(await api('POST', '/v1/services/airtime/validate', { body: { customer_id: c.id, country_code: 'NG', account_ref: '12345' } })), [422, 'VALIDATION_ERROR']);
  });
});

describe('4. plans: "amount_minor | int or null | fixed price; null when pricing is open", one null for what an open plan lacks', () => {
  it('an open-amount plan lists operator_code and validity as null, like its envelope; a named operator is echoed; fixed plans keep their validity', async () => {
    const c = await customer(0);
    const open = (await api('GET', `/v1/services/airtime/plans?country=NG&customer_id=${c.id}`)).body.data;
    assert.equal(open.operator_code, null);
    assert.deepEqual([open.items[0].code, open.items[0].operator_code, open.items[0].validity, open.items[0].amount_minor], ['open_amount', null, null, null]);
    const glo = (await api('GET', `/v1/services/airtime/plans?country=NG&operator=GLO&customer_id=${c.id}`)).body.data;
    assert.deepEqual([glo.operator_code, glo.items[0].operator_code, glo.items[0].validity], ['GLO', 'GLO', null]);
    const data = (await api('GET', `/v1/services/data/plans?country=NG&operator=MTN&customer_id=${c.id}`)).body.data;
    assert.ok(data.items.every((p: { validity: unknown }) => typeof p.validity === 'string' && p.validity !== ''), JSON.stringify(data.items[0]));
    // The open plan can be named on an order with an operator (it is every operator's).
    const placed = await order({ customer_id: c.id, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 10_000, currency: 'NGN', payment_method: 'card', phone: mtnPhone(), operator_code: 'MTN', product_code: 'open_amount' });
    assert.equal(placed.order.product_code, 'open_amount');
  });
});

describe('5. POST /v1/exchange/quotes: "Error: 400 VALIDATION (invalid field or unsupported pair)"', () => {
  it('a live quote with no FX connector configured → 400 VALIDATION saying no live FX source is configured; nothing quoted', async () => {
    const c = await live('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: 'Live Customer', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
    assert.equal(c.status, 201, JSON.stringify(c.body));
    const quote = await live('POST', '/v1/exchange/quotes', { body: { customer_id: c.body.data.id, from_currency: 'NGN', to_currency: 'USD', from_amount_minor: 154_525 } });
    assert.deepEqual(errorOf(quote), [400, 'VALIDATION'], JSON.stringify(quote.body));
    assert.match(quote.body.error.message, /no live FX source is configured/i);
  });
});

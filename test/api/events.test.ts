// Covers GET /v1/events and GET /v1/events/{id} over real HTTP: the events a settled collection and a
// transfer raise, byte for byte what a webhook subscription receives, filtered by type, customer and
// created range, and scoped by account and customer key. A real receiver on 127.0.0.1 takes the webhooks.
// Invariant checked: an event is listed whether or not anyone subscribed, and only to its own account.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey, startServer, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { kobo } from '../helpers/cli.ts';
import { until } from '../helpers/wait.ts';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';

const KEY = secretKey();
const KEY_OTHER = secretKey();

let server: TestServer;
let receiver: Receiver;
let api: ReturnType<typeof client>;
type Api = typeof api;

interface Event {
  id: string;
  event_type: string;
  event_key: string;
  occurred_at: string;
  data: { transaction_id: string; customer_id: string };
}

function assertError(response: { status: number; body: unknown }, status: number, code: string): void {
  const body = response.body as { error?: { code: string } };
  assert.equal(response.status, status, JSON.stringify(body));
  assert.equal(body.error?.code, code, JSON.stringify(body));
}

async function newCustomer(a: Api = api): Promise<string> {
  const response = await a('POST', '/v1/customers', { idempotencyKey: idem('cust'), body: { name: 'Ada Obi', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
  assert.equal(response.status, 201, JSON.stringify(response.body));
  return response.body.data.id;
}

async function settledPayment(customerId: string, a: Api = api): Promise<string> {
  const paid = await a('POST', '/v1/payments', { idempotencyKey: idem('pay'), body: { customer_id: customerId, amount_minor: 500_000, currency: 'NGN', method: 'bank_transfer' } });
  assert.equal(paid.status, 201, JSON.stringify(paid.body));
  assert.equal((await a('POST', `/v1/test_helpers/payments/${paid.body.data.id}/settle`)).status, 200);
  return paid.body.data.transaction_id;
}

async function events(path: string, a: Api = api): Promise<{ data: Event[]; has_more: boolean }> {
  const response = await a('GET', path);
  assert.equal(response.status, 200, JSON.stringify(response.body));
  return response.body;
}

before(async () => {
  server = await startServer({ keys: [`${KEY}@acme`, `${KEY_OTHER}@globex`] });
  api = client(server.baseUrl, KEY);
  receiver = await startReceiver();
});

after(async () => {
  await receiver?.close();
  await server?.stop();
});

describe('GET /v1/events', () => {
  it('a settled collection, nobody subscribed → its payment.completed event is listed and readable by id', async () => {
    const customer = await newCustomer();
    const txnId = await settledPayment(customer);
    const listed = await events(`/v1/events?customer_id=${customer}`);
    assert.equal(listed.data.length, 1);
    const event = listed.data[0]!;
    assert.equal(event.event_type, 'payment.completed');
    assert.equal(event.event_key, `payment.completed:${txnId}`);
    assert.equal(event.data.transaction_id, txnId);
    assert.deepEqual((await api('GET', `/v1/events/${event.id}`)).body.data, event);
  });

  it('a subscription receives the webhook → GET /v1/events/{id} answers the very payload it received', async () => {
    const created = await api('POST', '/v1/webhooks/subscriptions', { idempotencyKey: idem('sub'), body: { url: receiver.url, events: ['payment.completed'] } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const customer = await newCustomer();
    const txnId = await settledPayment(customer);
    const got = await until(async () => receiver.received.filter((r) => r.body?.data?.transaction_id === txnId), (r) => r.length > 0, 'the webhook', 10_000);
    const delivered = got[0]!;
    const byId = await api('GET', `/v1/events/${delivered.body.id}`);
    assert.equal(byId.status, 200);
    assert.equal(JSON.stringify(byId.body.data), delivered.raw);
  });

  it('type filter and created range: a payment.completed and a transfer.completed → each type lists its own; a range after both lists none', async () => {
    const customer = await newCustomer();
    await settledPayment(customer);
    const ben = await api('POST', '/v1/beneficiaries', { idempotencyKey: idem('ben'), body: { customer_id: customer, type: 'bank_account', bank_code: '058', account_number: '0123456789', currency: 'NGN' } });
    const transfer = await api('POST', '/v1/transfers', { idempotencyKey: idem('tr'), body: { customer_id: customer, beneficiary_id: ben.body.data.id, amount_minor: 10_000, currency: 'NGN' } });
    assert.equal(transfer.status, 201, JSON.stringify(transfer.body));
    const q = `/v1/events?customer_id=${customer}`;
    await until(() => events(q), (p) => p.data.length === 2, 'two events', 10_000);
    const all = await events(q);
    assert.deepEqual(all.data.map((e) => e.event_type), ['transfer.completed', 'payment.completed']);
    assert.deepEqual((await events(`${q}&type=payment.completed`)).data.map((e) => e.id), [all.data[1]!.id]);
    assert.deepEqual((await events(`${q}&type=transfer.completed`)).data.map((e) => e.id), [all.data[0]!.id]);
    const later = new Date(Date.parse(all.data[0]!.occurred_at) + 1).toISOString();
    assert.deepEqual((await events(`${q}&created[gte]=${later}`)).data, []);
    assert.equal((await events(`${q}&created[lt]=${later}`)).data.length, 2);
    assertError(await api('GET', '/v1/events?type=payment.settled'), 400, 'VALIDATION');
  });

  it("scoping: another account → not listed, GET by id 404 NOT_FOUND; a customer key → only its customer's events, another's 404", async () => {
    const mine = await newCustomer();
    const stranger = await newCustomer();
    await settledPayment(mine);
    await settledPayment(stranger);
    const myEvent = (await events(`/v1/events?customer_id=${mine}`)).data[0]!;
    const strangerEvent = (await events(`/v1/events?customer_id=${stranger}`)).data[0]!;
    const other = client(server.baseUrl, KEY_OTHER);
    assert.deepEqual((await events('/v1/events?limit=100', other)).data, []);
    assertError(await other('GET', `/v1/events/${myEvent.id}`), 404, 'NOT_FOUND');
    const created = kobo(server.dataDir, 'keys', 'create', '--account', 'acme', '--customer', mine);
    assert.equal(created.status, 0, created.stderr);
    const scoped = client(server.baseUrl, /secret \(shown once\): (sk_\w+_[A-Za-z0-9_-]+)/.exec(created.stdout)![1]!);
    assert.deepEqual((await events('/v1/events?limit=100', scoped)).data.map((e) => e.id), [myEvent.id]);
    assert.equal((await scoped('GET', `/v1/events/${myEvent.id}`)).status, 200);
    assertError(await scoped('GET', `/v1/events/${strangerEvent.id}`), 404, 'NOT_FOUND');
  });

  it('GET /v1/events/{id}: not a ULID → 400 VALIDATION; an id never minted → 404 NOT_FOUND', async () => {
    assertError(await api('GET', '/v1/events/nope'), 400, 'VALIDATION');
    assertError(await api('GET', '/v1/events/01ARZ3NDEKTSV4RRFFQ69G5FAV'), 404, 'NOT_FOUND');
  });
});

describe('GET /v1/events after the rows are written', () => {
  it('a restart (rows written, stored empty, bodies read from their log records) → every event byte for byte as before; verify clean', { timeout: 60_000 }, async () => {
    const key = secretKey();
    let own = await startServer({ keys: [`${key}@initech`] });
    try {
      const a = client(own.baseUrl, key);
      const customer = await newCustomer(a);
      for (let i = 0; i < 3; i += 1) await settledPayment(customer, a);
      const before = await a('GET', '/v1/events?limit=100');
      assert.equal(before.status, 200);
      assert.equal(before.body.data.length, 3);
      const one = await a('GET', `/v1/events/${before.body.data[1].id}`);
      await own.stop(); // writes every waiting derived row
      const stored: Array<string | null> = [];
      for (const file of fs.readdirSync(own.dataDir).filter((f) => /^shard-\d+-lists\.db$/.test(f))) {
        const db = new Database(path.join(own.dataDir, file), { readonly: true });
        stored.push(...(db.prepare('SELECT body FROM lists WHERE k = 7').pluck().all() as Array<string | null>));
        db.close();
      }
      assert.deepEqual(stored, ['', '', ''], 'no event body stored a second time beside its log record');
      own = await startServer({ keys: [`${key}@initech`], dataDir: own.dataDir });
      const b = client(own.baseUrl, key);
      const after = await b('GET', '/v1/events?limit=100');
      assert.equal(JSON.stringify(after.body), JSON.stringify(before.body));
      const again = await b('GET', `/v1/events/${before.body.data[1].id}`);
      assert.equal(JSON.stringify(again.body), JSON.stringify(one.body));
      const byCustomer = await b('GET', `/v1/events?customer_id=${customer}&type=payment.completed`);
      assert.equal(JSON.stringify(byCustomer.body.data), JSON.stringify(before.body.data));
    } finally {
      await own.stop();
    }
    const verify = kobo(own.dataDir, 'verify');
    assert.equal(verify.status, 0, verify.stdout + verify.stderr);
  });
});

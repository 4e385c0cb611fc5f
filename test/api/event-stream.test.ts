// GET /v1/events/stream (the WebSocket `kobo listen` reads) over a real connection to a real server:
// refusals at the upgrade, what a customer-scoped key hears, and `after` replaying from the index.
// Invariant checked: a stream carries only its key's owner's (and customer's) events, each as its
// webhook body.
import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { client, idem, secretKey, startServer, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';
import { kobo } from '../helpers/cli.ts';
import { until } from '../helpers/wait.ts';

const KEY = secretKey();
const KEY_OTHER = secretKey();
let server: TestServer;
let api: ReturnType<typeof client>;

function streamUrl(query = ''): string {
  return `ws://127.0.0.1:${server.port}/v1/events/stream${query}`;
}

/** Opens a stream; resolves with the HTTP status it was refused with, or the open socket and what it hears. */
async function open(key: string | null, query = ''): Promise<{ refused: number } | { ws: WebSocket; heard: Array<{ id: string; data: { customer_id: string; transaction_id: string } }> }> {
  const ws = new WebSocket(streamUrl(query), key === null ? {} : { headers: { authorization: `Bearer ${key}` } });
  const heard: Array<{ id: string; data: { customer_id: string; transaction_id: string } }> = [];
  ws.on('message', (data) => heard.push(JSON.parse(data.toString())));
  return new Promise((resolve) => {
    ws.once('open', () => resolve({ ws, heard }));
    ws.once('unexpected-response', (_req, res) => resolve({ refused: res.statusCode ?? 0 }));
    ws.once('error', () => resolve({ refused: -1 }));
  });
}

async function customer(a = api): Promise<string> {
  const c = await a('POST', '/v1/customers', { idempotencyKey: idem('c'), body: { name: 'Ada Obi', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
  assert.equal(c.status, 201);
  return c.body.data.id;
}

async function settled(customerId: string, a = api): Promise<string> {
  const paid = await a('POST', '/v1/payments', { idempotencyKey: idem('pay'), body: { customer_id: customerId, amount_minor: 20_000, currency: 'NGN', method: 'bank_transfer' } });
  assert.equal((await a('POST', `/v1/test_helpers/payments/${paid.body.data.id}/settle`)).status, 200);
  return paid.body.data.transaction_id;
}

before(async () => {
  server = await startServer({ keys: [`${KEY}@acme`, `${KEY_OTHER}@globex`] });
  api = client(server.baseUrl, KEY);
});

after(async () => {
  await server?.stop();
});

it('GET /v1/events/stream: no key or an unknown key → 401; a malformed after → 400; nothing opens', async () => {
  assert.deepEqual(await open(null), { refused: 401 });
  assert.deepEqual(await open(secretKey()), { refused: 401 });
  assert.deepEqual(await open(KEY, '?after=not-an-id'), { refused: 400 });
});

it("a customer-scoped key's stream → its customer's events only, not another customer's nor another account's", async () => {
  const mine = await customer();
  const stranger = await customer();
  const created = kobo(server.dataDir, 'keys', 'create', '--account', 'acme', '--customer', mine);
  assert.equal(created.status, 0, created.stderr);
  const scopedKey = /secret \(shown once\): (sk_\w+_[A-Za-z0-9_-]+)/.exec(created.stdout)![1]!;
  const scoped = await open(scopedKey);
  const account = await open(KEY);
  assert.ok('ws' in scoped && 'ws' in account);
  const other = client(server.baseUrl, KEY_OTHER);
  await settled(await customer(other), other);
  const strangerTxn = await settled(stranger);
  const myTxn = await settled(mine);
  await until(async () => account.heard.length, (n) => n >= 2, 'the account stream', 5_000);
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.deepEqual(scoped.heard.map((e) => e.data.transaction_id), [myTxn]);
  assert.deepEqual(new Set(account.heard.map((e) => e.data.transaction_id)), new Set([strangerTxn, myTxn]));
  const byId = await api('GET', `/v1/events/${scoped.heard[0]!.id}`);
  assert.deepEqual(byId.body.data, scoped.heard[0]);
  scoped.ws.close();
  account.ws.close();
});

it('?after=<event id> → the events after it, oldest first, from the index, before any live one', async () => {
  const c = await customer();
  const txns = [await settled(c), await settled(c), await settled(c)];
  const events = (await api('GET', `/v1/events?customer_id=${c}`)).body.data as Array<{ id: string; data: { transaction_id: string } }>;
  const oldest = events.at(-1)!;
  assert.equal(oldest.data.transaction_id, txns[0]);
  const stream = await open(KEY, `?after=${oldest.id}`);
  assert.ok('ws' in stream);
  const mine = await until(async () => stream.heard.filter((e) => e.data.customer_id === c), (h) => h.length >= 2, 'the backlog', 5_000);
  assert.deepEqual(mine.map((e) => e.data.transaction_id), [txns[1], txns[2]]);
  stream.ws.close();
});

// Covers the lists (GET /v1/customers, transactions, payments, transfers, services/orders, beneficiaries)
// and a wallet's statement (GET /v1/wallets/{id}/entries) over real HTTP against one server with two
// shards: order, cursor paging both ways, filters, scoping by account and customer key, validation,
// paging while rows are inserted, rows past the waiting bound, and the lists after a kill -9.
// Invariant checked: a page shows exactly the rows a GET by id shows, each once, of the asker only.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { client, idem, secretKey, startServer, tempDataDir, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';
import { kobo } from '../helpers/cli.ts';
import { until } from '../helpers/wait.ts';

const KEY = secretKey();
const KEY_OTHER = secretKey();
const KEY_CLOCK = secretKey();

let server: TestServer;
let api: ReturnType<typeof client>;
type Api = typeof api;

interface Page<T = { id: string; status?: string; customer_id?: string }> {
  data: T[];
  has_more: boolean;
}

function assertError(response: { status: number; body: unknown }, status: number, code: string): void {
  const body = response.body as { error?: { code: string } };
  assert.equal(response.status, status, JSON.stringify(body));
  assert.equal(body.error?.code, code, JSON.stringify(body));
}

async function newCustomer(a: Api = api): Promise<{ id: string; walletId: string }> {
  const response = await a('POST', '/v1/customers', { idempotencyKey: idem('cust'), body: { name: 'Ada Obi', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
  assert.equal(response.status, 201, JSON.stringify(response.body));
  return { id: response.body.data.id, walletId: response.body.data.wallets[0].id };
}

async function newTxn(customerId: string, a: Api = api): Promise<string> {
  const response = await a('POST', '/v1/transactions', { idempotencyKey: idem('txn'), body: { customer_id: customerId, type: 'funding', amount_minor: 1000, currency: 'NGN' } });
  assert.equal(response.status, 201, JSON.stringify(response.body));
  return response.body.data.id;
}

/** A settled bank-transfer collection: the wallet gets amount − 1%. */
async function fund(customerId: string, amountMinor: number, a: Api = api): Promise<{ paymentId: string; txnId: string }> {
  const paid = await a('POST', '/v1/payments', { idempotencyKey: idem('pay'), body: { customer_id: customerId, amount_minor: amountMinor, currency: 'NGN', method: 'bank_transfer' } });
  assert.equal(paid.status, 201, JSON.stringify(paid.body));
  const settled = await a('POST', `/v1/test_helpers/payments/${paid.body.data.id}/settle`);
  assert.equal(settled.status, 200, JSON.stringify(settled.body));
  return { paymentId: paid.body.data.id, txnId: paid.body.data.transaction_id };
}

async function page<T = { id: string; status?: string; customer_id?: string }>(path: string, a: Api = api): Promise<Page<T>> {
  const response = await a<Page<T>>('GET', path);
  assert.equal(response.status, 200, `${path}: ${JSON.stringify(response.body)}`);
  assert.equal(typeof response.body.has_more, 'boolean');
  return response.body;
}

/** Every row of a list, walking starting_after pages of `limit`; asserts each page is newest first. */
async function walk(path: string, limit: number, a: Api = api): Promise<string[]> {
  const ids: string[] = [];
  const join = path.includes('?') ? '&' : '?';
  for (let cursor: string | null = null, pages = 0; ; pages += 1) {
    assert.ok(pages < 10_000, 'walk: too many pages');
    const body: Page = await page(`${path}${join}limit=${limit}${cursor === null ? '' : `&starting_after=${cursor}`}`, a);
    assert.ok(body.data.length <= limit);
    ids.push(...body.data.map((row) => row.id));
    if (!body.has_more) return ids;
    cursor = body.data.at(-1)!.id;
  }
}

const descending = (ids: string[]): boolean => ids.every((id, i) => i === 0 || ids[i - 1]! > id);

before(async () => {
  server = await startServer({ keys: [`${KEY}@acme`, `${KEY_OTHER}@globex`, `${KEY_CLOCK}@initech`] });
  api = client(server.baseUrl, KEY);
});

after(async () => {
  await server?.stop();
});

describe('resource lists', () => {
  it('GET /v1/customers: three new customers → newest first, each exactly as GET by id shows it', async () => {
    const made = [await newCustomer(), await newCustomer(), await newCustomer()];
    const body = await page<Record<string, unknown> & { id: string }>('/v1/customers?limit=3');
    assert.deepEqual(body.data.map((c) => c.id), made.map((c) => c.id).reverse());
    for (const row of body.data) assert.deepEqual(row, (await api('GET', `/v1/customers/${row.id}`)).body.data);
  });

  it('GET /v1/transactions: seven rows, pages of 3 → every row once, newest first; ending_before walks back to the same pages', async () => {
    const customer = await newCustomer();
    const ids: string[] = [];
    for (let i = 0; i < 7; i += 1) ids.push(await newTxn(customer.id));
    const q = `/v1/transactions?customer_id=${customer.id}`;
    const first = await page(`${q}&limit=3`);
    const second = await page(`${q}&limit=3&starting_after=${first.data.at(-1)!.id}`);
    const third = await page(`${q}&limit=3&starting_after=${second.data.at(-1)!.id}`);
    assert.deepEqual([first, second, third].map((p) => [p.data.length, p.has_more]), [[3, true], [3, true], [1, false]]);
    assert.deepEqual([...first.data, ...second.data, ...third.data].map((t) => t.id), [...ids].reverse());
    const back = await page(`${q}&limit=3&ending_before=${third.data[0]!.id}`);
    assert.deepEqual(back.data.map((t) => t.id), second.data.map((t) => t.id));
    assert.equal(back.has_more, true);
    const top = await page(`${q}&limit=3&ending_before=${second.data[0]!.id}`);
    assert.deepEqual(top.data.map((t) => t.id), first.data.map((t) => t.id));
    assert.equal(top.has_more, false);
  });

  it('GET /v1/payments?status=: a settled and a pending collection → each status lists only its own; transactions follow their status too', async () => {
    const customer = await newCustomer();
    const settled = await fund(customer.id, 20_000);
    const pending = await api('POST', '/v1/payments', { idempotencyKey: idem('pay'), body: { customer_id: customer.id, amount_minor: 25_000, currency: 'NGN', method: 'bank_transfer' } });
    assert.equal(pending.status, 201, JSON.stringify(pending.body));
    const q = `/v1/payments?customer_id=${customer.id}`;
    assert.deepEqual((await page(`${q}&status=completed`)).data.map((p) => p.id), [settled.paymentId]);
    assert.deepEqual((await page(`${q}&status=pending`)).data.map((p) => p.id), [pending.body.data.id]);
    assert.deepEqual((await page(`${q}&status=failed`)).data, []);
    const done = await page(`/v1/transactions?customer_id=${customer.id}&status=completed`);
    assert.deepEqual(done.data.map((t) => t.id), [settled.txnId]);
  });

  it('GET /v1/beneficiaries, /v1/transfers, /v1/services/orders: rows the customer made → listed with its customer_id, as GET by id shows them', async () => {
    const customer = await newCustomer();
    await fund(customer.id, 1_000_000);
    const ben = await api('POST', '/v1/beneficiaries', { idempotencyKey: idem('ben'), body: { customer_id: customer.id, type: 'bank_account', bank_code: '058', account_number: '0123456789', currency: 'NGN' } });
    assert.equal(ben.status, 201, JSON.stringify(ben.body));
    const transfer = await api('POST', '/v1/transfers', { idempotencyKey: idem('tr'), body: { customer_id: customer.id, beneficiary_id: ben.body.data.id, amount_minor: 10_000, currency: 'NGN' } });
    assert.equal(transfer.status, 201, JSON.stringify(transfer.body));
    const phone = '+2348031234567';
    const quote = await api('POST', '/v1/services/quote', { body: { customer_id: customer.id, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 50_000, currency: 'NGN', payment_method: 'wallet', phone } });
    assert.equal(quote.status, 200, JSON.stringify(quote.body));
    const order = await api('POST', '/v1/services/orders', { idempotencyKey: idem('order'), body: { customer_id: customer.id, country_code: 'NG', service_code: 'airtime', provider_cost_minor: 50_000, currency: 'NGN', payment_method: 'wallet', quote_id: quote.body.data.quote_id, operator_code: 'MTN', phone } });
    assert.equal(order.status, 201, JSON.stringify(order.body));
    const checks: Array<[string, string, string]> = [
      ['/v1/beneficiaries', ben.body.data.id, `/v1/beneficiaries/${ben.body.data.id}`],
      ['/v1/transfers', transfer.body.data.id, `/v1/transfers/${transfer.body.data.id}`],
      ['/v1/services/orders', order.body.data.order.id, `/v1/services/orders/${order.body.data.order.id}`],
    ];
    for (const [list, id, byId] of checks) {
      // A transfer or order still moving may change between the two reads: compare once both settle.
      const listed = await until(() => page<Record<string, unknown> & { id: string }>(`${list}?customer_id=${customer.id}`), (p) => p.data.length === 1 && ['completed', undefined].includes(p.data[0]!.status as string | undefined), `${list} settled`, 10_000);
      assert.equal(listed.data[0]!.id, id);
      assert.equal(listed.data[0]!.customer_id, customer.id);
      assert.deepEqual(listed.data[0], (await api('GET', byId)).body.data, list);
    }
    const completed = await page(`/v1/services/orders?customer_id=${customer.id}&status=completed`);
    assert.deepEqual(completed.data.map((o) => o.id), [order.body.data.order.id]);
  });

  it('created[gte] / created[lt]: rows made a day apart on the sandbox clock → each range lists only its rows', async () => {
    const clock = client(server.baseUrl, KEY_CLOCK);
    const customer = await newCustomer(clock);
    const early = await newTxn(customer.id, clock);
    const advanced = await clock('POST', '/v1/test_helpers/clock/advance', { body: { seconds: 86_400 } });
    assert.equal(advanced.status, 200, JSON.stringify(advanced.body));
    const late = await newTxn(customer.id, clock);
    const lateAt = (await clock('GET', `/v1/transactions/${late}`)).body.data.created_at as string;
    const cut = new Date(Date.parse(lateAt) - 3_600_000).toISOString();
    assert.deepEqual((await page(`/v1/transactions?created[gte]=${cut}`, clock)).data.map((t) => t.id), [late]);
    assert.deepEqual((await page(`/v1/transactions?created[lt]=${cut}`, clock)).data.map((t) => t.id), [early]);
    assert.deepEqual((await page(`/v1/transactions?created[gte]=${encodeURIComponent(lateAt)}&created[lt]=${encodeURIComponent(new Date(Date.parse(lateAt) + 1).toISOString())}`, clock)).data.map((t) => t.id), [late]);
  });
});

describe('list scoping', () => {
  it("another account's key → none of this account's rows; its own rows only", async () => {
    const other = client(server.baseUrl, KEY_OTHER);
    const theirs = await newCustomer(other);
    const ours = await newCustomer();
    const seen = await walk('/v1/customers', 100, other);
    assert.deepEqual(seen, [theirs.id]);
    assert.ok(!(await walk('/v1/customers', 100)).includes(theirs.id));
    assert.deepEqual(await walk(`/v1/transactions?customer_id=${ours.id}`, 10, other), []);
  });

  it("a customer-scoped key → only its customer's rows; naming another customer → 403 FORBIDDEN", async () => {
    const mine = await newCustomer();
    const stranger = await newCustomer();
    const myTxn = await newTxn(mine.id);
    await newTxn(stranger.id);
    const created = kobo(server.dataDir, 'keys', 'create', '--account', 'acme', '--customer', mine.id);
    assert.equal(created.status, 0, created.stderr);
    const scoped = client(server.baseUrl, /secret \(shown once\): (sk_\w+_[A-Za-z0-9_-]+)/.exec(created.stdout)![1]!);
    assert.deepEqual(await walk('/v1/customers', 50, scoped), [mine.id]);
    assert.deepEqual(await walk('/v1/transactions', 50, scoped), [myTxn]);
    assertError(await scoped('GET', `/v1/transactions?customer_id=${stranger.id}`), 403, 'FORBIDDEN');
    assertError(await scoped('GET', `/v1/wallets/${stranger.walletId}/entries`), 403, 'FORBIDDEN');
  });
});

describe('list validation', () => {
  it('bad query → 400 VALIDATION: limit 0, 101 or not a number, a cursor that is no id, both cursors, an unknown status or field, a bad date', async () => {
    const customer = await newCustomer();
    const bad = [
      '/v1/customers?limit=0', '/v1/customers?limit=101', '/v1/customers?limit=ten', '/v1/customers?starting_after=nope',
      `/v1/customers?starting_after=${customer.id}&ending_before=${customer.id}`, '/v1/payments?status=settled', '/v1/customers?status=pending',
      '/v1/transfers?colour=red', '/v1/transactions?created[gte]=yesterday', '/v1/transactions?customer_id=x',
      `/v1/wallets/${customer.walletId}/entries?starting_after=${customer.id}`, '/v1/wallets/nope/entries',
    ];
    for (const path of bad) assertError(await api('GET', path), 400, 'VALIDATION');
  });

  it('GET /v1/wallets/{id}/entries of a wallet that does not exist → 404 NOT_FOUND', async () => {
    const customer = await newCustomer();
    const missing = customer.walletId.slice(0, 12) + 'ZZZZZZZZZZZZZZ';
    assertError(await api('GET', `/v1/wallets/${missing}/entries`), 404, 'NOT_FOUND');
  });
});

describe('wallet statement', () => {
  it('GET /v1/wallets/{id}/entries: funded twice, then a transfer out → signed entries, newest first, each balance_after the one before plus its amount, the newest equal to the balance', async () => {
    const customer = await newCustomer();
    const firstFunding = await fund(customer.id, 100_000);
    const secondFunding = await fund(customer.id, 50_000);
    const ben = await api('POST', '/v1/beneficiaries', { idempotencyKey: idem('ben'), body: { customer_id: customer.id, type: 'bank_account', bank_code: '058', account_number: '0123456789', currency: 'NGN' } });
    const transfer = await api('POST', '/v1/transfers', { idempotencyKey: idem('tr'), body: { customer_id: customer.id, beneficiary_id: ben.body.data.id, amount_minor: 30_000, currency: 'NGN' } });
    assert.equal(transfer.status, 201, JSON.stringify(transfer.body));
    await until(() => api('GET', `/v1/transfers/${transfer.body.data.id}`), (r) => r.body.data.status === 'completed', 'transfer completed', 10_000);
    type Entry = { id: string; object: string; transaction_id: string; amount_minor: number; balance_after_minor: number; wallet_id: string };
    const entries = (await page<Entry>(`/v1/wallets/${customer.walletId}/entries?limit=100`)).data;
    const wallet = (await api('GET', `/v1/wallets/${customer.walletId}`)).body.data;
    assert.equal(entries[0]!.balance_after_minor, wallet.balance_minor);
    const oldestFirst = [...entries].reverse();
    oldestFirst.forEach((e, i) => assert.equal(e.balance_after_minor, (i === 0 ? 0 : oldestFirst[i - 1]!.balance_after_minor) + e.amount_minor, `entry ${i}`));
    assert.deepEqual(oldestFirst.slice(0, 2).map((e) => [e.transaction_id, e.amount_minor]), [[firstFunding.txnId, 99_000], [secondFunding.txnId, 49_500]]);
    const out = oldestFirst.slice(2);
    assert.ok(out.length >= 1 && out.every((e) => e.transaction_id === transfer.body.data.transaction_id && e.amount_minor < 0), JSON.stringify(out));
    assert.ok(entries.every((e) => e.object === 'ledger_entry' && e.wallet_id === customer.walletId));
    // Paging the statement: one entry a page gives the same entries.
    const ids = await walk(`/v1/wallets/${customer.walletId}/entries`, 1);
    assert.deepEqual(ids, entries.map((e) => e.id));
    const back = await page<Entry>(`/v1/wallets/${customer.walletId}/entries?limit=1&ending_before=${entries[1]!.id}`);
    assert.deepEqual(back.data.map((e) => e.id), [entries[0]!.id]);
  });
});

describe('paging under load', () => {
  it('pages walked while 40 new transactions are created → every row that existed before the walk once, none twice; the new ones sit above the first page', async () => {
    const customer = await newCustomer();
    const before: string[] = [];
    for (let i = 0; i < 30; i += 1) before.push(await newTxn(customer.id));
    const q = `/v1/transactions?customer_id=${customer.id}`;
    const first = await page(`${q}&limit=4`);
    const inserting = Promise.all(Array.from({ length: 40 }, () => newTxn(customer.id)));
    const seen = [...first.data.map((t) => t.id)];
    for (let cursor = first.data.at(-1)!.id, more = first.has_more; more; ) {
      const next = await page(`${q}&limit=4&starting_after=${cursor}`);
      seen.push(...next.data.map((t) => t.id));
      more = next.has_more;
      cursor = next.data.at(-1)?.id ?? cursor;
    }
    const added = await inserting;
    assert.deepEqual(seen, [...before].reverse());
    assert.equal(new Set(seen).size, seen.length);
    const newer = await walk(`${q}&ending_before=${first.data[0]!.id}`, 100);
    assert.deepEqual(new Set(newer), new Set(added));
  });

  it('2,600 transactions (more than may wait in memory: some are in the index, some wait) → a walk lists each once, newest first', async () => {
    const customer = await newCustomer();
    const ids: string[] = [];
    for (let i = 0; i < 26; i += 1) ids.push(...(await Promise.all(Array.from({ length: 100 }, () => newTxn(customer.id)))));
    const seen = await walk(`/v1/transactions?customer_id=${customer.id}`, 100);
    assert.equal(seen.length, 2_600);
    assert.ok(descending(seen));
    assert.deepEqual(new Set(seen), new Set(ids));
  });
});

describe('lists after a crash', () => {
  it('kill -9 right after the writes, restart → the lists and the statement show every acknowledged row (derived again from the log)', async () => {
    const dataDir = server.dataDir;
    const customer = await newCustomer();
    const txns = [await newTxn(customer.id), await newTxn(customer.id)];
    const funded = await fund(customer.id, 10_000);
    const entriesBefore = (await page(`/v1/wallets/${customer.walletId}/entries`)).data;
    await server.kill();
    server = await startServer({ keys: [`${KEY}@acme`, `${KEY_OTHER}@globex`, `${KEY_CLOCK}@initech`], dataDir });
    api = client(server.baseUrl, KEY);
    const listed = await walk(`/v1/transactions?customer_id=${customer.id}`, 100);
    assert.deepEqual(new Set(listed), new Set([...txns, funded.txnId]));
    assert.ok((await walk('/v1/customers', 100)).includes(customer.id));
    assert.deepEqual((await page(`/v1/wallets/${customer.walletId}/entries`)).data, entriesBefore);
  });
});

describe('lists after a restore', () => {
  it('kobo snapshot, kobo restore into a new data dir, start → customers, transactions and payments are listed (the index is rebuilt once at start)', async () => {
    const customer = await newCustomer();
    const txn = await newTxn(customer.id);
    const funded = await fund(customer.id, 10_000);
    const file = path.join(tempDataDir('list-backup'), 'b.kobo');
    const snap = kobo(server.dataDir, 'snapshot', '--out', file);
    assert.equal(snap.status, 0, snap.stderr);
    const restoredDir = path.join(tempDataDir('list-restored'), 'data');
    const restore = kobo(restoredDir, 'restore', file);
    assert.equal(restore.status, 0, restore.stderr + restore.stdout);
    const restored = await startServer({ keys: [`${KEY}@acme`], dataDir: restoredDir });
    try {
      const r = client(restored.baseUrl, KEY);
      assert.deepEqual(new Set(await walk(`/v1/transactions?customer_id=${customer.id}`, 100, r)), new Set([txn, funded.txnId]));
      assert.deepEqual(await walk(`/v1/payments?customer_id=${customer.id}&status=completed`, 100, r), [funded.paymentId]);
      assert.ok((await walk('/v1/customers', 100, r)).includes(customer.id));
    } finally {
      await restored.stop();
    }
  });
});

describe('lists in the OpenAPI document', () => {
  it('GET /v1/openapi.json: each list, the event and the statement routes → operationId, tag, description, an example and the page schema', async () => {
    const doc = (await api('GET', '/v1/openapi.json', { key: null })).body as { paths: Record<string, Record<string, any>> };
    const lists = ['/v1/customers', '/v1/transactions', '/v1/payments', '/v1/transfers', '/v1/services/orders', '/v1/beneficiaries', '/v1/events', '/v1/wallets/{id}/entries'];
    const ids = new Set<string>();
    for (const path of [...lists, '/v1/events/{id}']) {
      const op = doc.paths[path]?.get;
      assert.ok(op !== undefined, `${path} is documented`);
      assert.equal(typeof op.operationId, 'string', path);
      ids.add(op.operationId);
      assert.ok(op.tags.length === 1 && op.description.length > 0, path);
      const ok = op.responses['200'].content['application/json'];
      assert.ok(ok.example !== undefined, `${path} has an example`);
      if (lists.includes(path)) {
        assert.deepEqual(ok.schema.required, ['data', 'has_more'], path);
        assert.equal(ok.schema.properties.data.type, 'array', path);
        assert.ok(op.parameters.some((p: { name: string }) => p.name === 'starting_after'), path);
      }
    }
    assert.equal(ids.size, 9, 'operationIds are distinct');
    assert.deepEqual(doc.paths['/v1/events']!.get.tags, ['Events']);
  });
});

describe('lists once their rows are written (a restart)', () => {
  it('GET /v1/payments?customer_id=: settled and pending payments interleaved → after a restart (rows in the index, merged status by status) the same pages, newest first, in both directions', { timeout: 60_000 }, async () => {
    const key = secretKey();
    let own = await startServer({ keys: [`${key}@umbrella`] });
    try {
      let a = client(own.baseUrl, key);
      const customer = await newCustomer(a);
      const other = await newCustomer(a);
      const ids: string[] = [];
      for (let i = 0; i < 7; i += 1) {
        // Statuses alternate, so every page crosses both status ranges of the index.
        if (i % 2 === 0) ids.push((await fund(customer.id, 10_000 + i, a)).paymentId);
        else {
          const pending = await a('POST', '/v1/payments', { idempotencyKey: idem('pay'), body: { customer_id: customer.id, amount_minor: 10_000 + i, currency: 'NGN', method: 'bank_transfer' } });
          assert.equal(pending.status, 201, JSON.stringify(pending.body));
          ids.push(pending.body.data.id);
        }
        await fund(other.id, 15_000, a);
      }
      const q = `/v1/payments?customer_id=${customer.id}&limit=3`;
      const walk = async (): Promise<string[][]> => {
        const first = await page(q, a);
        const second = await page(`${q}&starting_after=${first.data.at(-1)!.id}`, a);
        const third = await page(`${q}&starting_after=${second.data.at(-1)!.id}`, a);
        const back = await page(`${q}&ending_before=${third.data[0]!.id}`, a);
        assert.deepEqual([first.has_more, second.has_more, third.has_more], [true, true, false]);
        return [first, second, third, back].map((p) => p.data.map((row) => `${row.id}:${row.status}`));
      };
      const before = await walk();
      assert.deepEqual(before.slice(0, 3).flat().map((r) => r.split(':')[0]), [...ids].reverse());
      assert.deepEqual(new Set(before.flat().map((r) => r.split(':')[1])), new Set(['completed', 'pending']));
      await own.stop(); // writes every waiting list row into the index
      own = await startServer({ keys: [`${key}@umbrella`], dataDir: own.dataDir });
      a = client(own.baseUrl, key);
      assert.deepEqual(await walk(), before);
    } finally {
      await own.stop();
    }
  });
});

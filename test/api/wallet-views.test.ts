// GET /v1/wallets/{id} answered from the front end's wallet views (wallets changed since start) and from
// the shard (the rest): the same bytes and the same access rules either way, and a view that shows a
// change as soon as the request that made it is answered.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey, startServer, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';
import { until } from '../helpers/wait.ts';
import { ControlStore } from '../../src/store/control-store.ts';
import { WalletViews } from '../../src/api/wallet-views.ts';

const ACCOUNT = 'views';
const main = secretKey();
const other = secretKey();
const live = secretKey('live');
const scoped = secretKey();
const keys = [`${main}@${ACCOUNT}`, `${other}@views_other`, `${live}@${ACCOUNT}`];
/** Short, so a wallet payment's hold is posted while the test watches. */
const env = { KOBO_RAIL_LATENCY_MS: '50' }; // shard mode as the suite runs it: threads here, inline in test:inline

let server: TestServer;
let a: { id: string; walletId: string };
let b: { id: string; walletId: string };

async function createCustomer(name: string): Promise<{ id: string; walletId: string }> {
  const created = await client(server.baseUrl, main)('POST', '/v1/customers', { idempotencyKey: idem('c'), body: { name, email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  return { id: created.body.data.id, walletId: created.body.data.wallets[0].id };
}

/** The raw answer, so two paths can be compared byte for byte. */
async function walletGet(walletId: string, key: string): Promise<{ status: number; text: string }> {
  const response = await fetch(`${server.baseUrl}/v1/wallets/${walletId}`, { headers: { Authorization: `Bearer ${key}` } });
  return { status: response.status, text: await response.text() };
}

/** Wallet reads the front end answered from its views so far (its /metrics counter). */
async function viewReads(): Promise<number> {
  const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('kobo_wallet_view_reads_total '));
  assert.ok(line !== undefined, 'the counter is exported');
  return Number(line.split(' ')[1]);
}

/** Status and error code (or the body) of every way of reading the two wallets. */
async function readings(): Promise<string[]> {
  const cases: Array<[string, string, string]> = [
    ['own', a.walletId, main],
    ['own B', b.walletId, main],
    ['other account', a.walletId, other],
    ['live key, sandbox wallet', a.walletId, live],
    ['customer-scoped key, its own', a.walletId, scoped],
    ['customer-scoped key, another customer', b.walletId, scoped],
  ];
  const out: string[] = [];
  for (const [what, walletId, key] of cases) {
    const r = await walletGet(walletId, key);
    const parsed = JSON.parse(r.text);
    out.push(`${what}: ${r.status} ${r.status === 200 ? r.text : parsed.error.code}`);
  }
  return out;
}

before(async () => {
  server = await startServer({ keys, shards: 1, env });
  a = await createCustomer('Viewed A');
  b = await createCustomer('Viewed B');
  const control = new ControlStore(server.dataDir);
  control.insertKey({ secret: scoped, account: ACCOUNT, customerId: a.id, nowMs: Date.now() });
  control.close();
});

after(async () => {
  await server?.stop();
});

describe('wallet views', () => {
  it('GET right after each change shows it: settle credits, a wallet payment holds at 201, its posting follows', async () => {
    const api = client(server.baseUrl, main);
    const funding = await api('POST', '/v1/payments', { idempotencyKey: idem('f'), body: { customer_id: a.id, amount_minor: 500_000, currency: 'NGN', method: 'bank_transfer' } });
    assert.equal(funding.status, 201, JSON.stringify(funding.body));
    assert.equal((await api('POST', `/v1/test_helpers/payments/${funding.body.data.id}/settle`)).status, 200);
    const funded = JSON.parse((await walletGet(a.walletId, main)).text).data;
    assert.equal(funded.balance_minor, 500_000 - funding.body.data.fee_minor);
    assert.equal(funded.available_minor, funded.balance_minor);

    for (let i = 1; i <= 5; i += 1) {
      const paid = await api('POST', '/v1/payments', { idempotencyKey: idem('w'), body: { customer_id: a.id, amount_minor: 1_000, currency: 'NGN', method: 'wallet' } });
      assert.equal(paid.status, 201, JSON.stringify(paid.body));
      const now = JSON.parse((await walletGet(a.walletId, main)).text).data;
      // Held or already posted, the money is no longer available the moment the 201 is read.
      assert.ok(now.available_minor <= funded.available_minor - i * 1_000, `after payment ${i}: ${JSON.stringify(now)}`);
    }
    const settled = await until(
      async () => JSON.parse((await walletGet(a.walletId, main)).text).data,
      (w: { held_minor: number; balance_minor: number; available_minor: number }) => w.held_minor === 0,
      'every hold posted',
      10_000,
    );
    assert.equal(settled.balance_minor, funded.balance_minor - 5_000);
    assert.equal(settled.available_minor, settled.balance_minor);
  });

  it('views and the shard give the same bytes and the same refusals (before and after a restart)', async () => {
    const hitsBefore = await viewReads();
    const before = await readings();
    assert.equal(await viewReads(), hitsBefore + 6, 'all six reads answered from views (both wallets changed since start)');
    assert.deepEqual(before.map((line) => line.replace(/ \{.*$/, '')), [
      'own: 200',
      'own B: 200',
      'other account: 403 FORBIDDEN',
      'live key, sandbox wallet: 404 NOT_FOUND',
      'customer-scoped key, its own: 200',
      'customer-scoped key, another customer: 403 FORBIDDEN',
    ]);
    // After a restart the front end holds no views: every read goes to the shard.
    await server.stop();
    server = await startServer({ keys, shards: 1, dataDir: server.dataDir, env });
    assert.deepEqual(await readings(), before);
    assert.equal(await viewReads(), 0, 'after a restart every read went to the shard');
    // A change after the restart is a view again, and still the shard's bytes for it.
    const api = client(server.baseUrl, main);
    const funding = await api('POST', '/v1/payments', { idempotencyKey: idem('f'), body: { customer_id: b.id, amount_minor: 20_000, currency: 'NGN', method: 'bank_transfer' } });
    assert.equal((await api('POST', `/v1/test_helpers/payments/${funding.body.data.id}/settle`)).status, 200);
    const viewed = await walletGet(b.walletId, main);
    assert.equal(JSON.parse(viewed.text).data.balance_minor, 20_000 - funding.body.data.fee_minor);
    assert.equal(await viewReads(), 1, 'the changed wallet is read from its view');
    await server.stop();
    server = await startServer({ keys, shards: 1, dataDir: server.dataDir, env });
    assert.equal((await walletGet(b.walletId, main)).text, viewed.text);
  });
});

describe('WalletViews', () => {
  const update = (id: string, n: number) => ({ id, owner: 'test:x', customerId: 'c', json: `{"n":${n}}` });

  it('holds at most viewsMax; a wallet changed since the last eviction pass stays, the oldest unchanged one goes; a later change replaces the view', () => {
    const views = new WalletViews(3);
    views.update([update('w1', 1), update('w2', 1), update('w3', 1)]);
    views.update([update('w1', 2)]); // w1 changed: a second chance
    views.update([update('w4', 1)]);
    assert.equal(views.size, 3);
    assert.equal(views.get('w2'), undefined, 'w2: the oldest not changed since it came');
    assert.equal(views.get('w1')?.update.json, '{"n":2}');
    assert.ok(views.get('w3') !== undefined && views.get('w4') !== undefined);
  });

  it('when every view changed since the last pass, the marks are cleared and the oldest goes', () => {
    const views = new WalletViews(3);
    views.update([update('w1', 1), update('w2', 1), update('w3', 1)]);
    views.update([update('w1', 2), update('w2', 2), update('w3', 2)]);
    views.update([update('w4', 1)]);
    assert.deepEqual(['w1', 'w2', 'w3', 'w4'].map((id) => views.get(id)?.update.json), [undefined, '{"n":2}', '{"n":2}', '{"n":1}']);
    // The marks are gone: the next newcomer evicts w2, then w3, in that order.
    views.update([update('w5', 1)]);
    assert.equal(views.get('w2'), undefined);
    assert.equal(views.get('w3')?.update.json, '{"n":2}');
  });

  it('a wallet that keeps changing survives a stream of new ones; the bound holds and the newest view is served', () => {
    const views = new WalletViews(50);
    for (let i = 0; i < 5_000; i += 1) {
      views.update([update('hot', i), update(`cold${i}`, i)]);
      assert.ok(views.size <= 50);
      assert.equal(views.get('hot')?.update.json, `{"n":${i}}`);
      assert.equal(views.get(`cold${i}`)?.update.json, `{"n":${i}}`);
    }
  });

  it('a read answers the view encoded, encoded again after a change and reused until then', () => {
    const views = new WalletViews(3);
    views.update([update('w1', 1)]);
    const first = views.get('w1')!;
    assert.equal(first.bytes.toString('utf8'), '{"n":1}');
    assert.equal(views.get('w1')!.bytes, first.bytes, 'an unchanged view is not encoded again');
    views.update([{ ...update('w1', 2), json: '{"n":2,"name":"Adaeze Ọkọ"}' }]);
    const second = views.get('w1')!;
    assert.notEqual(second.bytes, first.bytes);
    assert.equal(second.bytes.toString('utf8'), '{"n":2,"name":"Adaeze Ọkọ"}');
    assert.equal(second.bytes.length, Buffer.byteLength(second.update.json), 'multi-byte text: the bytes, not the characters');
  });

  it('refuses a bound below one view', () => {
    assert.throws(() => new WalletViews(0), RangeError);
  });
});

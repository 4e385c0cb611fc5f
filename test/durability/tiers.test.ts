// Hot and cold state over real processes and files: a finished entity leaves the heap for the cold
// table, reads give the same body after passivation, restart, snapshot and WAL truncation, and a kill -9
// while snapshots and truncation run loses nothing acknowledged.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import Database from 'better-sqlite3';
import { derivedFileOf } from '../../src/store/derived-file.ts';
import { client, idem, secretKey, startServer, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';
import { kobo } from '../helpers/cli.ts';
import { logRecords } from '../helpers/log.ts';
import { until } from '../helpers/wait.ts';

const key = secretKey();
const keys = [`${key}@tiers`];
/** Snapshots after every few records, truncation keeping nothing extra: both run constantly. */
const churn = { KOBO_SNAPSHOT_EVERY_RECORDS: '6', KOBO_SNAPSHOT_INTERVAL_MS: '0', KOBO_WAL_RETAIN_RECORDS: '0', KOBO_WAL_SEGMENT_RECORDS: '4' };

interface Db {
  cold: number;
  walMin: number | null;
  snapshots: number;
}

function inspect(dataDir: string): Db {
  const out: Db = { cold: 0, walMin: null, snapshots: 0 };
  for (const name of ['shard-0.db', 'shard-1.db']) {
    const db = new Database(path.join(dataDir, name), { readonly: true });
    const rows = new Database(derivedFileOf(path.join(dataDir, name)), { readonly: true });
    out.cold += (rows.prepare('SELECT count(*) AS n FROM cold').get() as { n: number }).n;
    rows.close();
    const min = logRecords(path.join(dataDir, name))[0]?.lsn ?? null;
    if (min !== null) out.walMin = Math.max(out.walMin ?? 0, min);
    out.snapshots += (db.prepare('SELECT count(*) AS n FROM snapshots').get() as { n: number }).n;
    db.close();
  }
  return out;
}

/** The log record events that create `id`, across the shard files. */
function creationEvents(dataDir: string, id: string): unknown[] {
  return ['shard-0.db', 'shard-1.db'].flatMap((name) => {
    const bodies = logRecords(path.join(dataDir, name)).map((r) => r.body).filter((body) => body.includes('created') && body.includes(id));
    return bodies.flatMap((body) => (JSON.parse(body) as Array<{ t: string; cold?: string; payment?: { id: string }; txn?: { id: string } }>)
      .filter((e) => (e.t.endsWith('.created') || e.t === 'payment.opened') && (e.cold === id || e.payment?.id === id || e.txn?.id === id)));
  });
}

function coldHas(dataDir: string, id: string): boolean {
  return ['shard-0.db', 'shard-1.db'].some((name) => {
    const db = new Database(derivedFileOf(path.join(dataDir, name)), { readonly: true });
    const row = db.prepare('SELECT 1 FROM cold WHERE id = ?').get(id);
    db.close();
    return row !== undefined;
  });
}

function walRecordsNaming(dataDir: string, id: string): number {
  let n = 0;
  for (const name of ['shard-0.db', 'shard-1.db']) n += logRecords(path.join(dataDir, name)).filter((r) => r.body.includes(id)).length;
  return n;
}

async function fund(server: TestServer, customerId: string, amountMinor = 5_000_000): Promise<void> {
  const api = client(server.baseUrl, key);
  const p = await api('POST', '/v1/payments', { idempotencyKey: idem('fund'), body: { customer_id: customerId, amount_minor: amountMinor, currency: 'NGN', method: 'bank_transfer' } });
  assert.equal(p.status, 201);
  assert.equal((await api('POST', `/v1/test_helpers/payments/${p.body.data.id}/settle`)).status, 200);
}

/** A customer with one settled funding; `balance` is what its wallet showed once that was acknowledged. */
async function fundedCustomer(server: TestServer): Promise<{ id: string; walletId: string; balance: number }> {
  const api = client(server.baseUrl, key);
  const c = await api('POST', '/v1/customers', { idempotencyKey: idem('c'), body: { name: 'Tier Test', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
  assert.equal(c.status, 201);
  await fund(server, c.body.data.id);
  const walletId: string = c.body.data.wallets[0].id;
  const wallet = await api('GET', `/v1/wallets/${walletId}`);
  assert.ok(wallet.body.data.balance_minor > 0);
  return { id: c.body.data.id, walletId, balance: wallet.body.data.balance_minor };
}

test('finished payment: read after passivation, snapshot + truncation and restart → same body; key replays', { timeout: 120_000 }, async () => {
  let server = await startServer({ keys, env: churn });
  try {
    const api = client(server.baseUrl, key);
    const customer = await fundedCustomer(server);
    const payKey = idem('pay');
    const payBody = { customer_id: customer.id, amount_minor: 12_345, currency: 'NGN', method: 'wallet' };
    const created = await api('POST', '/v1/payments', { idempotencyKey: payKey, body: payBody });
    assert.equal(created.status, 201);
    const paymentId: string = created.body.data.id;
    const txnId: string = created.body.data.transaction_id;
    await until(async () => (await api('GET', `/v1/payments/${paymentId}`)).body.data.status, (s) => s === 'completed', 'the wallet payment to settle', 10_000);
    const payment = (await api('GET', `/v1/payments/${paymentId}`)).body;
    const txn = (await api('GET', `/v1/transactions/${txnId}`)).body;
    assert.equal(txn.data.status, 'completed');
    assert.ok(coldHas(server.dataDir, paymentId), 'the completed payment has a cold row');
    assert.ok(coldHas(server.dataDir, txnId), 'the completed transaction has a cold row');

    // Writes to the same partition for several snapshot rounds, so the WAL records of the payment go.
    // (Bounded: snapshot rounds are asynchronous, so keep writing until a second image covers it.)
    // tier_3 and small top-ups: however many rounds it takes, the daily tier limit is never the reason.
    assert.equal((await api('PATCH', `/v1/customers/${customer.id}`, { body: { tier: 'tier_3' } })).status, 200);
    for (let i = 0; i < 40 && walRecordsNaming(server.dataDir, paymentId) > 0; i += 1) await fund(server, customer.id, 20_000);
    await until(async () => walRecordsNaming(server.dataDir, paymentId), (n) => n === 0, 'the payment\'s WAL records to be truncated', 10_000);
    const balance: number = (await api('GET', `/v1/wallets/${customer.walletId}`)).body.data.balance_minor;
    assert.deepEqual((await api('GET', `/v1/payments/${paymentId}`)).body, payment, 'same body from the cold table');

    await server.kill();
    server = await startServer({ keys, dataDir: server.dataDir, env: churn });
    const again = client(server.baseUrl, key);
    assert.deepEqual((await again('GET', `/v1/payments/${paymentId}`)).body, payment, 'same body after restart');
    assert.deepEqual((await again('GET', `/v1/transactions/${txnId}`)).body, txn);
    const replay = await again('POST', '/v1/payments', { idempotencyKey: payKey, body: payBody });
    assert.equal(replay.status, 201);
    assert.deepEqual(replay.body, created.body, 'the key replays the original response byte for byte');
    const conflicting = await again('POST', '/v1/payments', { idempotencyKey: payKey, body: { ...payBody, amount_minor: 1 } });
    assert.equal(conflicting.status, 409);
    assert.equal(conflicting.body.error.code, 'IDEMPOTENCY_REPLAY');
    const wallet = (await again('GET', `/v1/wallets/${customer.walletId}`)).body.data;
    assert.equal(wallet.balance_minor, balance, 'debited once, funded again, nothing lost');
  } finally {
    await server.stop();
  }
  const verify = kobo(server.dataDir, 'verify');
  assert.equal(verify.status, 0, verify.stdout + verify.stderr);
  assert.match(verify.stdout, /snapshots proved by oldest snapshot/);
});

test('kill -9 while snapshots and WAL truncation run constantly → nothing acknowledged lost, verify clean', { timeout: 180_000 }, async () => {
  let server = await startServer({ keys, env: churn });
  const acknowledged: Array<{ id: string; walletId: string; balance: number }> = [];
  try {
    for (let round = 0; round < 3; round += 1) {
      const started = Date.now();
      // Concurrent writers for a bounded time, then kill -9 with requests still in flight.
      const writers = Array.from({ length: 4 }, async () => {
        while (Date.now() - started < 1_500) {
          try {
            acknowledged.push(await fundedCustomer(server));
          } catch {
            return; // the kill cut this request: not acknowledged
          }
        }
      });
      await new Promise((resolve) => setTimeout(resolve, 1_200 + round * 100));
      await server.kill();
      await Promise.all(writers);
      server = await startServer({ keys, dataDir: server.dataDir, env: churn });
    }
    const api = client(server.baseUrl, key);
    assert.ok(acknowledged.length >= 6, `enough acknowledged writes (${acknowledged.length})`);
    for (const customer of acknowledged) {
      const wallet = await api('GET', `/v1/wallets/${customer.walletId}`);
      assert.equal(wallet.status, 200);
      assert.equal(wallet.body.data.balance_minor, customer.balance, `wallet ${customer.walletId} kept its settled funding`);
    }
    const seen = inspect(server.dataDir);
    assert.ok(seen.snapshots > 0 && seen.cold > 0 && (seen.walMin ?? 0) > 1, `snapshots, cold rows and truncation all happened: ${JSON.stringify(seen)}`);
  } finally {
    await server.stop();
  }
  const verify = kobo(server.dataDir, 'verify');
  assert.equal(verify.status, 0, verify.stdout + verify.stderr);
});

test('expired exchange quote: swept out of the heap to the cold table, POST /v1/exchange still → 409 CONFLICT', { timeout: 60_000 }, async () => {
  // Derived rows (here the quote's cold row) are written before each image: images every 200 ms.
  const server = await startServer({ keys, env: { KOBO_QUOTE_SWEEP_MS: '50', KOBO_SNAPSHOT_INTERVAL_MS: '200' } });
  try {
    const api = client(server.baseUrl, key);
    const customer = await fundedCustomer(server);
    const quote = await api('POST', '/v1/exchange/quotes', { body: { customer_id: customer.id, from_currency: 'NGN', to_currency: 'USD', from_amount_minor: 100_000 } });
    assert.equal(quote.status, 201, JSON.stringify(quote.body));
    const quoteId: string = quote.body.data.id ?? quote.body.data.quote_id;
    assert.equal((await api('POST', '/v1/test_helpers/clock/advance', { body: { seconds: 600 } })).status, 200);
    await until(async () => coldHas(server.dataDir, quoteId), (found) => found, 'the expired quote to leave the heap', 10_000);
    const executed = await api('POST', '/v1/exchange', { idempotencyKey: idem('fx'), body: { quote_id: quoteId } });
    assert.equal(executed.status, 409, JSON.stringify(executed.body));
    assert.equal(executed.body.error.code, 'CONFLICT');
  } finally {
    await server.stop();
  }
});

/** Images every 200 ms: the derived rows a batch implies are written before each (log v2). */
const derivedSoon = { KOBO_SNAPSHOT_INTERVAL_MS: '200' };

test('a bare transaction (POST /v1/transactions) → cold from creation; GET the same body; cancel brings it back and fails it; the same after restart', async () => {
  let server = await startServer({ keys, env: derivedSoon });
  try {
    const api = client(server.baseUrl, key);
    const customer = await fundedCustomer(server);
    const created = await api('POST', '/v1/transactions', { idempotencyKey: idem('bare'), body: { type: 'transfer', customer_id: customer.id, amount_minor: 700, currency: 'NGN' } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const id: string = created.body.data.id;
    assert.equal(created.body.data.status, 'pending');
    await until(async () => coldHas(server.dataDir, id), (found) => found, 'the pending bare transaction to be written cold (finished at creation)', 10_000);
    assert.deepEqual((await api('GET', `/v1/transactions/${id}`)).body, created.body, 'same body from the cold table');
    const cancelled = await api('POST', `/v1/transactions/${id}/cancel`);
    assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body));
    assert.equal(cancelled.body.data.status, 'failed');
    assert.equal(cancelled.body.data.failure.code, 'CANCELLED');
    await server.kill();
    server = await startServer({ keys, dataDir: server.dataDir });
    const again = client(server.baseUrl, key);
    assert.deepEqual((await again('GET', `/v1/transactions/${id}`)).body, cancelled.body, 'the cancelled version after a restart');
    assert.equal((await again('POST', `/v1/transactions/${id}/cancel`)).status, 409, 'cancelled once');
  } finally {
    await server.stop();
  }
});

test('a sandbox collection waiting for its payer → cold from creation (payment and transaction); settling it brings it back, credits the wallet once; after restart the same', async () => {
  let server = await startServer({ keys, env: derivedSoon });
  try {
    const api = client(server.baseUrl, key);
    const customer = await fundedCustomer(server);
    const created = await api('POST', '/v1/payments', { idempotencyKey: idem('wait'), body: { customer_id: customer.id, amount_minor: 40_000, currency: 'NGN', method: 'bank_transfer' } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const { id, transaction_id: txnId } = created.body.data as { id: string; transaction_id: string };
    const opened = creationEvents(server.dataDir, id) as Array<{ t: string; payment: { transactionId: string } }>;
    assert.deepEqual(opened.map((e) => e.t), ['payment.opened'], 'its log record carries it whole');
    assert.equal(opened[0]!.payment.transactionId, txnId, 'and names the transaction derived from it');
    assert.deepEqual(creationEvents(server.dataDir, txnId), [], 'the transaction is not carried a second time');
    await until(async () => coldHas(server.dataDir, id) && coldHas(server.dataDir, txnId), (found) => found, 'the waiting payment and its transaction to be written cold', 10_000);
    assert.deepEqual((await api('GET', `/v1/payments/${id}`)).body, created.body, 'same body from the cold table');
    const settled = await api('POST', `/v1/test_helpers/payments/${id}/settle`);
    assert.equal(settled.status, 200, JSON.stringify(settled.body));
    assert.equal(settled.body.data.status, 'completed');
    const balance: number = (await api('GET', `/v1/wallets/${customer.walletId}`)).body.data.balance_minor;
    assert.equal(balance, customer.balance + 40_000 - settled.body.data.fee_minor, 'credited once, less its fee');
    await server.kill();
    server = await startServer({ keys, dataDir: server.dataDir });
    const again = client(server.baseUrl, key);
    assert.deepEqual((await again('GET', `/v1/payments/${id}`)).body, settled.body);
    assert.equal((await again('GET', `/v1/wallets/${customer.walletId}`)).body.data.balance_minor, balance);
    assert.equal((await again('POST', `/v1/test_helpers/payments/${id}/settle`)).status, 409, 'settled once');
  } finally {
    await server.stop();
  }
  // A full replay (no image) reads the named rows back: verify's state equals the server's.
  const verify = kobo(server.dataDir, 'verify');
  assert.equal(verify.status, 0, verify.stdout + verify.stderr);
});

test('a payment recorded as payment.opened, killed before its rows were written → recovery writes its transaction as a pointer into the record, read back the same', async () => {
  // No periodic image: the waiting rows stay in memory until the kill, so recovery derives them again.
  let server = await startServer({ keys, env: { KOBO_SNAPSHOT_INTERVAL_MS: '0' } });
  try {
    const api = client(server.baseUrl, key);
    const customer = await fundedCustomer(server);
    const created = await api('POST', '/v1/payments', { idempotencyKey: idem('opened'), body: { customer_id: customer.id, amount_minor: 25_000, currency: 'NGN', method: 'bank_transfer' } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const txnId = created.body.data.transaction_id as string;
    const before = await api('GET', `/v1/transactions/${txnId}`);
    assert.equal(before.status, 200);
    assert.equal(coldHas(server.dataDir, txnId), false, 'its row still waits in memory');
    await server.kill();
    server = await startServer({ keys, dataDir: server.dataDir, env: { KOBO_SNAPSHOT_INTERVAL_MS: '0' } });
    await server.stop(); // the stop writes what recovery derived
    const bodies = ['shard-0.db', 'shard-1.db'].flatMap((name) => {
      const db = new Database(derivedFileOf(path.join(server.dataDir, name)), { readonly: true });
      const rows = db.prepare('SELECT body FROM cold WHERE id = ?').pluck().all(txnId) as Array<string | Buffer>;
      db.close();
      return rows;
    });
    assert.deepEqual(bodies.map((b) => b.length), [0], 'one row, empty: the transaction is derived from the record, not copied');
    server = await startServer({ keys, dataDir: server.dataDir });
    assert.deepEqual((await client(server.baseUrl, key)('GET', `/v1/transactions/${txnId}`)).body, before.body);
  } finally {
    await server.stop();
  }
});

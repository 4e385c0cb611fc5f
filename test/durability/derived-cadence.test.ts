// When a shard writes the rows it derives from its log (issue #22): cold rows, idempotency records and
// expiry rows go into the derived file a chunk a turn as their records become durable, with the list rows,
// and commit with them every DERIVED_TX_ROWS_MAX rows, rather than all waiting for the next partition image.
// Checked on the derived file itself while the server runs with images off, then across a kill -9: every
// payment still reads and replays the same.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import Database from 'better-sqlite3';
import { DERIVED_TX_ROWS_MAX, derivedFileOf } from '../../src/store/derived-file.ts';
import { client, idem, secretKey, startServer, tempDataDir, uniqueEmail, uniquePhone } from '../helpers/server.ts';

const key = secretKey();
/** One shard, inline, no images: only the bounds on waiting rows can make the shard write them. */
const env = { KOBO_SNAPSHOT_EVERY_RECORDS: '0', KOBO_SNAPSHOT_INTERVAL_MS: '0', KOBO_SHARD_MODE: 'inline' };
/**
 * A pending bank transfer derives at least four rows (two cold pointers, an idempotency record, an expiry)
 * besides its list rows: at most DERIVED_TX_ROWS_MAX / 4 payments' rows wait uncommitted.
 */
const ROWS_A_PAYMENT_MIN = 4;
const PAYMENTS = Math.ceil((2 * DERIVED_TX_ROWS_MAX) / ROWS_A_PAYMENT_MIN);
/** Payments go to one customer in CUSTOMERS by turn: each stays below its daily limit (50,000,000 NGN). */
const CUSTOMERS = 3;
const IN_FLIGHT = 16;

function count(dataDir: string, table: string): number {
  // A second connection: it sees what the derived file has committed, not its open transaction.
  const db = new Database(derivedFileOf(path.join(dataDir, 'shard-0.db')), { readonly: true });
  try {
    return (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
  } finally {
    db.close();
  }
}

test('derived rows: twice a transaction\'s rows of payments with no images → their idempotency and expiry rows are committed in the derived file, and survive kill -9', { timeout: 120_000 }, async () => {
  const dataDir = tempDataDir('kobo-cadence');
  let server = await startServer({ keys: [`${key}@cadence`], dataDir, shards: 1, env });
  try {
    const api = client(server.baseUrl, key);
    const customers: string[] = [];
    for (let i = 0; i < CUSTOMERS; i += 1) {
      const customer = await api('POST', '/v1/customers', { body: { name: 'Cadence', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' }, idempotencyKey: idem('c') });
      assert.equal(customer.status, 201);
      customers.push(customer.body.data.id as string);
    }
    const sent: Array<{ key: string; id: string; text: string; body: string }> = [];
    let next = 0;
    await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
      while (next < PAYMENTS) {
        next += 1;
        const idemKey = idem('p');
        const body = JSON.stringify({ customer_id: customers[next % CUSTOMERS], amount_minor: 10_000, currency: 'NGN', method: 'bank_transfer' });
        const response = await fetch(`${server.baseUrl}/v1/payments`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': idemKey }, body });
        const text = await response.text();
        assert.equal(response.status, 201, text);
        sent.push({ key: idemKey, id: (JSON.parse(text) as { data: { id: string } }).data.id, text, body });
      }
    }));
    assert.equal(sent.length, PAYMENTS);
    // At most DERIVED_TX_ROWS_MAX rows wait in the open transaction (and a few batches' in memory), taken
    // oldest first across their tables, so the rows of all but the last DERIVED_TX_ROWS_MAX / 4 payments
    // (and a margin for those in memory) are committed (before #22 none were until an image or a bound).
    const writtenMin = PAYMENTS - DERIVED_TX_ROWS_MAX / ROWS_A_PAYMENT_MIN - 200;
    const idemRows = count(dataDir, 'idem_log');
    const dueRows = count(dataDir, 'due');
    assert.ok(idemRows >= writtenMin, `idempotency rows in the file: ${idemRows}, expected at least ${writtenMin} of ${PAYMENTS}`);
    assert.ok(dueRows >= writtenMin, `expiry rows in the file: ${dueRows}, expected at least ${writtenMin} of ${PAYMENTS}`);

    await server.kill();
    server = await startServer({ keys: [`${key}@cadence`], dataDir, shards: 1, env });
    const after = client(server.baseUrl, key);
    for (const payment of [sent[0]!, sent[Math.floor(PAYMENTS / 2)]!, sent[PAYMENTS - 1]!]) {
      const read = await after('GET', `/v1/payments/${payment.id}`);
      assert.equal(read.status, 200);
      assert.equal(read.body.data.status, 'pending');
      const replay = await fetch(`${server.baseUrl}/v1/payments`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': payment.key },
        body: payment.body,
      });
      assert.equal(replay.status, 201);
      assert.equal(await replay.text(), payment.text, 'an idempotent replay after the restart answers the same bytes');
    }
  } finally {
    await server.kill();
  }
});

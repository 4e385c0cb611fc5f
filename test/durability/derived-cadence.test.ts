// When a shard writes the rows it derives from its log (issue #22): cold rows, idempotency records and
// expiry rows are written a slice at a time as they pass their bound, like the list index's rows, rather
// than all waiting for the next partition image. Checked on the shard file itself while the server runs
// with images off, then across a kill -9: every payment still reads and replays the same.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import Database from 'better-sqlite3';
import { ROWS_PENDING_MAX } from '../../src/store/derived-rows.ts';
import { client, idem, secretKey, startServer, tempDataDir, uniqueEmail, uniquePhone } from '../helpers/server.ts';

const key = secretKey();
/** One shard, inline, no images: only the bounds on waiting rows can make the shard write them. */
const env = { KOBO_SNAPSHOT_EVERY_RECORDS: '0', KOBO_SNAPSHOT_INTERVAL_MS: '0', KOBO_SHARD_MODE: 'inline' };
/** A pending bank transfer derives four such rows: two cold pointers, an idempotency record, an expiry. */
const ROWS_A_PAYMENT = 4;
const PAYMENTS = Math.ceil((2 * ROWS_PENDING_MAX) / ROWS_A_PAYMENT);
const IN_FLIGHT = 16;

function count(dataDir: string, table: string): number {
  const db = new Database(path.join(dataDir, 'shard-0.db'), { readonly: true });
  try {
    return (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
  } finally {
    db.close();
  }
}

test('derived rows: twice the waiting bound of payments with no images → their idempotency and expiry rows are in the file, and survive kill -9', async () => {
  const dataDir = tempDataDir('kobo-cadence');
  let server = await startServer({ keys: [`${key}@cadence`], dataDir, shards: 1, env });
  try {
    const api = client(server.baseUrl, key);
    const customer = await api('POST', '/v1/customers', { body: { name: 'Cadence', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' }, idempotencyKey: idem('c') });
    assert.equal(customer.status, 201);
    const sent: Array<{ key: string; id: string; text: string }> = [];
    let next = 0;
    await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
      while (next < PAYMENTS) {
        next += 1;
        const idemKey = idem('p');
        const body = JSON.stringify({ customer_id: customer.body.data.id, amount_minor: 10_000, currency: 'NGN', method: 'bank_transfer' });
        const response = await fetch(`${server.baseUrl}/v1/payments`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': idemKey }, body });
        const text = await response.text();
        assert.equal(response.status, 201, text);
        sent.push({ key: idemKey, id: (JSON.parse(text) as { data: { id: string } }).data.id, text });
      }
    }));
    assert.equal(sent.length, PAYMENTS);
    // At most ROWS_PENDING_MAX of those rows wait in memory, taken oldest first across their tables, so
    // the records of all but the last ROWS_PENDING_MAX / ROWS_A_PAYMENT payments are in the file (before
    // this bound, none were until an image, a sweep or 16 MB of waiting rows).
    const writtenMin = PAYMENTS - ROWS_PENDING_MAX / ROWS_A_PAYMENT;
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
        body: JSON.stringify({ customer_id: customer.body.data.id, amount_minor: 10_000, currency: 'NGN', method: 'bank_transfer' }),
      });
      assert.equal(replay.status, 201);
      assert.equal(await replay.text(), payment.text, 'an idempotent replay after the restart answers the same bytes');
    }
  } finally {
    await server.kill();
  }
});

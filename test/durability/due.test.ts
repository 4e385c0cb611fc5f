// The expiry index of waiting sandbox collections lives in the shard file (`due`), not in the heap or
// the snapshot images: images stay the same size however many collections wait, the rows survive a
// kill -9, and a day later the sweep expires exactly the unpaid ones (in slices) and drops every row.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import Database from 'better-sqlite3';
import { derivedFileOf } from '../../src/store/derived-file.ts';
import { client, idem, secretKey, startServer, uniqueEmail, uniquePhone } from '../helpers/server.ts';
import { until } from '../helpers/wait.ts';
import { logRecords } from '../helpers/log.ts';
import fs from 'node:fs';
import { decompressImage } from '../../src/store/snapshot.ts';
import { partitionOfId } from '../../src/ids.ts';

const key = secretKey();
const keys = [`${key}@due`];
/** More than one sweep command may expire (500), so the backlog drains in slices. */
const WAITING = 620;
/** A second customer's, in another partition: together more than one sweep reads (1,000). */
const OTHER_WAITING = 500;
const PAID = 40;
const SHARD_FILES = ['shard-0.db'];

function readDb<T>(dataDir: string, read: (db: Database.Database) => T): T {
  const db = new Database(path.join(dataDir, SHARD_FILES[0]!), { readonly: true });
  try {
    return read(db);
  } finally {
    db.close();
  }
}

/** Expiry rows committed in the shard's derived file (the rows' file beside the log's). */
const dueRows = (dataDir: string): number => {
  const db = new Database(derivedFileOf(path.join(dataDir, SHARD_FILES[0]!)), { readonly: true });
  try {
    return (db.prepare('SELECT count(*) AS n FROM due').get() as { n: number }).n;
  } finally {
    db.close();
  }
};
const walLast = (dataDir: string, partition: number): number =>
  Math.max(0, ...['shard-0.db', 'shard-1.db'].filter((name) => fs.existsSync(path.join(dataDir, name))).flatMap((name) => logRecords(path.join(dataDir, name)).filter((r) => r.partition === partition).map((r) => r.lsn)));

/** The newest image of a partition, once it covers the partition's last record. */
async function imageCovering(dataDir: string, partition: number): Promise<string> {
  const last = walLast(dataDir, partition);
  const row = await until(
    async () => readDb(dataDir, (db) => db.prepare('SELECT lsn, body FROM snapshots WHERE partition = ? ORDER BY lsn DESC LIMIT 1').get(partition) as { lsn: number; body: Buffer } | undefined),
    (r) => r !== undefined && r.lsn >= last,
    `an image of partition ${partition} at LSN ${last}`,
    10_000,
  );
  return decompressImage(row!.body);
}

test(`${WAITING} + ${OTHER_WAITING} waiting collections in two partitions → expiry rows in the shard file, images do not grow; after kill -9 and a day, every unpaid one expires and every row goes`, async () => {
  const env = { KOBO_SNAPSHOT_EVERY_RECORDS: '50', KOBO_SNAPSHOT_INTERVAL_MS: '200', KOBO_COLLECTION_SWEEP_MS: '86400000', KOBO_SHARD_MODE: 'inline' };
  let server = await startServer({ keys, shards: 1, env });
  try {
    let api = client(server.baseUrl, key);
    const created = await api('POST', '/v1/customers', { idempotencyKey: idem('c'), body: { name: 'Waits', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const customerId: string = created.body.data.id;
    const partition = partitionOfId(customerId);
    // The image with one collection waiting (its usage counters exist), before the many.
    const first = await api('POST', '/v1/payments', { idempotencyKey: idem('p'), body: { customer_id: customerId, amount_minor: 10_000, currency: 'NGN', method: 'bank_transfer' } });
    assert.equal(first.status, 201);
    const before = await imageCovering(server.dataDir, partition);

    const ids: string[] = [first.body.data.id];
    for (let i = 1; i < WAITING; i += 20) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(20, WAITING - i) }, () =>
          api('POST', '/v1/payments', { idempotencyKey: idem('p'), body: { customer_id: customerId, amount_minor: 10_000, currency: 'NGN', method: 'bank_transfer' } }),
        ),
      );
      for (const r of batch) {
        assert.equal(r.status, 201, JSON.stringify(r.body));
        ids.push(r.body.data.id);
      }
    }
    const paid = ids.slice(0, PAID);
    for (const id of paid) assert.equal((await api('POST', `/v1/test_helpers/payments/${id}/settle`)).status, 200);
    // Expiry rows are derived from the log after the commit (before each image, every 200 ms here).
    await until(async () => dueRows(server.dataDir), (n) => n === WAITING, 'one row per collection that waited (a paid one keeps its row until a sweep)', 10_000);

    let other = await api('POST', '/v1/customers', { idempotencyKey: idem('c'), body: { name: 'Waits Too', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
    for (let tries = 0; partitionOfId(other.body.data.id) === partition && tries < 20; tries += 1) {
      other = await api('POST', '/v1/customers', { idempotencyKey: idem('c'), body: { name: 'Waits Too', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
    }
    assert.notEqual(partitionOfId(other.body.data.id), partition, 'a customer in another partition');
    for (let i = 0; i < OTHER_WAITING; i += 20) {
      const batch = await Promise.all(
        Array.from({ length: 20 }, () => api('POST', '/v1/payments', { idempotencyKey: idem('p'), body: { customer_id: other.body.data.id, amount_minor: 10_000, currency: 'NGN', method: 'bank_transfer' } })),
      );
      for (const r of batch) {
        assert.equal(r.status, 201, JSON.stringify(r.body));
        ids.push(r.body.data.id);
      }
    }
    await until(async () => dueRows(server.dataDir), (n) => n === WAITING + OTHER_WAITING, 'a row per waiting collection of both customers', 10_000);

    const after = await imageCovering(server.dataDir, partition);
    for (const id of ids.slice(WAITING - 5, WAITING)) assert.ok(!after.includes(id), 'no waiting collection in the image');
    // Less than a byte per collection (balances and counters of the 40 paid ones grow by a few digits);
    // an index in the image took ≈ 45 B each.
    assert.ok(after.length - before.length < WAITING, `the image grew ${after.length - before.length} B for ${WAITING} collections`);

    await server.kill();
    server = await startServer({ keys, shards: 1, dataDir: server.dataDir, env: { ...env, KOBO_COLLECTION_SWEEP_MS: '100' } });
    api = client(server.baseUrl, key);
    assert.equal(dueRows(server.dataDir), WAITING + OTHER_WAITING, 'the rows survive a kill -9');
    assert.equal((await api('POST', '/v1/test_helpers/clock/advance', { body: { seconds: 86_401 } })).status, 200);
    await until(async () => dueRows(server.dataDir), (n) => n === 0, 'every row dropped once its collection is no longer waiting', 15_000);
    const statuses = new Map<string, number>();
    for (const id of ids) {
      const r = await api('GET', `/v1/payments/${id}`);
      const status = r.body.data.status as string;
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      if (status === 'failed') assert.equal((await api('GET', `/v1/transactions/${r.body.data.transaction_id}`)).body.data.failure.code, 'EXPIRED');
    }
    assert.deepEqual(Object.fromEntries(statuses), { completed: PAID, failed: WAITING + OTHER_WAITING - PAID });
  } finally {
    await server.stop();
  }
});

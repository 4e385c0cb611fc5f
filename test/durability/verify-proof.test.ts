// kobo verify proves a truncated shard's images against the oldest kept image and its longer log tail
// whenever any of the shard's partitions keeps two images (it looked at the shard's first partition
// only, which often has none: a shard proved by "none"). Real server, real files.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey, startServer, uniqueEmail, uniquePhone } from '../helpers/server.ts';
import { verifyDataDir } from '../../src/cli/verify.ts';
import { ShardStore } from '../../src/store/shard-store.ts';
import { partitionsOf } from '../../src/shard/layout.ts';
import path from 'node:path';

const key = secretKey();
const churn = { KOBO_SNAPSHOT_EVERY_RECORDS: '6', KOBO_SNAPSHOT_INTERVAL_MS: '0', KOBO_WAL_RETAIN_RECORDS: '0', KOBO_WAL_SEGMENT_RECORDS: '4' };

/** Payments the test may make while waiting for the churn settings to truncate the log. */
const PAYMENTS_MAX = 400;

/** True once the shard's log has been cut below an image (its floor moved), read as verify reads it. */
function truncatedNow(dataDir: string): boolean {
  const store = new ShardStore(path.join(dataDir, 'shard-0.db'), { readonly: true });
  try {
    const floor = store.getMeta('wal_floor');
    return floor !== undefined && floor !== '0:0';
  } finally {
    store.close();
  }
}

test('verify: a truncated shard whose first partition keeps no two images → proved by the oldest snapshot, no violation', { timeout: 90_000 }, async () => {
  const server = await startServer({ keys: [`${key}@proof`], shards: 1, env: churn });
  try {
    const api = client(server.baseUrl, key);
    const customers: string[] = [];
    for (let i = 0; i < 3; i += 1) {
      const made = await api('POST', '/v1/customers', { idempotencyKey: idem('c'), body: { name: `Proof ${i}`, email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
      assert.equal(made.status, 201, JSON.stringify(made.body));
      customers.push(made.body.data.id as string);
    }
    // Images run a partition a turn between requests, so how many records it takes before every segment
    // is covered twice (and truncated) depends on timing: pay until the file shows a truncation, bounded.
    for (let j = 0; j < PAYMENTS_MAX && (j < 24 || !truncatedNow(server.dataDir)); j += 1) {
      const paid = await api('POST', '/v1/payments', { idempotencyKey: idem('p'), body: { customer_id: customers[j % 3], amount_minor: 10_000 + j, currency: 'NGN', method: 'bank_transfer' } });
      assert.equal(paid.status, 201, JSON.stringify(paid.body));
    }
  } finally {
    await server.stop();
  }
  const store = new ShardStore(path.join(server.dataDir, 'shard-0.db'), { readonly: true });
  const partitions = partitionsOf(0, 1);
  const twice = partitions.filter((p) => store.snapshotsOf(p).length > 1);
  store.close();
  assert.ok(truncatedNow(server.dataDir), 'the churn settings truncate the log');
  assert.ok(twice.length > 0, 'some partition keeps two images');
  const report = verifyDataDir(server.dataDir);
  assert.deepEqual(report.violations, []);
  assert.equal(report.ranges[0]!.proof, 'oldest snapshot', `partitions with two images: ${twice.join(', ')}`);
});

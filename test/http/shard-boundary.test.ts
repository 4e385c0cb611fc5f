// The shard boundary cannot be taken down by one command: a command the structured clone refuses
// (as a 3,500-level object once did, with a stack overflow in postMessage) fails alone with a generic
// 500, and the other commands of its batch still run. In-process ShardPool on a temp data dir.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ShardPool } from '../../src/shard/pool.ts';
import { ensureLayout } from '../../src/shard/layout.ts';
import { tempDataDir } from '../helpers/server.ts';
import type { Command } from '../../src/shard/protocol.ts';

test('pool: an unclonable command in a batch → 500 INTERNAL for it alone; the batch runs; the pool lives', { timeout: 60_000 }, async () => {
  const dataDir = tempDataDir('kobo-boundary');
  ensureLayout(dataDir, 1);
  const logged: string[] = [];
  let fatal = '';
  const pool = new ShardPool({
    shards: 1, dataDir, railLatencyMs: 5, batchCommandsMax: 100, shardQueueMax: 100, snapshotIntervalMs: 0,
    idempotencyRetentionMs: 86_400_000, idempotencySweepMs: 3_600_000, onIdempotencyExpired: () => {},
    snapshotEveryRecords: 0, walRetainRecords: 100_000, quoteSweepMs: 60_000, collectionSweepMs: 60_000, clockOffsets: [], onFatal: (m) => (fatal = m), onOutbox: () => {}, log: (m) => logged.push(m),
  });
  await pool.start();
  try {
    const base = { owner: 'test:acct', nowMs: Date.now(), partition: 3, customerScope: null };
    const good = (email: string): Command => ({ ...base, k: 'customer.create', body: { name: 'Ada', email, phone: `+23480${Math.floor(30_000_000 + Math.random() * 9_000_000)}`, countryCode: 'NG', duplicate: null } });
    const poisoned = { ...good('poison@example.com'), body: { ...(good('x@example.com') as Command & { k: 'customer.create' }).body, name: (() => 'x') as unknown as string } } as Command;
    const replies = await Promise.all([pool.send(good('a@example.com')), pool.send(poisoned), pool.send(good('b@example.com'))]);
    assert.deepEqual(replies.map((r) => r.status), [201, 500, 201]);
    assert.equal(replies[1]!.error?.code, 'INTERNAL');
    assert.doesNotMatch(replies[1]!.error?.message ?? '', /clone|function|DataCloneError/i, 'no internal text in the reply');
    assert.ok(logged.some((m) => /could not be sent/.test(m)), 'the detail is logged');
    // The pool still serves.
    assert.equal((await pool.send(good('c@example.com'))).status, 201);
    assert.equal(fatal, '');
  } finally {
    await pool.stop();
  }
});

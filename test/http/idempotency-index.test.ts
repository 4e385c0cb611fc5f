// The front end's idempotency index: hash(scope) → where a record is stored (partition and row). A
// hash shared by another scope (a collision) costs one "miss" round trip and never a wrong replay.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { IdempotencyIndex } from '../../src/http/idempotency.ts';
import { scopeHash } from '../../src/store/scope-hash.ts';
import { packIdemAt } from '../../src/store/tiers.ts';
import type { StoredReply } from '../../src/shard/state.ts';

describe('IdempotencyIndex: packed locations', () => {
  it('a stored result → remembered at (partition, row); the next run replays that row', async () => {
    const index = new IdempotencyIndex();
    const calls: Array<[number, number | null]> = [];
    const first = await index.run('test:acct:k1', 5, async (partition, seq) => {
      calls.push([partition, seq]);
      return { status: 201, json: '{}', seq: 42 };
    });
    assert.equal(first.status, 201);
    await index.run('test:acct:k1', 9, async (partition, seq) => {
      calls.push([partition, seq]);
      return { status: 201, json: '{}' };
    });
    assert.deepEqual(calls, [[5, null], [5, 42]], 'the replay goes to partition 5, row 42, not to the new partition');
  });

  it('another scope with the same hash → the replay there misses, then the request runs afresh where it belongs', async () => {
    const index = new IdempotencyIndex();
    index.restore(scopeHash('test:acct:k2'), packIdemAt(3, -7));
    const calls: Array<[number, number | null]> = [];
    const reply = await index.run('test:acct:k2', 11, async (partition, seq): Promise<StoredReply> => {
      calls.push([partition, seq]);
      return seq !== null ? { status: 500, miss: true, error: { code: 'INTERNAL', message: 'miss' } } : { status: 201, json: '{"data":1}', seq: 99 };
    });
    assert.equal(reply.status, 201);
    assert.deepEqual(calls, [[3, -7], [11, null]]);
    assert.equal(index.size, 2, 'one hash, now with two locations');
    index.forget([[scopeHash('test:acct:k2'), packIdemAt(3, -7)]]);
    const again: Array<[number, number | null]> = [];
    await index.run('test:acct:k2', 11, async (partition, seq) => {
      again.push([partition, seq]);
      return { status: 201, json: '{"data":1}' };
    });
    assert.deepEqual(again, [[11, 99]], 'forgetting one location keeps the other');
  });

  it('a stored result without its row → refused (the index could not find it again)', async () => {
    const index = new IdempotencyIndex();
    await assert.rejects(index.run('test:acct:k3', 1, async () => ({ status: 201, json: '{}' })), /where it was stored/);
  });

  it('a second request with the key while the first is in flight → waits, then replays what the first stored', async () => {
    const index = new IdempotencyIndex();
    const calls: Array<[number, number | null]> = [];
    let finish!: () => void;
    const first = index.run('test:acct:k4', 2, (partition, seq) => {
      calls.push([partition, seq]);
      return new Promise<StoredReply>((resolve) => (finish = () => resolve({ status: 201, json: '{"n":1}', seq: 7 })));
    });
    const second = index.run('test:acct:k4', 2, async (partition, seq) => {
      calls.push([partition, seq]);
      return { status: 201, json: '{"n":1}' };
    });
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(calls, [[2, null]], 'the second has not run while the first is in flight');
    finish();
    await Promise.all([first, second]);
    assert.deepEqual(calls, [[2, null], [2, 7]], 'then it replays the row the first stored');
  });

  it('a run that throws or rejects → the key is released; the next request with it runs', async () => {
    const index = new IdempotencyIndex();
    await assert.rejects(index.run('test:acct:k5', 1, () => { throw new Error('thrown'); }), /thrown/);
    await assert.rejects(index.run('test:acct:k5', 1, async () => { throw new Error('rejected'); }), /rejected/);
    const reply = await index.run('test:acct:k5', 1, async () => ({ status: 201, json: '{}', seq: 3 }));
    assert.equal(reply.status, 201);
  });
});

// Entities born finished: their WAL record names them by id and their body is the cold row written in
// the same transaction. Checked against a real shard file: what the record holds, what a batch writes
// when the entity changes again in the same batch or the same record, and that replay (from an image or
// from the first record) rebuilds exactly the live state; a missing row is corruption, not a guess.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { ShardStore } from '../../src/store/shard-store.ts';
import { CorruptionError, recoverShard, tiersOf } from '../../src/shard/recovery.ts';
import { compressImageSync, snapshotRow } from '../../src/store/snapshot.ts';
import { encodePartition } from '../../src/shard/partition-image.ts';
import { applyEvent, type WalEvent } from '../../src/shard/events.ts';
import { Passivation } from '../../src/shard/passivate.ts';
import { recordEvents, type RecordEvent } from '../../src/shard/born-cold.ts';
import { emptyPartition, type PartitionState, type Transaction } from '../../src/shard/state.ts';
import { tempDataDir } from '../helpers/server.ts';

const PARTITION = 5;

/** Commits several commands' events as one group commit, the way the shard worker's flush does. */
function batchCommitter(store: ShardStore, state: PartitionState) {
  const passivation = new Passivation();
  return (commands: WalEvent[][]): number[] => {
    const records: Array<{ partition: number; body: string }> = [];
    const lsns: number[] = [];
    for (const events of commands) {
      const lsn = store.lsnNext + records.length;
      for (const event of events) applyEvent(state, event);
      records.push({ partition: PARTITION, body: JSON.stringify(recordEvents(state, events, lsn, passivation)) });
      passivation.note(state, lsn);
      lsns.push(lsn);
    }
    store.appendBatch(records, passivation.take());
    passivation.settle();
    return lsns;
  };
}

/** A transaction finished from birth (no hold, nothing to wait for). */
function bareTxn(id: string, atMs: number): Transaction {
  return {
    id, owner: 'test:acme', customerId: 'c1', type: 'payment', status: 'pending', amountMinor: 700, feeMinor: 0, currency: 'NGN',
    reference: null, failure: null, holdId: null, holdStatus: 'none', attempt: 1, paymentId: null, transferId: null,
    history: [{ status: 'pending', atMs, attempt: 1, failureCode: null }], createdAtMs: atMs, updatedAtMs: atMs, bare: true,
  };
}

const completed = (id: string, atMs: number): WalEvent => ({ t: 'txn.moved', id, status: 'completed', atMs, failure: null });

function recordAt(store: ShardStore, lsn: number): RecordEvent[] {
  for (const row of store.walAfter(lsn - 1)) if (row.lsn === lsn) return JSON.parse(row.body) as RecordEvent[];
  throw new Error(`no record ${lsn}`);
}

function coldVersions(store: ShardStore, id: string): Array<{ lsn: number; body: string }> {
  return store.db.prepare('SELECT lsn, body FROM cold WHERE id = ? ORDER BY lsn').all(id) as Array<{ lsn: number; body: string }>;
}

describe('born cold: creations named by id in the WAL', () => {
  it('born finished → the record names it by id, one cold row at its LSN holds the body, the heap holds nothing', () => {
    const store = new ShardStore(path.join(tempDataDir('born-cold'), 'shard-0.db'));
    const state = emptyPartition(PARTITION, tiersOf(store));
    const commit = batchCommitter(store, state);
    const created = bareTxn('B1', 10);
    const [lsn] = commit([[{ t: 'txn.created', txn: created }]]);
    assert.deepEqual(recordAt(store, lsn!), [{ t: 'txn.created', cold: 'B1' }]);
    assert.deepEqual(coldVersions(store, 'B1'), [{ lsn: lsn!, body: JSON.stringify(created) }], 'one row, not a second copy from passivation');
    assert.equal(state.transactions.size, 0);
    assert.deepEqual(state.transactions.get('B1'), created);
    store.close();
  });

  it('changed by a later record of the same batch → the creation row and the final row both written; replay rebuilds the final state', () => {
    const store = new ShardStore(path.join(tempDataDir('born-cold'), 'shard-0.db'));
    const state = emptyPartition(PARTITION, tiersOf(store));
    const commit = batchCommitter(store, state);
    const created = bareTxn('B2', 20);
    const [createdAt, movedAt] = commit([[{ t: 'txn.created', txn: created }], [completed('B2', 21)]]);
    assert.deepEqual(recordAt(store, createdAt!), [{ t: 'txn.created', cold: 'B2' }]);
    const versions = coldVersions(store, 'B2');
    assert.deepEqual(versions.map((v) => v.lsn), [createdAt, movedAt]);
    assert.equal(versions[0]!.body, JSON.stringify(created), 'the row the record names is the entity as created');
    const live = state.transactions.get('B2')!;
    assert.equal(live.status, 'completed');

    const replayed = recoverShard(store, { partitions: [PARTITION], ignoreSnapshots: true, readonly: true }).states.get(PARTITION)!;
    assert.deepEqual(replayed.transactions.get('B2'), live);
    assert.equal(replayed.transactions.get('B2')!.history.length, 2, 'the move applied once, on top of the created state');
    store.close();
  });

  it('created and changed by the same record → the record keeps the whole body (its row would not be the created state)', () => {
    const store = new ShardStore(path.join(tempDataDir('born-cold'), 'shard-0.db'));
    const state = emptyPartition(PARTITION, tiersOf(store));
    const commit = batchCommitter(store, state);
    const created = bareTxn('B3', 30);
    const [lsn] = commit([[{ t: 'txn.created', txn: created }, completed('B3', 31)]]);
    assert.deepEqual(recordAt(store, lsn!), [{ t: 'txn.created', txn: created }, completed('B3', 31)]);
    assert.deepEqual(coldVersions(store, 'B3').map((v) => v.lsn), [lsn]);
    const replayed = recoverShard(store, { partitions: [PARTITION], ignoreSnapshots: true, readonly: true }).states.get(PARTITION)!;
    assert.deepEqual(replayed.transactions.get('B3'), state.transactions.get('B3'));
    store.close();
  });

  it('not finished at birth → the record keeps the body and nothing is written cold', () => {
    const store = new ShardStore(path.join(tempDataDir('born-cold'), 'shard-0.db'));
    const state = emptyPartition(PARTITION, tiersOf(store));
    const commit = batchCommitter(store, state);
    const { bare: _bare, ...held } = bareTxn('H1', 40);
    const [lsn] = commit([[{ t: 'txn.created', txn: held }]]);
    assert.deepEqual(recordAt(store, lsn!), [{ t: 'txn.created', txn: held }]);
    assert.deepEqual(coldVersions(store, 'H1'), []);
    assert.equal(state.transactions.size, 1);
    store.close();
  });

  it('restart after an image taken before the creation → replay reads the named rows; the same state as live', () => {
    const file = path.join(tempDataDir('born-cold'), 'shard-0.db');
    const store = new ShardStore(file);
    const state = emptyPartition(PARTITION, tiersOf(store));
    const commit = batchCommitter(store, state);
    const [early] = commit([[{ t: 'txn.created', txn: bareTxn('B4', 50) }]]);
    store.writeSnapshot(snapshotRow({ partition: PARTITION, lsn: early!, takenAtMs: 50, body: compressImageSync(encodePartition(state)) }));
    commit([[{ t: 'txn.created', txn: bareTxn('B5', 51) }], [{ t: 'txn.created', txn: bareTxn('B6', 52) }], [completed('B5', 53)]]);
    const live = new Map(['B4', 'B5', 'B6'].map((id) => [id, state.transactions.get(id)]));
    assert.equal(live.get('B5')?.status, 'completed');
    store.close();

    const reopened = new ShardStore(file);
    const recovered = recoverShard(reopened, { partitions: [PARTITION] });
    assert.equal(recovered.replayed, 3);
    const after = recovered.states.get(PARTITION)!;
    for (const [id, entity] of live) assert.deepEqual(after.transactions.get(id), entity, id);
    assert.equal(after.transactions.size, 0, 'finished: nothing hot after replay');
    reopened.close();
  });

  it('a named row missing from the file → recovery refuses with CorruptionError instead of inventing the entity', () => {
    const file = path.join(tempDataDir('born-cold'), 'shard-0.db');
    const store = new ShardStore(file);
    const state = emptyPartition(PARTITION, tiersOf(store));
    const [lsn] = batchCommitter(store, state)([[{ t: 'txn.created', txn: bareTxn('B7', 60) }]]);
    store.db.prepare('DELETE FROM cold WHERE id = ?').run('B7');
    assert.throws(() => recoverShard(store, { partitions: [PARTITION], ignoreSnapshots: true, readonly: true }), (error: unknown) => {
      assert.ok(error instanceof CorruptionError);
      assert.match(error.message, new RegExp(`WAL record ${lsn} names txn.created B7`));
      return true;
    });
    store.close();
  });
});

// The cold and idempotency tables of a real shard file: passivation in the group commit, rehydration
// of a finished entity that changes again, and replay from an older snapshot that must read the
// version each WAL record saw (not the newest one on disk).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { ShardStore } from '../../src/store/shard-store.ts';
import { recoverShard, tiersOf } from '../../src/shard/recovery.ts';
import { compressImageSync, snapshotRow } from '../../src/store/snapshot.ts';
import { encodePartition } from '../../src/shard/partition-image.ts';
import { applyEvent, type WalEvent } from '../../src/shard/events.ts';
import { Passivation } from '../../src/shard/passivate.ts';
import { emptyPartition, type PartitionState, type Transaction } from '../../src/shard/state.ts';
import { tempDataDir } from '../helpers/server.ts';
import Database from 'better-sqlite3';
import { packIdemAt, unpackIdemAt } from '../../src/store/tiers.ts';
import { scopeHash } from '../../src/store/scope-hash.ts';
import { WAL_SEGMENT_RECORDS } from '../../src/journal/log-segments.ts';

const PARTITION = 3;

/** Applies one command's events and commits them the way the shard worker does. */
function committer(store: ShardStore, state: PartitionState) {
  const passivation = new Passivation();
  return (events: WalEvent[]): number => {
    const lsn = store.lsnNext;
    for (const event of events) applyEvent(state, event);
    passivation.note(state, lsn);
    store.appendBatch([{ partition: PARTITION, body: JSON.stringify(events) }], passivation.take());
    passivation.settle();
    return lsn;
  };
}

function txn(id: string): Transaction {
  return {
    id, owner: 'test:acme', customerId: 'c1', type: 'funding', status: 'pending', amountMinor: 500, feeMinor: 0, currency: 'NGN',
    reference: null, failure: null, holdId: null, holdStatus: 'none', attempt: 1, paymentId: null, transferId: null,
    history: [{ status: 'pending', atMs: 1, attempt: 1, failureCode: null }], createdAtMs: 1, updatedAtMs: 1,
  };
}

const failed = (id: string, atMs: number): WalEvent => ({ t: 'txn.moved', id, status: 'failed', atMs, failure: { code: 'PROVIDER_ERROR', stage: 'processing', message: 'rail said no' } });

describe('tiers: cold entities and idempotency records in the derived file', () => {
  it('finished transaction → leaves the heap, read back from the cold table with the same body', () => {
    const store = new ShardStore(path.join(tempDataDir('tiers'), 'shard-0.db'));
    const state = emptyPartition(PARTITION, tiersOf(store));
    const commit = committer(store, state);
    commit([{ t: 'txn.created', txn: txn('T1') }]);
    assert.equal(state.transactions.size, 1, 'pending: hot');
    commit([failed('T1', 2)]);
    assert.equal(state.transactions.size, 0, 'failed: no longer in the heap');
    assert.equal(state.transactions.get('T1')?.status, 'failed');
    assert.equal(state.transactions.get('T1')?.history.length, 2);
    store.close();
  });

  it('retried after passivation, failed again, replayed from the older snapshot → exact history, not the newest version twice', () => {
    const store = new ShardStore(path.join(tempDataDir('tiers'), 'shard-0.db'));
    const live = emptyPartition(PARTITION, tiersOf(store));
    const commit = committer(store, live);
    commit([{ t: 'txn.created', txn: txn('T2') }]);
    const failedAt = commit([failed('T2', 2)]);
    // As the shard's image rounds do: what the records up to the image derived is written first.
    store.writeDerived();
    store.writeSnapshot(snapshotRow({ partition: PARTITION, lsn: failedAt, takenAtMs: 2, body: compressImageSync(encodePartition(live)) }));
    commit([{ t: 'txn.moved', id: 'T2', status: 'pending', atMs: 3, failure: null, attempt: 2 }]);
    assert.equal(live.transactions.size, 1, 'the retry brought it back into the heap');
    commit([failed('T2', 4)]);
    assert.equal(live.transactions.size, 0);
    const expected = live.transactions.get('T2')!;
    assert.equal(expected.history.length, 4);
    assert.equal(expected.attempt, 2);

    const recovered = recoverShard(store, { partitions: [PARTITION] }).states.get(PARTITION)!;
    assert.deepEqual(recovered.transactions.get('T2'), expected);
    assert.equal(recovered.transactions.size, 0, 'recovery leaves finished entities cold too');
    const full = recoverShard(store, { partitions: [PARTITION], ignoreSnapshots: true, readonly: true }).states.get(PARTITION)!;
    assert.deepEqual(full.transactions.get('T2'), expected);
    store.close();
  });

  it('idempotency record → in the heap only until its group commit; replays from its row; expiry forgets by owner clock, its keys handed over once the derived file is fsynced', async () => {
    const store = new ShardStore(path.join(tempDataDir('tiers'), 'shard-0.db'));
    const state = emptyPartition(PARTITION, tiersOf(store));
    const commit = committer(store, state);
    const record = { scope: 'test:acme:key-1', fingerprint: 'f1', status: 201, json: '{"data":{"id":"X"}}', atMs: 1_000 };
    const other = { scope: 'test:zeta:key-1', fingerprint: 'f2', status: 201, json: '{"data":{"id":"Y"}}', atMs: 1_000 };
    const at = commit([{ t: 'idem.stored', record }]);
    const otherAt = commit([{ t: 'idem.stored', record: other }]);
    assert.equal(state.idempotency.size, 0, 'nothing left in the heap after the commit');
    assert.deepEqual(state.idempotency.getAt(record.scope, at), record, 'read back from its row (its LSN)');
    assert.equal(state.idempotency.getAt(record.scope, otherAt), undefined, 'another scope at that row is a miss');
    assert.ok(store.derivedPending > 0, 'the rows wait in memory after the commit (log v2: derived after the fsync)');
    store.writeDerived();
    assert.equal(store.derivedPending, 0);
    assert.deepEqual(state.idempotency.getAt(record.scope, at), record, 'read back from its row once written');
    assert.deepEqual(new Set(Array.from({ length: 2 }, (_, i) => store.idemLocations()[2 * i + 1])), new Set([packIdemAt(PARTITION, at), packIdemAt(PARTITION, otherAt)]));
    // acme's sandbox clock is far ahead: its record is past retention; zeta's default cutoff is not.
    store.appendBatch([], { cold: [], idem: [{ lsn: store.lsnNext, partition: PARTITION, op: { op: 'expire', cutoffMs: { 'test:acme': 2_000 }, defaultCutoffMs: 500 } }], due: [] });
    store.writeDerived();
    assert.equal(store.derived.freedWaiting, 1, 'freed in the open transaction, not yet handed over');
    const freed = await new Promise<Array<[number, number]>>((resolve, reject) => store.derivedDurable((error, pairs) => (error === null ? resolve(pairs) : reject(error))));
    assert.deepEqual(freed, [[scopeHash(record.scope), packIdemAt(PARTITION, at)]]);
    assert.equal(store.derived.freedWaiting, 0);
    assert.equal(state.idempotency.getAt(record.scope, at), undefined);
    assert.deepEqual(state.idempotency.getAt(other.scope, otherAt), other);
    store.close();
  });

  it('two records of one LSN (images, old files) → the second takes a negative row; replaying a put adds nothing', () => {
    const store = new ShardStore(path.join(tempDataDir('tiers'), 'shard-0.db'));
    const one = { scope: 'test:acme:a', fingerprint: 'f', status: 201, json: '{}', atMs: 1 };
    const two = { scope: 'test:acme:b', fingerprint: 'f', status: 422, error: { code: 'LIMIT_EXCEEDED', message: 'no' }, atMs: 1 };
    assert.equal(store.idem.put(7, PARTITION, one), 7);
    assert.equal(store.idem.put(7, PARTITION, two), -1);
    assert.equal(store.idem.put(7, PARTITION, one), 7, 'the same put again finds its own row');
    assert.equal(store.idem.put(7, PARTITION, two), -2, 'a record put twice at a taken LSN is stored twice: only old files and images do it');
    assert.equal(store.idem.count(), 3);
    assert.deepEqual(store.readIdemAt(two.scope, -1), two);
    const unpacked = unpackIdemAt(packIdemAt(PARTITION, -1));
    assert.deepEqual(unpacked, { partition: PARTITION, seq: -1 });
    store.close();
  });

  it('a file with the old scope-keyed idem table → its records move to idem_log at open, each at its LSN', () => {
    const file = path.join(tempDataDir('tiers'), 'shard-0.db');
    const old = new Database(file);
    old.exec(`CREATE TABLE idem (scope TEXT PRIMARY KEY, partition INTEGER NOT NULL, owner TEXT NOT NULL, h INTEGER NOT NULL,
      fingerprint TEXT NOT NULL, status INTEGER NOT NULL, json TEXT, error TEXT, at_ms INTEGER NOT NULL, lsn INTEGER NOT NULL) WITHOUT ROWID`);
    const insert = old.prepare('INSERT INTO idem VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)');
    insert.run('test:acme:k1', PARTITION, 'test:acme', scopeHash('test:acme:k1'), 'f1', 201, '{"data":1}', null, 5, 40);
    insert.run('test:acme:k2', PARTITION, 'test:acme', scopeHash('test:acme:k2'), 'f2', 409, null, '{"code":"CONFLICT","message":"m"}', 6, 41);
    old.close();
    const store = new ShardStore(file);
    assert.equal(store.db.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'idem'").pluck().get(), 0, 'old table dropped');
    assert.deepEqual(store.readIdemAt('test:acme:k1', 40), { scope: 'test:acme:k1', fingerprint: 'f1', status: 201, json: '{"data":1}', atMs: 5 });
    assert.deepEqual(store.readIdemAt('test:acme:k2', 41), { scope: 'test:acme:k2', fingerprint: 'f2', status: 409, error: { code: 'CONFLICT', message: 'm' }, atMs: 6 });
    store.close();
  });

  it('truncateWal → drops whole segments, only those both kept images cover and past the retained tail; names blockers; LSNs continue after reopening', () => {
    const file = path.join(tempDataDir('tiers'), 'shard-0.db');
    let store = new ShardStore(file);
    const records = 2.5 * WAL_SEGMENT_RECORDS;
    for (let i = 0; i < records / 50; i += 1) store.appendBatch(Array.from({ length: 50 }, (_, j) => ({ partition: j % 2 === 0 ? PARTITION : PARTITION + 1, body: '[]' })));
    assert.equal(store.walCount(), records);
    const image = compressImageSync(encodePartition(emptyPartition(PARTITION)));
    const olderLsn = 1.2 * WAL_SEGMENT_RECORDS;
    for (const p of [PARTITION, PARTITION + 1]) store.writeSnapshot(snapshotRow({ partition: p, lsn: olderLsn, takenAtMs: 1, body: image }));
    assert.deepEqual(store.truncateWal(0), { dropped: 0, blockers: [PARTITION, PARTITION + 1] }, 'one image each: nothing may go (it could be the damaged one)');
    store.writeSnapshot(snapshotRow({ partition: PARTITION, lsn: 2.1 * WAL_SEGMENT_RECORDS, takenAtMs: 2, body: image }));
    assert.deepEqual(store.truncateWal(0), { dropped: 0, blockers: [PARTITION + 1] }, 'the other partition still has one image');
    store.writeSnapshot(snapshotRow({ partition: PARTITION + 1, lsn: 2.1 * WAL_SEGMENT_RECORDS, takenAtMs: 2, body: image }));
    assert.deepEqual(store.truncateWal(2 * WAL_SEGMENT_RECORDS), { dropped: 0, blockers: [] }, 'the retained tail reaches into the oldest segment');
    assert.deepEqual(store.truncateWal(500, WAL_SEGMENT_RECORDS - 1), { dropped: 0, blockers: [] }, 'a segment with a record above lsnMax (not acknowledged by every copy) stays');
    assert.deepEqual(store.truncateWal(500, WAL_SEGMENT_RECORDS), { dropped: WAL_SEGMENT_RECORDS, blockers: [] }, 'the oldest segment goes whole');
    assert.deepEqual(store.truncateWal(500), { dropped: 0, blockers: [PARTITION, PARTITION + 1] }, 'the next one holds records past the older images');
    assert.equal(store.walFirstLsn(), WAL_SEGMENT_RECORDS + 1);
    assert.equal(store.walCount(), records - WAL_SEGMENT_RECORDS);
    assert.equal([...store.walAfter(0)].length, records - WAL_SEGMENT_RECORDS, 'the rest reads back in order across segments');
    store.close();
    store = new ShardStore(file);
    for (const name of store.db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'wal_%'").pluck().all() as string[]) {
      store.db.prepare(`DELETE FROM ${name}`).run(); // as if every record had been truncated
    }
    store.setMeta('wal_floor', `${records}:${records / 50}`);
    store.close();
    store = new ShardStore(file);
    assert.equal(store.lsnNext, records + 1, 'numbering never goes back after truncation');
    store.close();
  });
});

// Log v2 on a real shard file: one row per group commit holding the batch's records, derived rows
// (cold entities, idempotency records) written after the commit and readable meanwhile, replay that
// rebuilds them after a crash, the torn-tail and corruption rules, and files written in version 1.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { derivedFileOf } from '../../src/store/derived-file.ts';
import { ShardStore } from '../../src/store/shard-store.ts';
import { CorruptionError, recoverShard, tiersOf } from '../../src/shard/recovery.ts';
import { applyEvent, type WalEvent } from '../../src/shard/events.ts';
import { Passivation } from '../../src/shard/passivate.ts';
import { emptyPartition, type PartitionState, type Transaction } from '../../src/shard/state.ts';
import { decodeLogBody, encodeLogBody } from '../../src/journal/log-record.ts';
import { walChecksum, walSegmentSql } from '../../src/journal/log-segments.ts';
import { COLD_SQL } from '../../src/store/cold-table.ts';
import { decodeColdBody } from '../../src/store/cold-codec.ts';
import { crc32 } from 'node:zlib';
import { tempDataDir } from '../helpers/server.ts';
import { DamagedRowError } from '../../src/store/row-checks.ts';
import { compressImageSync, snapshotRow } from '../../src/store/snapshot.ts';
import { encodePartition } from '../../src/shard/partition-image.ts';
import { damageRowOf, logRecords } from '../helpers/log.ts';

const PARTITION = 5;

/** Commits several commands' events as one group commit, the way the shard runtime's flush does. */
function batchCommitter(store: ShardStore, state: PartitionState) {
  const passivation = new Passivation();
  return (commands: WalEvent[][]): number[] => {
    const records: Array<{ partition: number; body: string }> = [];
    const lsns: number[] = [];
    for (const events of commands) {
      const lsn = store.lsnNext + records.length;
      for (const event of events) applyEvent(state, event);
      records.push({ partition: PARTITION, body: JSON.stringify(events) });
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

function coldRows(file: string, id: string): number {
  const db = new Database(derivedFileOf(file), { readonly: true });
  try {
    return (db.prepare('SELECT count(*) FROM cold WHERE id = ?').pluck().get(id) as number);
  } finally {
    db.close();
  }
}

function logRows(file: string): Array<{ lsn_first: number; n: number; batch: number }> {
  const db = new Database(file, { readonly: true });
  try {
    return db.prepare('SELECT lsn_first, n, batch FROM log_1 ORDER BY lsn_first').all() as Array<{ lsn_first: number; n: number; batch: number }>;
  } finally {
    db.close();
  }
}

describe('log v2: the row codec', () => {
  it('encode then decode → the same records, in order, whatever their size (raw and deflated bodies)', () => {
    fc.assert(
      fc.property(fc.array(fc.record({ partition: fc.integer({ min: 0, max: 63 }), body: fc.string({ maxLength: 3_000, unit: 'binary' }) }), { minLength: 1, maxLength: 40 }), (generated) => {
        const records = generated.map((r) => ({ partition: r.partition, body: r.body }));
        assert.deepEqual(decodeLogBody(encodeLogBody(records), records.length), records);
      }),
      { seed: 22, numRuns: 200 },
    );
  });

  it('bodies encoded one after another → each keeps its bytes (frames are built in one reused buffer)', () => {
    const small = encodeLogBody([{ partition: 3, body: '["é"]' }]);
    const smallBytes = Buffer.from(small);
    const large = [{ partition: 1, body: `["${'x€'.repeat(40_000)}"]` }, { partition: 2, body: '[2]' }];
    const largeBody = encodeLogBody(large);
    const largeBytes = Buffer.from(largeBody);
    // Past the buffer that is kept (4 MiB of frames by the 3-bytes-a-unit bound): a buffer of its own.
    const huge = [{ partition: 4, body: `["${'😀'.repeat(800_000)}"]` }];
    assert.deepEqual(decodeLogBody(encodeLogBody(huge), 1), huge);
    encodeLogBody([{ partition: 5, body: `["${'y'.repeat(300)}"]` }]);
    assert.deepEqual(small, smallBytes);
    assert.deepEqual(largeBody, largeBytes);
    assert.deepEqual(decodeLogBody(small, 1), [{ partition: 3, body: '["é"]' }]);
    assert.deepEqual(decodeLogBody(largeBody, 2), large);
  });

  it('a body that says another record count, or another version → refused, not guessed', () => {
    const body = encodeLogBody([{ partition: 1, body: '[]' }, { partition: 2, body: '[1]' }]);
    assert.throws(() => decodeLogBody(body, 3), /2 records where the row says 3/);
    const other = Buffer.from(body);
    other[0] = 1;
    assert.throws(() => decodeLogBody(other, 2), /format version 1/);
  });
});

describe('log v2: one row per group commit, derived rows after it', () => {
  it('a batch of three commands → one log row of three records; replies need nothing else on disk', () => {
    const file = path.join(tempDataDir('log-v2'), 'shard-0.db');
    const store = new ShardStore(file);
    const state = emptyPartition(PARTITION, tiersOf(store));
    const commit = batchCommitter(store, state);
    const lsns = commit([[{ t: 'txn.created', txn: bareTxn('A1', 1) }], [{ t: 'txn.created', txn: bareTxn('A2', 2) }], [completed('A1', 3)]]);
    assert.deepEqual(logRows(file).map((r) => [r.lsn_first, r.n]), [[lsns[0], 3]]);
    assert.deepEqual(logRecords(file).map((r) => r.lsn), lsns);
    assert.ok(logRecords(file).every((r) => r.ok && r.partition === PARTITION));
    store.close();
  });

  it('an entity finished by the batch → leaves the heap, read from memory until writeDerived, then from its cold row', () => {
    const file = path.join(tempDataDir('log-v2'), 'shard-0.db');
    const store = new ShardStore(file);
    const state = emptyPartition(PARTITION, tiersOf(store));
    const commit = batchCommitter(store, state);
    const created = bareTxn('B1', 10);
    commit([[{ t: 'txn.created', txn: created }]]);
    assert.equal(state.transactions.size, 0, 'finished at birth: not in the heap');
    assert.equal(coldRows(file, 'B1'), 0, 'no cold row on the request path');
    assert.deepEqual(state.transactions.get('B1'), created, 'read from the waiting rows');
    assert.ok(store.derivedPending > 0);
    store.writeDerived();
    assert.equal(store.derivedPending, 0);
    assert.equal(coldRows(file, 'B1'), 1);
    assert.deepEqual(state.transactions.get('B1'), created, 'read from its row');
    store.close();
  });

  it('only the newest appended row stays decoded in memory: an older one is read back from disk (and checked)', () => {
    const file = path.join(tempDataDir('log-v2'), 'shard-0.db');
    const store = new ShardStore(file);
    const state = emptyPartition(PARTITION, tiersOf(store));
    const commit = batchCommitter(store, state);
    const created = ['E1', 'E2', 'E3'].map((id, i) => bareTxn(id, 40 + i));
    const lsns = created.map((txn) => commit([[{ t: 'txn.created', txn }]])[0]!);
    assert.equal(new Set(lsns).size, 3, 'three rows');
    damageRowOf(file, lsns[0]!);
    damageRowOf(file, lsns[2]!);
    assert.deepEqual(state.transactions.get('E3'), created[2], 'the last row: its records as appended, no read');
    assert.throws(() => state.transactions.get('E1'), DamagedRowError, 'an earlier row was not kept: read from disk, its checksum fails');
    assert.deepEqual(state.transactions.get('E2'), created[1], 'an undamaged earlier row reads back whole');
    store.close();
  });

  it('killed before writeDerived → replay derives the same rows: entities and idempotency records are all there', () => {
    const file = path.join(tempDataDir('log-v2'), 'shard-0.db');
    const store = new ShardStore(file);
    const state = emptyPartition(PARTITION, tiersOf(store));
    const commit = batchCommitter(store, state);
    const record = { scope: 'test:acme:k1', fingerprint: 'f', status: 201, json: '{"data":{"id":"C1"}}', atMs: 20 };
    const [storedAt] = commit([[{ t: 'txn.created', txn: bareTxn('C1', 20) }, { t: 'idem.stored', record }], [completed('C1', 21)]]);
    const live = state.transactions.get('C1');
    store.close(); // the waiting rows are lost with the process

    const reopened = new ShardStore(file);
    assert.equal(coldRows(file, 'C1'), 0);
    const recovered = recoverShard(reopened, { partitions: [PARTITION] });
    assert.equal(recovered.replayed, 2);
    const after = recovered.states.get(PARTITION)!;
    assert.deepEqual(after.transactions.get('C1'), live);
    assert.equal(coldRows(file, 'C1'), 1, 'its final version derived again, at the record that finished it, as live wrote it');
    assert.deepEqual(after.idempotency.getAt(record.scope, storedAt!), record, 'the idempotency record replays from its row');
    reopened.close();
  });

  it('a read-only replay (verify while a server runs) → keeps what it derives in memory and writes nothing', () => {
    const file = path.join(tempDataDir('log-v2'), 'shard-0.db');
    const store = new ShardStore(file);
    const state = emptyPartition(PARTITION, tiersOf(store));
    const commit = batchCommitter(store, state);
    commit([[{ t: 'txn.created', txn: bareTxn('D1', 30) }]]);
    commit([[completed('D1', 31)]]);
    const live = state.transactions.get('D1');
    const reader = new ShardStore(file, { readonly: true });
    const replayed = recoverShard(reader, { partitions: [PARTITION], ignoreSnapshots: true, readonly: true }).states.get(PARTITION)!;
    assert.deepEqual(replayed.transactions.get('D1'), live);
    reader.close();
    assert.equal(coldRows(file, 'D1'), 0);
    store.close();
  });
});

describe('log v2: torn tail and corruption', () => {
  it('the final row damaged → cut whole at start (its batch is gone, earlier batches intact)', () => {
    const file = path.join(tempDataDir('log-v2'), 'shard-0.db');
    const store = new ShardStore(file);
    const state = emptyPartition(PARTITION, tiersOf(store));
    const commit = batchCommitter(store, state);
    commit([[{ t: 'txn.created', txn: bareTxn('E1', 40) }]]);
    const last = commit([[{ t: 'txn.created', txn: bareTxn('E2', 41) }], [{ t: 'txn.created', txn: bareTxn('E3', 42) }]]);
    store.close();
    damageRowOf(file, last[1]!);
    const reopened = new ShardStore(file);
    const recovered = recoverShard(reopened, { partitions: [PARTITION] });
    assert.equal(recovered.cut, 2, 'both records of the torn row');
    const after = recovered.states.get(PARTITION)!;
    assert.equal(after.transactions.get('E1')?.id, 'E1');
    assert.equal(after.transactions.get('E2'), undefined);
    assert.equal(reopened.lsnNext, last[0], 'numbering continues where the cut began');
    reopened.close();
  });

  it('an earlier row damaged → recovery refuses with CorruptionError naming the record', () => {
    const file = path.join(tempDataDir('log-v2'), 'shard-0.db');
    const store = new ShardStore(file);
    const state = emptyPartition(PARTITION, tiersOf(store));
    const commit = batchCommitter(store, state);
    const [first] = commit([[{ t: 'txn.created', txn: bareTxn('F1', 50) }]]);
    commit([[{ t: 'txn.created', txn: bareTxn('F2', 51) }]]);
    store.close();
    damageRowOf(file, first!);
    const reopened = new ShardStore(file);
    assert.throws(() => recoverShard(reopened, { partitions: [PARTITION] }), (error: unknown) => error instanceof CorruptionError && new RegExp(`WAL record ${first} `).test(error.message));
    reopened.close();
  });
});

describe('log v2: files written in version 1', () => {
  /** A shard file as version 1 wrote it: one wal_1 row per record, born-finished entities named by id with their cold row. */
  function v1File(): string {
    const file = path.join(tempDataDir('log-v1'), 'shard-0.db');
    const db = new Database(file);
    db.pragma('journal_mode = WAL');
    db.exec(`${walSegmentSql('wal_1')}; ${COLD_SQL}`);
    const created = bareTxn('V1', 60);
    const records: Array<[number, unknown[]]> = [
      [1, [{ t: 'txn.created', cold: 'V1' }]],
      [2, [completed('V1', 61)]],
    ];
    for (const [lsn, events] of records) {
      const body = JSON.stringify(events);
      db.prepare('INSERT INTO wal_1 (lsn, partition, batch, body, crc) VALUES (?, ?, ?, ?, ?)').run(lsn, PARTITION, lsn, body, walChecksum(lsn, PARTITION, body));
    }
    const body = JSON.stringify(created);
    db.prepare('INSERT INTO cold (kind, id, lsn, partition, body, crc) VALUES (0, ?, 1, ?, ?, ?)').run('V1', PARTITION, body, crc32(body));
    db.close();
    return file;
  }

  it('opened by version 2 → v1 records replay (named entities from their rows), new batches go to v2 rows after them', () => {
    const file = v1File();
    const store = new ShardStore(file);
    const recovered = recoverShard(store, { partitions: [PARTITION] });
    assert.equal(recovered.replayed, 2);
    const state = recovered.states.get(PARTITION)!;
    assert.equal(state.transactions.get('V1')?.status, 'completed');
    assert.equal(store.lsnNext, 3);
    const commit = batchCommitter(store, state);
    assert.deepEqual(commit([[{ t: 'txn.created', txn: bareTxn('V2', 62) }]]), [3]);
    store.close();
    assert.deepEqual(logRecords(file).map((r) => r.lsn), [1, 2, 3], 'one log in LSN order across both versions');
    const again = recoverShard(new ShardStore(file), { partitions: [PARTITION], ignoreSnapshots: true, readonly: true }).states.get(PARTITION)!;
    assert.equal(again.transactions.get('V1')?.status, 'completed');
    assert.equal(again.transactions.get('V2')?.id, 'V2');
  });

  it('a v1 record naming an entity whose row is missing → CorruptionError, not an invented entity', () => {
    const file = v1File();
    new ShardStore(file).close(); // the first writable open moves the cold rows into the derived file
    const db = new Database(derivedFileOf(file));
    db.exec('DELETE FROM cold');
    db.close();
    const store = new ShardStore(file);
    assert.throws(() => recoverShard(store, { partitions: [PARTITION] }), CorruptionError);
    store.close();
  });
});

describe('log v2: derived rows that point into the log', () => {
  function rawCold(file: string, id: string): string[] {
    const db = new Database(derivedFileOf(file), { readonly: true });
    try {
      return db.prepare('SELECT body FROM cold WHERE id = ? ORDER BY lsn').pluck().all(id) as string[];
    } finally {
      db.close();
    }
  }

  function rawIdemJson(file: string, seq: number): string | null | undefined {
    const db = new Database(derivedFileOf(file), { readonly: true });
    try {
      return db.prepare('SELECT json FROM idem_log WHERE seq = ?').pluck().get(seq) as string | null | undefined;
    } finally {
      db.close();
    }
  }

  it('an entity as its record created it, and a stored reply → empty rows that read back whole from the log record', () => {
    const file = path.join(tempDataDir('log-ptr'), 'shard-0.db');
    const store = new ShardStore(file);
    const state = emptyPartition(PARTITION, tiersOf(store));
    const commit = batchCommitter(store, state);
    const created = bareTxn('P1', 70);
    const record = { scope: 'test:acme:ptr-1', fingerprint: 'f', status: 201, json: '{"data":{"id":"P1"}}', atMs: 70 };
    const [at] = commit([[{ t: 'txn.created', txn: created }, { t: 'idem.stored', record }]]);
    assert.ok(store.derivedWeight < 1_000, 'waiting, they hold no body or reply (~100 a row)');
    assert.deepEqual(state.transactions.get('P1'), created, 'read while waiting, from the log record');
    assert.deepEqual(store.readIdemAt(record.scope, at!), record, 'the reply too');
    store.writeDerived();
    assert.deepEqual(rawCold(file, 'P1'), [''], 'no second copy of the body');
    assert.equal(rawIdemJson(file, at!), '', 'no second copy of the reply');
    assert.deepEqual(state.transactions.get('P1'), created);
    assert.deepEqual(store.readIdemAt(record.scope, at!), record);
    store.close();
  });

  it('an entity changed after its creation record → its final version is a whole row', () => {
    const file = path.join(tempDataDir('log-ptr'), 'shard-0.db');
    const store = new ShardStore(file);
    const state = emptyPartition(PARTITION, tiersOf(store));
    const commit = batchCommitter(store, state);
    const { bare: _bare, ...held } = bareTxn('P2', 80);
    commit([[{ t: 'txn.created', txn: held }]]);
    commit([[completed('P2', 81)]]);
    store.writeDerived();
    const db = new Database(derivedFileOf(file), { readonly: true });
    const rows = db.prepare("SELECT body FROM cold WHERE id = 'P2' ORDER BY lsn").pluck().all() as Array<string | Buffer>;
    db.close();
    assert.equal(rows.length, 1);
    assert.ok(Buffer.isBuffer(rows[0]), 'stored deflated with the dictionary of its kind');
    const json = store.read('txn', 'P2')!;
    assert.equal(JSON.parse(json).status, 'completed', 'read back as JSON');
    assert.equal(decodeColdBody('txn', rows[0]!), json);
    assert.ok(rows[0]!.length < json.length / 2, `at most half its JSON (${rows[0]!.length} of ${json.length} B)`);
    store.close();
  });

  it('the log segment truncated → archived, not copied: the rows pointing into it stay empty and read it; reads, replays and reopening unchanged', () => {
    const file = path.join(tempDataDir('log-ptr'), 'shard-0.db');
    const store = new ShardStore(file, { walSegmentRecords: 2 });
    const state = emptyPartition(PARTITION, tiersOf(store));
    const commit = batchCommitter(store, state);
    const record = { scope: 'test:acme:ptr-3', fingerprint: 'f', status: 201, json: '{"data":{"id":"P3"}}', atMs: 90 };
    const [at] = commit([[{ t: 'txn.created', txn: bareTxn('P3', 90) }, { t: 'idem.stored', record }]]);
    commit([[{ t: 'txn.created', txn: bareTxn('P4', 91) }], [{ t: 'txn.created', txn: bareTxn('P5', 92) }]]);
    commit([[{ t: 'txn.created', txn: bareTxn('P6', 93) }], [{ t: 'txn.created', txn: bareTxn('P7', 94) }]]);
    store.writeDerived();
    assert.deepEqual(rawCold(file, 'P3'), ['']);
    // Two images above every record of the first segment let it go.
    for (const lsn of [store.lsnNext - 2, store.lsnNext - 1]) store.writeSnapshot(snapshotRow({ partition: PARTITION, lsn, takenAtMs: lsn, body: compressImageSync(encodePartition(state)) }));
    const { dropped } = store.truncateWal(0);
    assert.ok(dropped > 0, 'the first segment left the live log');
    assert.equal(store.walFirstLsn()! > at!, true, 'replay no longer starts at it');
    assert.equal(store.archivedRecords(), dropped, 'it is archived');
    assert.deepEqual(rawCold(file, 'P3'), [''], 'no body copied into the row');
    assert.equal(rawIdemJson(file, at!), '', 'no reply copied into the row');
    const raw = new Database(file, { readonly: true });
    assert.equal(raw.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'log_1'").pluck().get(), 0, 'the segment left');
    assert.equal(raw.prepare('SELECT sum(n) FROM log_archive').pluck().get(), dropped, 'its rows are in the archive');
    raw.close();
    assert.equal(state.transactions.get('P3')?.id, 'P3');
    assert.deepEqual(store.readIdemAt(record.scope, at!), record);
    assert.deepEqual([...store.damagedArchiveRows()], []);
    store.close();
    const reopened = new ShardStore(file);
    assert.equal(reopened.archivedRecords(), dropped, 'the archive is found again at open');
    assert.equal(JSON.parse(reopened.read('txn', 'P3')!).id, 'P3', 'a cold read after reopening resolves into the archive');
    assert.deepEqual(reopened.readIdemAt(record.scope, at!), record);
    const after = recoverShard(reopened, { partitions: [PARTITION] }).states.get(PARTITION)!;
    for (const id of ['P3', 'P4', 'P5', 'P6', 'P7']) assert.equal(after.transactions.get(id)?.id, id);
    reopened.close();
  });

  it('an archived row damaged → kobo verify\'s check names it, and a read of an entity in it is a damaged row, never a guess', () => {
    const file = path.join(tempDataDir('log-ptr'), 'shard-0.db');
    const store = new ShardStore(file, { walSegmentRecords: 2 });
    const state = emptyPartition(PARTITION, tiersOf(store));
    const commit = batchCommitter(store, state);
    commit([[{ t: 'txn.created', txn: bareTxn('D1', 90) }]]);
    commit([[{ t: 'txn.created', txn: bareTxn('D2', 91) }], [{ t: 'txn.created', txn: bareTxn('D3', 92) }]]);
    commit([[{ t: 'txn.created', txn: bareTxn('D4', 93) }]]);
    store.writeDerived();
    for (const lsn of [store.lsnNext - 2, store.lsnNext - 1]) store.writeSnapshot(snapshotRow({ partition: PARTITION, lsn, takenAtMs: lsn, body: compressImageSync(encodePartition(state)) }));
    assert.ok(store.truncateWal(0).dropped > 0);
    store.close();
    const raw = new Database(file);
    raw.prepare('UPDATE log_archive SET crc = crc + 1 WHERE lsn_first = (SELECT min(lsn_first) FROM log_archive)').run();
    raw.close();
    const reopened = new ShardStore(file);
    assert.equal([...reopened.damagedArchiveRows()].length, 1);
    assert.throws(() => reopened.read('txn', 'D1'), DamagedRowError);
    reopened.close();
  });
});

describe('log v2: derived rows written in slices', () => {
  it('writeDerived(n) → the n oldest rows go to their tables, the rest still answer from memory, in order', () => {
    const file = path.join(tempDataDir('log-slice'), 'shard-0.db');
    const store = new ShardStore(file);
    const state = emptyPartition(PARTITION, tiersOf(store));
    const commit = batchCommitter(store, state);
    const { bare: _bare, ...held } = bareTxn('S1', 100);
    commit([[{ t: 'txn.created', txn: held }]]);
    commit([[completed('S1', 101)]]);
    for (let i = 2; i <= 5; i += 1) commit([[{ t: 'txn.created', txn: bareTxn(`S${i}`, 100 + i) }]]);
    const waiting = store.derivedPending;
    // Cold rows: S1 once finished, S2..S5 at birth; list rows: each creation and S1's move (six).
    assert.equal(waiting, 5 + 6, 'five cold rows and six list rows');
    store.writeDerived(2);
    assert.equal(store.derivedPending, waiting - 2);
    for (let i = 1; i <= 5; i += 1) assert.equal(state.transactions.get(`S${i}`)?.id, `S${i}`, `S${i} readable`);
    assert.equal(state.transactions.get('S1')?.status, 'completed');
    store.writeDerived();
    assert.equal(store.derivedPending, 0);
    for (let i = 1; i <= 5; i += 1) assert.equal(state.transactions.get(`S${i}`)?.id, `S${i}`);
    store.close();
  });
});

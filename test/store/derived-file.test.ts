// The cold, idempotency and expiry rows in the derived file beside the shard file (issue #22), on real
// sqlite files: rows past the log's end are cut at open, an image is never written while a row of its
// records is not durable there, rows of records the log has not made durable wait, expiry's freed keys are
// handed over only after the file's fsync, and a shard file's old tables move exactly once.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import Database from 'better-sqlite3';
import { ShardStore } from '../../src/store/shard-store.ts';
import { derivedFileOf } from '../../src/store/derived-file.ts';
import { snapshotRow } from '../../src/store/snapshot.ts';
import { COLD_SQL, type ColdRow } from '../../src/store/cold-table.ts';
import { IDEM_LOG_SQL, type IdemChange } from '../../src/store/idem-log.ts';
import { DUE_SQL, type DueChange } from '../../src/store/due-log.ts';
import { packIdemAt } from '../../src/store/tiers.ts';
import { scopeHash } from '../../src/store/scope-hash.ts';
import type { DerivedBatch } from '../../src/store/derived-rows.ts';
import { tempDataDir } from '../helpers/server.ts';

const OWNER = 'test:acct_derived';

const cold = (id: string, lsn: number): ColdRow => ({ kind: 'txn', id, lsn, partition: 0, body: JSON.stringify({ id, amountMinor: lsn }) });
const put = (k: string, lsn: number, atMs = 1_000): IdemChange => ({ lsn, partition: 0, op: { op: 'put', record: { scope: `${OWNER}:${k}`, fingerprint: `f-${k}`, status: 201, json: `{"k":"${k}"}`, atMs } } });
const due = (id: string, lsn: number): DueChange => ({ op: 'set', entry: { id, owner: OWNER, expiresAtMs: 5_000 + lsn }, lsn, partition: 0 });
const batch = (rows: Partial<DerivedBatch>): DerivedBatch => Object.assign({ cold: [], idem: [], due: [] }, rows);

/** Appends `n` log batches (one empty record each). */
function appendRecords(store: ShardStore, n: number): void {
  for (let i = 0; i < n; i += 1) store.appendBatch([{ partition: 0, body: '[]' }]);
}

/** Rows of `table` a second connection sees in the derived file (what is committed). */
function committed(file: string, table: 'cold' | 'idem_log' | 'due'): number {
  const db = new Database(derivedFileOf(file), { readonly: true });
  try {
    return db.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number;
  } finally {
    db.close();
  }
}

function tablesIn(file: string): string[] {
  const db = new Database(file, { readonly: true });
  try {
    return db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('cold', 'idem_log', 'due', 'owner_numbers') ORDER BY name").pluck().all() as string[];
  } finally {
    db.close();
  }
}

/**
 * A data dir as a build before #22 left it: three records, their cold, idempotency and expiry rows in the
 * shard file (written with today's code, then put back there with their real layouts), none in the derived file.
 */
function oldLayout(): string {
  const file = path.join(tempDataDir('derived-file'), 'shard-0.db');
  const store = new ShardStore(file);
  appendRecords(store, 3);
  store.writeDerivedNow(batch({ cold: [cold('T1', 1), cold('T2', 3)], idem: [put('k1', 1), put('k2', 2)], due: [due('P1', 2)] }));
  store.close();
  const shard = new Database(file);
  shard.exec(`${COLD_SQL}\n${IDEM_LOG_SQL}\n${DUE_SQL}`);
  shard.prepare('ATTACH DATABASE ? AS d').run(derivedFileOf(file));
  for (const table of ['owner_numbers', 'idem_log', 'due', 'cold']) shard.exec(`INSERT INTO main.${table} SELECT * FROM d.${table}; DELETE FROM d.${table};`);
  shard.exec('DETACH DATABASE d');
  shard.close();
  return file;
}

function readsBack(store: ShardStore): void {
  assert.equal(JSON.parse(store.read('txn', 'T1')!).amountMinor, 1);
  assert.equal(JSON.parse(store.read('txn', 'T2')!).amountMinor, 3);
  assert.equal(store.readIdemAt(`${OWNER}:k2`, 2)?.json, '{"k":"k2"}');
  assert.equal(store.idemLocations().length, 4, 'both keys for the front\'s index');
  assert.deepEqual(store.due.dueOf(OWNER, 10_000, 10).map((r) => r.id), ['P1']);
}

describe('derived file: cold, idempotency and expiry rows', () => {
  it('rows of LSNs past the log\'s end (the derived file committed, the log lost its tail) → cut at the next open, in every table; the others stay', () => {
    const file = path.join(tempDataDir('derived-file'), 'shard-0.db');
    let store = new ShardStore(file);
    appendRecords(store, 2);
    store.writeDerivedNow(batch({ cold: [cold('T1', 1), cold('T5', 5)], idem: [put('k2', 2), put('k6', 6)], due: [due('P1', 1), due('P7', 7)] }));
    assert.ok(store.read('txn', 'T5') !== undefined);
    store.close();
    store = new ShardStore(file);
    assert.equal(store.read('txn', 'T5'), undefined);
    assert.equal(store.readIdemAt(`${OWNER}:k6`, 6), undefined);
    assert.deepEqual(store.due.dueOf(OWNER, 100_000, 10).map((r) => r.id), ['P1']);
    assert.ok(store.read('txn', 'T1') !== undefined);
    assert.equal(store.readIdemAt(`${OWNER}:k2`, 2)?.json, '{"k":"k2"}');
    store.close();
    assert.deepEqual([committed(file, 'cold'), committed(file, 'idem_log'), committed(file, 'due')], [1, 1, 1], 'the cut is committed');
  });

  for (const [table, rows] of [
    ['cold', batch({ cold: [cold('T2', 2)] })],
    ['idem_log', batch({ idem: [put('k2', 2)] })],
    ['due', batch({ due: [due('P2', 2)] })],
  ] as const) {
    it(`an image while a ${table} row of its records waits in memory → refused (AssertionError); written but uncommitted → the image commits and fsyncs it first`, () => {
      const file = path.join(tempDataDir('derived-file'), 'shard-0.db');
      const store = new ShardStore(file);
      appendRecords(store, 3);
      store.holdDerived(rows);
      const image = snapshotRow({ partition: 0, lsn: 3, takenAtMs: 1, body: Buffer.from('{}') });
      assert.throws(() => store.writeSnapshot(image), /derived rows of its records wait in memory/);
      store.writeDerived(100);
      assert.equal(committed(file, table), 0, 'in the open transaction only');
      store.writeSnapshot(image);
      assert.equal(committed(file, table), 1, 'committed (and fsynced) before the image');
      assert.equal(store.snapshotsOf(0).length, 1);
      store.close();
    });
  }

  it('a sweep\'s drop of an expiry row, given the LSN an image covers, waiting → the image goes in (a lost drop is found and made again); a set row would refuse it', () => {
    const file = path.join(tempDataDir('derived-file'), 'shard-0.db');
    const store = new ShardStore(file);
    appendRecords(store, 3);
    store.writeDerivedNow(batch({ due: [due('P1', 1)] }));
    store.holdDerived(batch({ due: [{ op: 'drop', entry: { id: 'P1', owner: OWNER, expiresAtMs: 5_001 }, lsn: 3, partition: 0 }] }));
    store.writeSnapshot(snapshotRow({ partition: 0, lsn: 3, takenAtMs: 1, body: Buffer.from('{}') }));
    store.holdDerived(batch({ due: [due('P3', 3)] }));
    assert.throws(() => store.writeSnapshot(snapshotRow({ partition: 0, lsn: 3, takenAtMs: 2, body: Buffer.from('{}') })), /derived rows of its records wait in memory/);
    store.writeDerived();
    assert.deepEqual(store.due.dueOf(OWNER, 100_000, 10).map((r) => r.id), ['P3'], 'the drop and the set written in order');
    store.close();
  });

  it('rows of records past the log\'s durable end → wait in memory (a deletion in the file could not be cut back); read meanwhile from memory', () => {
    const file = path.join(tempDataDir('derived-file'), 'shard-0.db');
    const store = new ShardStore(file);
    appendRecords(store, 2);
    store.holdDerived(batch({ cold: [cold('T1', 1), cold('T2', 2)], idem: [put('k2', 2)] }));
    assert.equal(store.writeDerived(100, 'all', 1), 1, 'only the row of LSN 1');
    assert.equal(store.derivedPending, 2);
    assert.equal(JSON.parse(store.read('txn', 'T2')!).amountMinor, 2, 'a waiting row reads from memory');
    assert.equal(store.readIdemAt(`${OWNER}:k2`, 2)?.json, '{"k":"k2"}');
    assert.equal(store.writeDerived(100, 'all', 2), 2);
    assert.equal(store.derivedPending, 0);
    store.close();
  });

  it('expiry frees a key → its row is gone from the open transaction at once, the key handed over only by the fsync that makes the deletion durable', async () => {
    const file = path.join(tempDataDir('derived-file'), 'shard-0.db');
    const store = new ShardStore(file);
    appendRecords(store, 2);
    store.writeDerivedNow(batch({ idem: [put('k1', 1, 1_000)] }));
    store.holdDerived(batch({ idem: [{ lsn: 2, partition: 0, op: { op: 'expire', cutoffMs: {}, defaultCutoffMs: 2_000 } }] }));
    store.writeDerived(100);
    assert.equal(store.readIdemAt(`${OWNER}:k1`, 1), undefined, 'deleted in the open transaction');
    assert.equal(store.derived.freedWaiting, 1);
    assert.equal(committed(file, 'idem_log'), 1, 'not yet committed');
    const freed = await new Promise<Array<[number, number]>>((resolve, reject) => store.derivedDurable((error, pairs) => (error === null ? resolve(pairs) : reject(error))));
    assert.deepEqual(freed, [[scopeHash(`${OWNER}:k1`), packIdemAt(0, 1)]]);
    assert.equal(committed(file, 'idem_log'), 0, 'committed before the key was handed over');
    assert.equal(store.derived.freedWaiting, 0);
    store.close();
  });

  it('a shard file holding cold, idempotency and expiry tables (written before #22) → they move at the first writable open: every row read back, none left in the shard file', () => {
    const file = oldLayout();
    assert.deepEqual(tablesIn(file), ['cold', 'due', 'idem_log', 'owner_numbers']);
    const reader = new ShardStore(file, { readonly: true });
    readsBack(reader);
    reader.close();
    assert.deepEqual(tablesIn(file), ['cold', 'due', 'idem_log', 'owner_numbers'], 'a read-only open moves nothing');
    const store = new ShardStore(file);
    readsBack(store);
    store.close();
    assert.deepEqual(tablesIn(file), [], 'dropped from the shard file');
    assert.deepEqual([committed(file, 'cold'), committed(file, 'idem_log'), committed(file, 'due')], [2, 2, 1]);
    const again = new ShardStore(file);
    readsBack(again);
    again.close();
  });

  it('a move killed after its copy was made durable but before the drop → the next open only drops: no row twice, none lost', () => {
    const file = oldLayout();
    // What the killed move left: the copy complete in the derived file with its mark, the tables still in the
    // shard file. The shard file's copy lacks a row here, so copying again would lose it.
    const derived = new Database(derivedFileOf(file));
    derived.prepare('ATTACH DATABASE ? AS s').run(file);
    for (const table of ['owner_numbers', 'idem_log', 'due', 'cold']) derived.exec(`INSERT INTO main.${table} SELECT * FROM s.${table}`);
    derived.exec("DELETE FROM s.cold WHERE id = 'T2'");
    derived.exec("INSERT OR REPLACE INTO list_meta (key, value) VALUES ('moved_rows', '1')");
    derived.exec('DETACH DATABASE s');
    derived.close();
    const store = new ShardStore(file);
    readsBack(store);
    store.close();
    assert.deepEqual(tablesIn(file), []);
    assert.deepEqual([committed(file, 'cold'), committed(file, 'idem_log'), committed(file, 'due')], [2, 2, 1]);
  });
});

// The list index's file of its own, on real sqlite files: rows past the log's end are cut at open, an
// image is never written while list rows of its records are not durable in the list file, the open
// transaction is read by pages before it commits, and a shard file's old list tables move exactly once.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import fs from 'node:fs';
import Database from 'better-sqlite3';
import { ShardStore } from '../../src/store/shard-store.ts';
import { derivedFileOf, DERIVED_TX_ROWS_MAX } from '../../src/store/derived-file.ts';
import { snapshotRow } from '../../src/store/snapshot.ts';
import type { ListChange, ListQuery } from '../../src/store/list-index.ts';
import { tempDataDir } from '../helpers/server.ts';

const OWNER = 'test:acct_listfile';
const page: ListQuery = { owner: OWNER, kind: 'payment', customerId: null, status: null, idAbove: '', idBelow: '~', order: 'desc', rows: 100_000 };

function row(i: number, lsn: number): ListChange {
  return { kind: 'payment', id: `01J0000000000000000P${String(i).padStart(6, '0')}`, owner: OWNER, customerId: 'cus_1', status: 'pending', body: null, lsn };
}

/** Appends `n` log batches (one empty record each): list rows of LSNs up to the log's end are legitimate. */
function appendRecords(store: ShardStore, n: number): void {
  for (let i = 0; i < n; i += 1) store.appendBatch([{ partition: 0, body: '[]' }]);
}

/** The rows a second, read-only connection sees in the list file (what is committed). */
function committedRows(file: string): number {
  const db = new Database(derivedFileOf(file), { readonly: true });
  try {
    return db.prepare('SELECT count(*) FROM lists').pluck().get() as number;
  } finally {
    db.close();
  }
}

describe('list file', () => {
  it('rows of LSNs past the log\'s end (a power loss kept the list file\'s commit, not the log\'s) → cut at the next open; the others stay', () => {
    const file = path.join(tempDataDir('list-file'), 'shard-0.db');
    let store = new ShardStore(file);
    appendRecords(store, 2);
    store.writeListsNow([row(1, 1), row(2, 2), row(3, 5)], []);
    assert.equal(store.listPage(page).length, 3);
    store.close();
    store = new ShardStore(file);
    assert.deepEqual(store.listPage(page).map((r) => r.id).sort(), [row(1, 1).id, row(2, 2).id]);
    store.close();
    assert.equal(committedRows(file), 2, 'the cut is committed');
  });

  it('an image while a list row of its records waits in memory → refused (AssertionError); written first → the image goes in and the row is committed in the list file', () => {
    const file = path.join(tempDataDir('list-file'), 'shard-0.db');
    const store = new ShardStore(file);
    appendRecords(store, 3);
    store.holdDerived({ cold: [], idem: [], due: [], list: [row(1, 2)] });
    const image = snapshotRow({ partition: 0, lsn: 3, takenAtMs: 1, body: Buffer.from('{}') });
    assert.throws(() => store.writeSnapshot(image), /derived rows of its records wait in memory/);
    store.writeDerived(100, 'lists');
    assert.equal(committedRows(file), 0, 'in the open transaction only');
    store.writeSnapshot(image);
    assert.equal(committedRows(file), 1, 'committed (and fsynced) before the image');
    assert.equal(store.snapshotsOf(0).length, 1);
    store.close();
  });

  it(`rows a chunk at a time → pages read them from the open transaction; the file commits at ${DERIVED_TX_ROWS_MAX} rows`, () => {
    const file = path.join(tempDataDir('list-file'), 'shard-0.db');
    const store = new ShardStore(file);
    appendRecords(store, 1);
    const chunk = 500;
    let written = 0;
    while (written < DERIVED_TX_ROWS_MAX - chunk) {
      store.holdDerived({ cold: [], idem: [], due: [], list: Array.from({ length: chunk }, (_, i) => row(written + i, 1)) });
      store.writeDerived(chunk, 'lists');
      written += chunk;
      assert.equal(store.listPage(page).length, written, 'the page sees every row written so far');
      assert.equal(store.derived.listPending, 0);
    }
    assert.equal(committedRows(file), 0, 'nothing committed below the bound');
    store.holdDerived({ cold: [], idem: [], due: [], list: Array.from({ length: chunk }, (_, i) => row(written + i, 1)) });
    store.writeDerived(chunk, 'lists');
    written += chunk;
    assert.equal(committedRows(file), written, 'committed once the bound is reached');
    store.close();
  });

  it('a shard file whose list tables moved but were not yet dropped (killed in between) → the next open only drops them: no row twice, none lost', () => {
    const file = path.join(tempDataDir('list-file'), 'shard-0.db');
    let store = new ShardStore(file);
    appendRecords(store, 2);
    store.writeListsNow([row(1, 1), row(2, 2)], []);
    store.close();
    // The shard file as a build before the list file left it: the same tables and rows, in the shard file.
    const shard = new Database(file);
    shard.prepare('ATTACH DATABASE ? AS l').run(derivedFileOf(file));
    for (const table of ['list_owners', 'list_customers', 'lists', 'ledger_entries']) shard.exec(`CREATE TABLE main.${table} AS SELECT * FROM l.${table}`);
    shard.exec('DETACH DATABASE l');
    shard.close();
    store = new ShardStore(file);
    assert.deepEqual(store.listPage(page).map((r) => r.id).sort(), [row(1, 1).id, row(2, 2).id]);
    assert.equal(store.db.prepare("SELECT count(*) FROM sqlite_master WHERE name IN ('lists', 'list_owners', 'list_customers', 'ledger_entries')").pluck().get(), 0, 'gone from the shard file');
    store.close();
    assert.equal(committedRows(file), 2);
  });

  it('checkpoints on a worker thread → the journal restarts instead of growing: 40 commits of 8,000 rows leave it under 16 MiB', async () => {
    const file = path.join(tempDataDir('list-file'), 'shard-0.db');
    const store = new ShardStore(file);
    appendRecords(store, 1);
    let checkpoints = 0;
    let resumed: (() => void) | null = null;
    store.derived.checkpointInWorker(() => {
      checkpoints += 1;
      resumed?.();
    });
    let largest = 0;
    for (let tx = 0; tx < 40; tx += 1) {
      // As the shard's scheduler does: no rows go in while a checkpoint runs.
      if (store.derived.checkpointing) await new Promise<void>((resolve) => (resumed = resolve));
      const rows = Array.from({ length: DERIVED_TX_ROWS_MAX }, (_, i) => row(tx * DERIVED_TX_ROWS_MAX + i, 1));
      store.holdDerived({ cold: [], idem: [], due: [], list: rows });
      store.writeDerived(DERIVED_TX_ROWS_MAX, 'lists');
      largest = Math.max(largest, fs.statSync(`${derivedFileOf(file)}-wal`).size);
    }
    assert.ok(checkpoints >= 3, `checkpoints that ended: ${checkpoints}`);
    assert.ok(largest < 16 * 1_024 * 1_024, `the journal reached ${largest} bytes`);
    assert.equal(store.listPage(Object.assign({}, page, { rows: 10 })).length, 10);
    store.close();
    assert.equal(committedRows(file), 40 * DERIVED_TX_ROWS_MAX);
  });
});

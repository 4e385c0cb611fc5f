// The `due` table of a real shard file: keyed owner first (a batch's rows share a page), read by the
// shard's sweep owner by owner across partitions, and moved over from the partition-first key of older
// files when they are opened.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import Database from 'better-sqlite3';
import { ShardStore } from '../../src/store/shard-store.ts';
import type { DueChange } from '../../src/store/due-log.ts';
import { damagedDueRows, dueRowChecksum } from '../../src/store/row-checks.ts';
import { tempDataDir } from '../helpers/server.ts';

const set = (partition: number, owner: string, id: string, expiresAtMs: number, lsn = 1): DueChange => ({ op: 'set', partition, lsn, entry: { id, owner, expiresAtMs } });

describe('due log', () => {
  it('dueOf: an owner’s rows before its cutoff, oldest first, from every partition, at most the limit', () => {
    const store = new ShardStore(path.join(tempDataDir('due-log'), 'shard-0.db'));
    try {
      store.due.apply([set(7, 'test:a', 'p3', 300), set(2, 'test:a', 'p1', 100), set(9, 'test:a', 'p2', 200), set(2, 'test:b', 'q1', 50), set(4, 'test:a', 'late', 10_000)]);
      assert.deepEqual(store.due.owners(), ['test:a', 'test:b']);
      assert.deepEqual(
        store.due.dueOf('test:a', 1_000, 10).map((r) => [r.partition, r.id, r.expiresAtMs]),
        [[2, 'p1', 100], [9, 'p2', 200], [7, 'p3', 300]],
      );
      assert.deepEqual(store.due.dueOf('test:a', 1_000, 2).map((r) => r.id), ['p1', 'p2']);
      assert.deepEqual(store.due.dueOf('test:a', 200, 10).map((r) => r.id), ['p1'], 'the cutoff is exclusive');
      assert.deepEqual(store.due.dueOf('test:b', 1_000, 10).map((r) => [r.owner, r.partition, r.id]), [['test:b', 2, 'q1']]);
      // A drop names the whole row; a replayed set of a dropped row comes back (and is dropped again by a sweep).
      store.due.apply([{ op: 'drop', partition: 9, lsn: 2, entry: { id: 'p2', owner: 'test:a', expiresAtMs: 200 } }]);
      assert.deepEqual(store.due.dueOf('test:a', 1_000, 10).map((r) => r.id), ['p1', 'p3']);
      store.due.cutFrom(1);
      assert.equal(store.due.count(), 0, 'a torn tail takes its rows back');
    } finally {
      store.close();
    }
  });

  it('open: a file with the partition-first key gets the owner-first one (by owner number), every row kept', () => {
    const file = path.join(tempDataDir('due-log-migrate'), 'shard-0.db');
    const old = new Database(file);
    old.exec(`CREATE TABLE due (
      partition INTEGER NOT NULL, owner TEXT NOT NULL, expires_at_ms INTEGER NOT NULL, id TEXT NOT NULL,
      lsn INTEGER NOT NULL, PRIMARY KEY (partition, owner, expires_at_ms, id)) WITHOUT ROWID;`);
    const insert = old.prepare('INSERT INTO due (partition, owner, expires_at_ms, id, lsn) VALUES (?, ?, ?, ?, ?)');
    for (let i = 0; i < 300; i += 1) insert.run(i % 64, i % 3 === 0 ? 'test:b' : 'test:a', 1_000 + i, `p${i}`, i + 1);
    old.close();

    const store = new ShardStore(file);
    try {
      const sql = store.rowsDb.prepare("SELECT sql FROM sqlite_master WHERE name = 'due'").pluck().get() as string;
      assert.match(sql, /PRIMARY KEY \(o, expires_at_ms, partition, id\)/);
      assert.equal(store.due.count(), 300);
      const a = store.due.dueOf('test:a', 1_000_000, 1_000);
      assert.equal(a.length, 200);
      assert.deepEqual(a[0], { id: 'p1', owner: 'test:a', expiresAtMs: 1_001, partition: 1 });
      assert.equal(store.rowsDb.prepare("SELECT count(*) FROM sqlite_master WHERE name LIKE 'due_%'").pluck().get(), 0, 'no table left behind');
      assert.deepEqual([...damagedDueRows(store.rowsDb)], [], 'each row checksummed over its resolved owner');
    } finally {
      store.close();
    }
    // Opening again changes nothing.
    const again = new ShardStore(file);
    try {
      assert.equal(again.due.count(), 300);
    } finally {
      again.close();
    }
  });

  it('open: owner-first rows naming the owner by text → numbered, checksums kept; a row damaged before stays damaged, a damaged number is never swept', () => {
    const file = path.join(tempDataDir('due-log-numbers'), 'shard-0.db');
    const old = new Database(file);
    old.exec(`CREATE TABLE due (
      owner TEXT NOT NULL, expires_at_ms INTEGER NOT NULL, partition INTEGER NOT NULL, id TEXT NOT NULL,
      lsn INTEGER NOT NULL, crc INTEGER, PRIMARY KEY (owner, expires_at_ms, partition, id)) WITHOUT ROWID;`);
    const insert = old.prepare('INSERT INTO due (owner, expires_at_ms, partition, id, lsn, crc) VALUES (?, ?, ?, ?, ?, ?)');
    for (let i = 0; i < 20; i += 1) {
      const row = { owner: i % 2 === 0 ? 'test:acct_even' : 'live:acct_odd', expires_at_ms: 1_000 + i, partition: i % 5, id: `p${i}`, lsn: i + 1 };
      insert.run(row.owner, row.expires_at_ms, row.partition, row.id, row.lsn, (dueRowChecksum(row) ^ (i === 4 ? 1 : 0)) >>> 0);
    }
    old.close();
    const store = new ShardStore(file);
    try {
      assert.deepEqual(store.rowsDb.prepare('SELECT owner FROM owner_numbers ORDER BY n').pluck().all(), ['live:acct_odd', 'test:acct_even']);
      assert.deepEqual(store.due.owners(), ['live:acct_odd', 'test:acct_even']);
      assert.deepEqual([...damagedDueRows(store.rowsDb)], ['expiry row of p4 (LSN 5, partition 4)']);
      assert.deepEqual(store.due.dueOf('test:acct_even', 1_009, 10).map((r) => r.id), ['p0', 'p2', 'p6', 'p8'], 'the damaged row is never handed to the sweep');
      store.rowsDb.prepare("UPDATE owner_numbers SET owner = 'test:acct_other' WHERE owner = 'live:acct_odd'").run();
    } finally {
      store.close();
    }
    const damaged = new ShardStore(file);
    try {
      assert.deepEqual(damaged.due.owners(), ['test:acct_even'], 'a number whose mapping is damaged is left out');
      assert.deepEqual(damaged.due.dueOf('test:acct_other', 1_000_000, 10), []);
    } finally {
      damaged.close();
    }
  });
});

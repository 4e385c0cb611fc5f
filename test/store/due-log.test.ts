// The `due` table of a real shard file: keyed owner first (a batch's rows share a page), read by the
// shard's sweep owner by owner across partitions, and moved over from the partition-first key of older
// files when they are opened.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import Database from 'better-sqlite3';
import { ShardStore } from '../../src/store/shard-store.ts';
import type { DueChange } from '../../src/store/due-log.ts';
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

  it('open: a file with the partition-first key gets the owner-first one, every row kept', () => {
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
      const sql = store.db.prepare("SELECT sql FROM sqlite_master WHERE name = 'due'").pluck().get() as string;
      assert.match(sql, /PRIMARY KEY \(owner, expires_at_ms, partition, id\)/);
      assert.equal(store.due.count(), 300);
      const a = store.due.dueOf('test:a', 1_000_000, 1_000);
      assert.equal(a.length, 200);
      assert.deepEqual(a[0], { id: 'p1', owner: 'test:a', expiresAtMs: 1_001, partition: 1 });
      assert.equal(store.db.prepare("SELECT count(*) FROM sqlite_master WHERE name LIKE 'due_%'").pluck().get(), 0, 'no table left behind');
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
});

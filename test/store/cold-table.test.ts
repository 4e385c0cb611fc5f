// The cold table of a real shard file: versions by LSN (newest, before a replayed record, exactly at
// one), idempotent writes, and files written with the two older layouts (WITHOUT ROWID keyed by kind first;
// a rowid table with an (id, kind, lsn) index) moved over at open.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { crc32 } from 'node:zlib';
import path from 'node:path';
import Database from 'better-sqlite3';
import { ShardStore } from '../../src/store/shard-store.ts';
import { tempDataDir } from '../helpers/server.ts';

const row = (id: string, lsn: number, body: string) => ({ kind: 'payment' as const, id, lsn, partition: 2, body });

describe('cold table', () => {
  it('versions of one entity → newest by default, the one before a replayed record, exactly one by LSN; a rewrite adds nothing', () => {
    const store = new ShardStore(path.join(tempDataDir('cold-table'), 'shard-0.db'));
    store.cold.write([row('P1', 3, '{"v":1}'), row('P1', 7, '{"v":2}'), { ...row('P1', 5, '{"t":1}'), kind: 'txn' }]);
    store.cold.write([row('P1', 7, '{"v":2}')]);
    assert.equal(store.read('payment', 'P1'), '{"v":2}');
    assert.equal(store.read('txn', 'P1'), '{"t":1}', 'kinds do not mix under one id');
    store.asOfLsn = 7;
    assert.equal(store.read('payment', 'P1'), '{"v":1}', 'replaying record 7 sees the version before it');
    store.asOfLsn = Number.POSITIVE_INFINITY;
    assert.equal(store.readExact('payment', 'P1', 3), '{"v":1}');
    assert.equal(store.readExact('payment', 'P1', 4), undefined);
    assert.equal(store.coldCount(), 3);
    assert.deepEqual([...store.coldIds('payment')], ['P1']);
    store.cutFrom(6);
    assert.equal(store.read('payment', 'P1'), '{"v":1}', 'a torn tail takes its rows back');
    store.close();
  });

  const layouts = {
    'WITHOUT ROWID keyed (kind, id, lsn)': `CREATE TABLE cold (
      kind INTEGER NOT NULL, id TEXT NOT NULL, lsn INTEGER NOT NULL, partition INTEGER NOT NULL,
      body TEXT NOT NULL, crc INTEGER NOT NULL, PRIMARY KEY (kind, id, lsn)) WITHOUT ROWID`,
    'rowid with an (id, kind, lsn) index': `CREATE TABLE cold (
      kind INTEGER NOT NULL, id TEXT NOT NULL, lsn INTEGER NOT NULL, partition INTEGER NOT NULL,
      body TEXT NOT NULL, crc INTEGER NOT NULL);
      CREATE UNIQUE INDEX cold_version ON cold (id, kind, lsn);`,
  };
  for (const [layout, createSql] of Object.entries(layouts)) it(`a file with the ${layout} layout → moved to the WITHOUT ROWID (id, kind, lsn) table at open, every version kept`, () => {
    const file = path.join(tempDataDir('cold-table'), 'shard-0.db');
    const old = new Database(file);
    old.exec(createSql);
    const insert = old.prepare('INSERT INTO cold (kind, id, lsn, partition, body, crc) VALUES (?, ?, ?, ?, ?, ?)');
    // Rows carry their checksums (every layout had them; reads now check them).
    for (const [kind, id, lsn, body] of [[1, 'P9', 4, '{"old":1}'], [1, 'P9', 8, '{"old":2}'], [0, 'T9', 4, '{"txn":1}']] as const) insert.run(kind, id, lsn, 2, body, crc32(body));
    old.close();

    const store = new ShardStore(file);
    const sql = store.rowsDb.prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'cold'").pluck().get() as string;
    assert.match(sql, /PRIMARY KEY \(id, kind, lsn\)\) WITHOUT ROWID/i);
    assert.deepEqual(store.rowsDb.prepare("SELECT name FROM sqlite_master WHERE name LIKE 'cold%'").pluck().all(), ['cold'], 'the old table and its index are gone');
    assert.equal(store.coldCount(), 3);
    assert.equal(store.read('payment', 'P9'), '{"old":2}');
    assert.equal(store.readExact('payment', 'P9', 4), '{"old":1}');
    assert.equal(store.read('txn', 'T9'), '{"txn":1}');
    store.close();
    const again = new ShardStore(file);
    assert.equal(again.coldCount(), 3, 'reopening migrates nothing twice');
    again.close();
  });
});

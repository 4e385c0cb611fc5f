// Row checksums of a real shard file's derived tables: a finished entity, an idempotency record and an
// expiry row are each checked when read (every column a decision uses); a file written before the
// idempotency and expiry rows had checksums gets them once, at its first writable open.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import Database from 'better-sqlite3';
import { ShardStore } from '../../src/store/shard-store.ts';
import { derivedFileOf } from '../../src/store/derived-file.ts';
import { DamagedRowError } from '../../src/store/row-checks.ts';
import { scopeHash } from '../../src/store/scope-hash.ts';
import { tempDataDir } from '../helpers/server.ts';

const SCOPE = 'test:acme:key-1';
const record = { scope: SCOPE, fingerprint: 'f'.repeat(64), status: 201, json: '{"data":{"amount_minor":500}}', atMs: 1_000 };

function storeWithRows(): { file: string; store: ShardStore } {
  const file = path.join(tempDataDir('row-checks'), 'shard-0.db');
  const store = new ShardStore(file);
  store.appendBatch([{ partition: 3, body: '[]' }], {
    cold: [{ kind: 'txn', id: 'T1', lsn: 1, partition: 3, body: '{"id":"T1","amountMinor":500}' }],
    idem: [{ lsn: 1, partition: 3, op: { op: 'put', record } }],
    due: [{ lsn: 1, partition: 3, op: 'set', entry: { id: 'P1', owner: 'test:acme', expiresAtMs: 5_000 } }],
  });
  // Derived rows follow the log row after its commit (log v2): into their tables now.
  store.writeDerived();
  return { file, store };
}

describe('row checks', () => {
  it('intact rows read back; each column a decision uses, once altered, raises DamagedRowError (never a value, never a miss)', () => {
    const { file, store } = storeWithRows();
    assert.equal(store.read('txn', 'T1'), '{"id":"T1","amountMinor":500}');
    assert.equal(store.readIdemAt(SCOPE, 1)?.json, record.json);
    assert.deepEqual(store.due.dueOf('test:acme', 10_000, 10).map((r) => r.id), ['P1']);
    store.close();
    for (const [sql, read] of [
      ["UPDATE cold SET body = replace(body, '500', '900')", (s: ShardStore) => s.read('txn', 'T1')],
      ["UPDATE idem_log SET json = replace(json, '500', '900')", (s: ShardStore) => s.readIdemAt(SCOPE, 1)],
      ["UPDATE idem_log SET key = 'key-2'", (s: ShardStore) => s.readIdemAt(SCOPE, 1)],
      ['UPDATE idem_log SET status = 200', (s: ShardStore) => s.readIdemAt(SCOPE, 1)],
      ["UPDATE owner_numbers SET owner = 'test:other'", (s: ShardStore) => s.readIdemAt(SCOPE, 1)],
      ['UPDATE idem_log SET o = 9', (s: ShardStore) => s.readIdemAt(SCOPE, 1)],
    ] as const) {
      // Both files of the shard are copied; the rows are in its derived file.
      const copy = path.join(tempDataDir('row-checks'), 'shard-0.db');
      for (const [from, to] of [[file, copy], [derivedFileOf(file), derivedFileOf(copy)]] as const) {
        const db = new Database(from);
        db.exec(`VACUUM INTO '${to}'`);
        db.close();
      }
      const altered = new Database(derivedFileOf(copy));
      altered.exec(sql);
      altered.close();
      const damaged = new ShardStore(copy);
      assert.throws(() => read(damaged), DamagedRowError, sql);
      damaged.close();
    }
    const db = new Database(derivedFileOf(file));
    db.exec('UPDATE due SET expires_at_ms = 1');
    db.close();
    const swept = new ShardStore(file);
    assert.deepEqual(swept.due.dueOf('test:acme', 10_000, 10), [], 'a damaged expiry row is never handed to the sweep');
    swept.close();
  });

  it('a file from before row checksums: its idempotency and expiry rows are summed at the first writable open and read back', () => {
    const file = path.join(tempDataDir('row-checks'), 'shard-0.db');
    const db = new Database(file);
    db.exec(`
      CREATE TABLE idem_log (seq INTEGER PRIMARY KEY, lsn INTEGER NOT NULL, partition INTEGER NOT NULL, owner TEXT NOT NULL,
        h INTEGER NOT NULL, scope TEXT NOT NULL, fingerprint TEXT NOT NULL, status INTEGER NOT NULL, json TEXT, error TEXT, at_ms INTEGER NOT NULL);
      CREATE TABLE due (owner TEXT NOT NULL, expires_at_ms INTEGER NOT NULL, partition INTEGER NOT NULL, id TEXT NOT NULL,
        lsn INTEGER NOT NULL, PRIMARY KEY (owner, expires_at_ms, partition, id)) WITHOUT ROWID;`);
    db.prepare('INSERT INTO idem_log VALUES (7, 7, 3, ?, ?, ?, ?, 201, ?, NULL, 1000)').run('test:acme', scopeHash(SCOPE), SCOPE, record.fingerprint, record.json);
    db.prepare("INSERT INTO due VALUES ('test:acme', 5000, 3, 'P1', 7)").run();
    db.close();
    const store = new ShardStore(file);
    assert.equal(store.readIdemAt(SCOPE, 7)?.json, record.json);
    assert.deepEqual(store.due.dueOf('test:acme', 10_000, 10).map((r) => r.id), ['P1']);
    store.close();
    const check = new Database(derivedFileOf(file), { readonly: true });
    assert.equal(check.prepare('SELECT count(*) FROM idem_log WHERE crc IS NULL').pluck().get(), 0);
    assert.equal(check.prepare('SELECT count(*) FROM due WHERE crc IS NULL').pluck().get(), 0);
    check.close();
  });
});

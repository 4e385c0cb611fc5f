// Owner numbers in the idempotency rows, on real sqlite files: a file whose `idem_log` names owners by
// text (the layout before numbers) moves at its next writable open and reads, locates and expires the
// same keys; damage stays damage through the move; a damaged number is never followed; a read-only open
// of an old file still reads it; a backup of a moved file restores the same records.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import Database from 'better-sqlite3';
import { ShardStore } from '../../src/store/shard-store.ts';
import { derivedFileOf } from '../../src/store/derived-file.ts';
import { DamagedRowError, damagedIdemRows, idemRowChecksum, type IdemRowFields } from '../../src/store/row-checks.ts';
import { scopeHash } from '../../src/store/scope-hash.ts';
import { SNAPSHOTS_SQL } from '../../src/store/snapshot-table.ts';
import { tempDataDir } from '../helpers/server.ts';

const OWNERS = ['test:acct_one', 'live:acct_two'] as const;

/** The idempotency table as builds before owner numbers wrote it (text owner and whole scope, checksummed). */
const TEXT_OWNER_SQL = `
  CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
  ${SNAPSHOTS_SQL}
  CREATE TABLE idem_log (
    seq INTEGER PRIMARY KEY, lsn INTEGER NOT NULL, partition INTEGER NOT NULL, owner TEXT NOT NULL,
    h INTEGER NOT NULL, scope TEXT NOT NULL, fingerprint TEXT NOT NULL, status INTEGER NOT NULL,
    json TEXT, error TEXT, at_ms INTEGER NOT NULL, crc INTEGER);
  CREATE INDEX idem_log_age ON idem_log (owner, at_ms, partition, h);`;

/** Twelve keys of two owners (keys with colons in them too), one scope that does not split as owner:key. */
function oldRows(): IdemRowFields[] {
  const rows: IdemRowFields[] = [];
  for (let i = 1; i <= 12; i += 1) {
    const owner = OWNERS[i % 2]!;
    const scope = `${owner}:key-${i}${i === 5 ? ':with:colons' : ''}`;
    rows.push({ lsn: i, partition: i % 4, owner, h: scopeHash(scope), scope, fingerprint: `fp${i}`, status: 201, json: `{"data":{"n":${i}}}`, error: null, at_ms: 1_000 * i });
  }
  const odd = 'not-a-scope';
  rows.push({ lsn: 13, partition: 0, owner: odd.slice(0, -1), h: scopeHash(odd), scope: odd, fingerprint: 'fp13', status: 409, json: null, error: '{"code":"X","message":"m"}', at_ms: 13_000 });
  return rows;
}

function oldFile(damagedScopes: readonly string[] = []): string {
  const file = path.join(tempDataDir('idem-owners'), 'shard-0.db');
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.exec(TEXT_OWNER_SQL);
  for (const r of oldRows()) {
    const crc = (idemRowChecksum(r) ^ (damagedScopes.includes(r.scope) ? 1 : 0)) >>> 0;
    db.prepare('INSERT INTO idem_log VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)').run(r.lsn, r.lsn, r.partition, r.owner, r.h, r.scope, r.fingerprint, r.status, r.json, r.error, r.at_ms, crc);
  }
  db.close();
  return file;
}

function readsBack(store: ShardStore): void {
  for (const r of oldRows()) {
    const got = store.readIdemAt(r.scope, r.lsn);
    assert.equal(got?.scope, r.scope, r.scope);
    assert.equal(got?.fingerprint, r.fingerprint);
    assert.equal(got?.json, r.json ?? undefined);
    assert.deepEqual(got?.error, r.error === null ? undefined : JSON.parse(r.error));
    assert.equal(store.readIdemAt(`${r.scope}x`, r.lsn), undefined, 'another scope at that seq is a miss');
  }
}

/** The front end's index as pairs, sorted (the order within it is the index's, not part of the contract). */
function locations(store: ShardStore): string[] {
  const flat = store.idemLocations();
  const pairs: string[] = [];
  for (let i = 0; i < flat.length; i += 2) pairs.push(`${flat[i]}@${flat[i + 1]}`);
  return pairs.sort();
}

describe('idempotency owner numbers', () => {
  it('a file whose idempotency rows name owners by text → the next writable open numbers them: the same records, locations and checksums, verify clean', () => {
    const file = oldFile();
    const before = new ShardStore(file, { readonly: true });
    const located = locations(before);
    before.close();
    const store = new ShardStore(file);
    const columns = (store.rowsDb.prepare("SELECT name FROM pragma_table_info('idem_log')").pluck().all() as string[]).join(',');
    assert.equal(columns, 'seq,lsn,partition,o,h,key,fingerprint,status,json,error,at_ms,crc');
    assert.deepEqual(store.rowsDb.prepare('SELECT owner FROM owner_numbers ORDER BY n').pluck().all(), [...OWNERS].sort());
    assert.equal(store.rowsDb.prepare("SELECT key FROM idem_log WHERE seq = 5").pluck().get(), 'key-5:with:colons');
    assert.equal(store.rowsDb.prepare("SELECT o || ' ' || key FROM idem_log WHERE seq = 13").pluck().get(), '0 not-a-scope', 'a scope that does not split is kept whole');
    readsBack(store);
    assert.deepEqual(locations(store), located);
    assert.deepEqual([...damagedIdemRows(store.rowsDb)], []);
    store.close();
    const again = new ShardStore(file);
    readsBack(again);
    again.close();
  });

  it('expiry after the move → each owner\'s own cutoff, by number; the rows it frees are the ones the text layout would have freed', () => {
    const store = new ShardStore(oldFile());
    const freed = store.idem.apply([{ lsn: 20, partition: 0, op: { op: 'expire', cutoffMs: { [OWNERS[0]]: 6_500 }, defaultCutoffMs: 3_500 } }]);
    const left = store.rowsDb.prepare('SELECT seq FROM idem_log ORDER BY seq').pluck().all();
    // Owner one (even i) expires below 6,500 ms (2, 4, 6), owner two and the whole scope below 3,500 (1, 3).
    assert.deepEqual(left, [5, 7, 8, 9, 10, 11, 12, 13]);
    assert.equal(freed.length, 5);
    const forgot = store.idem.apply([{ lsn: 21, partition: 0, op: { op: 'forget', scopes: [`${OWNERS[1]}:key-5:with:colons`, 'not-a-scope', 'test:nobody:key-1'] } }]);
    assert.equal(forgot.length, 2);
    store.close();
  });

  it('an old row whose scope was altered on disk → still damaged after the move: verify names it, a read raises DamagedRowError', () => {
    const damaged = `${OWNERS[1]}:key-3`;
    const store = new ShardStore(oldFile([damaged]));
    assert.deepEqual([...damagedIdemRows(store.rowsDb)], ['idempotency record of LSN 3 (partition 3)']);
    assert.throws(() => store.readIdemAt(damaged, 3), DamagedRowError);
    assert.equal(store.readIdemAt(`${OWNERS[1]}:key-1`, 1)?.fingerprint, 'fp1', 'other rows are served');
    store.close();
  });

  it('an owner number whose owner was altered on disk → verify names it, a read raises DamagedRowError, expiry leaves that owner\'s keys alone', () => {
    const file = oldFile();
    new ShardStore(file).close();
    // The first writable open moved the rows into the derived file.
    const db = new Database(derivedFileOf(file));
    db.prepare("UPDATE owner_numbers SET owner = 'test:acct_three' WHERE owner = ?").run(OWNERS[0]);
    db.close();
    const store = new ShardStore(file);
    const damage = [...damagedIdemRows(store.rowsDb)];
    assert.ok(damage.includes('idempotency owner number 2'), damage.join('; '));
    assert.throws(() => store.readIdemAt(`${OWNERS[0]}:key-2`, 2), DamagedRowError);
    store.idem.apply([{ lsn: 20, partition: 0, op: { op: 'expire', cutoffMs: {}, defaultCutoffMs: 1_000_000 } }]);
    assert.deepEqual(store.rowsDb.prepare('SELECT seq FROM idem_log ORDER BY seq').pluck().all(), [2, 4, 6, 8, 10, 12]);
    store.close();
  });

  it('a read-only open of a file not yet moved (verify beside an older server) → reads and locates as before, nothing written', () => {
    const file = oldFile();
    const store = new ShardStore(file, { readonly: true });
    readsBack(store);
    assert.equal(locations(store).length, oldRows().length);
    assert.deepEqual([...damagedIdemRows(store.rowsDb)], []);
    store.close();
    const db = new Database(file, { readonly: true });
    assert.equal(db.prepare("SELECT 1 FROM pragma_table_info('idem_log') WHERE name = 'owner'").get() !== undefined, true, 'still the old layout');
    db.close();
  });

  it('new rows → one number per owner and the key without it: the owner\'s characters are in no row (twice each before)', () => {
    const file = path.join(tempDataDir('idem-owners'), 'shard-0.db');
    const store = new ShardStore(file);
    const changes = oldRows().slice(0, 12).map((r) => ({ lsn: r.lsn, partition: r.partition, op: { op: 'put' as const, record: { scope: r.scope, fingerprint: r.fingerprint, status: r.status, json: r.json ?? undefined, atMs: r.at_ms } } }));
    store.idem.apply(changes);
    for (const r of oldRows().slice(0, 12)) assert.equal(store.readIdemAt(r.scope, r.lsn)?.json, r.json, r.scope);
    assert.deepEqual(store.rowsDb.prepare('SELECT DISTINCT o FROM idem_log ORDER BY o').pluck().all(), [1, 2]);
    const bytes = store.rowsDb.prepare("SELECT sum(length(CAST(key AS BLOB))) FROM idem_log").pluck().get() as number;
    const textBytes = oldRows().slice(0, 12).reduce((n, r) => n + r.scope.length + r.owner.length, 0);
    assert.equal(textBytes - bytes, oldRows().slice(0, 12).reduce((n, r) => n + 2 * r.owner.length + 1, 0), `${textBytes} → ${bytes}`);
    store.close();
  });
});

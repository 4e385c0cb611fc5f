// A wallet's statement line or a list row altered on disk (sqlite3 on the shard file) is never shown: the
// page answers 500 DATA_DAMAGED in the error envelope, the row is logged at fatal, verify names it, a backup
// refuses to copy it, and what is sound is served. Rows written before they carried a checksum get one at
// the next writable open. Real SQLite files, real processes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import Database from 'better-sqlite3';
import { client, idem, secretKey, startServer, tempDataDir, uniqueEmail, uniquePhone } from '../helpers/server.ts';
import { kobo } from '../helpers/cli.ts';
import { ShardStore } from '../../src/store/shard-store.ts';
import { entryRowChecksum, listRowChecksum, type EntryRowFields } from '../../src/store/row-checks.ts';

const key = secretKey();
const otherKey = secretKey();
const keys = [`${key}@entries`, `${otherKey}@neighbour`];

function sqlite3(file: string, sql: string): void {
  const run = spawnSync('sqlite3', [file, sql], { encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
}

/** A customer whose NGN wallet was credited by a settled bank transfer: one statement line. */
async function creditedWallet(api: ReturnType<typeof client>, amountMinor: number): Promise<string> {
  const made = await api('POST', '/v1/customers', { idempotencyKey: idem('c'), body: { name: 'Entry Test', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  const paid = await api('POST', '/v1/payments', { idempotencyKey: idem('p'), body: { customer_id: made.body.data.id, amount_minor: amountMinor, currency: 'NGN', method: 'bank_transfer' } });
  assert.equal(paid.status, 201, JSON.stringify(paid.body));
  assert.equal((await api('POST', `/v1/test_helpers/payments/${paid.body.data.id}/settle`)).status, 200);
  return made.body.data.wallets.find((w: { currency: string }) => w.currency === 'NGN').id as string;
}

test('a statement line altered on disk → GET entries answers 500 DATA_DAMAGED (never the altered balance), fatal logged; verify and snapshot name it; other statements served', { timeout: 90_000 }, async () => {
  let server = await startServer({ keys, shards: 1 });
  let api = client(server.baseUrl, key);
  const damagedWallet = await creditedWallet(api, 250_000);
  const soundWallet = await creditedWallet(api, 170_000);
  const soundBefore = await api('GET', `/v1/wallets/${soundWallet}/entries`);
  assert.equal(soundBefore.status, 200);
  assert.equal(soundBefore.body.data.length, 1);
  await server.stop(); // the stop writes every waiting derived row, entries included

  const file = path.join(server.dataDir, 'shard-0-lists.db');
  sqlite3(file, `UPDATE ledger_entries SET balance_after_minor = 99900000 WHERE wallet_id = '${damagedWallet}'`);
  server = await startServer({ keys, shards: 1, dataDir: server.dataDir });
  try {
    api = client(server.baseUrl, key);
    const read = await api('GET', `/v1/wallets/${damagedWallet}/entries`);
    assert.equal(read.status, 500);
    assert.equal(read.body.error.code, 'DATA_DAMAGED');
    assert.doesNotMatch(JSON.stringify(read.body), /99900000/);
    const fatal = server.output().split('\n').filter((l) => l.includes('"fatal"') && l.includes('ledger_entries'));
    assert.equal(fatal.length, 1, server.output().slice(-2_000));
    assert.deepEqual(await api('GET', `/v1/wallets/${soundWallet}/entries`), soundBefore);
  } finally {
    await server.stop();
  }
  const verify = kobo(server.dataDir, 'verify');
  assert.notEqual(verify.status, 0);
  assert.match(verify.stdout + verify.stderr, new RegExp(`ledger entry \\d+ of wallet ${damagedWallet} \\(LSN \\d+\\) fails its checksum`));
  const backup = kobo(server.dataDir, 'snapshot', '--out', path.join(tempDataDir('backup'), 'b.kobo'));
  assert.notEqual(backup.status, 0, 'a backup never copies a damaged statement line');
  assert.match(backup.stderr, /ledger_entries/);
});

test('entries written before they had a checksum → a writable open gives each its own; a later alteration is caught', () => {
  const file = path.join(tempDataDir('entries'), 'shard-0.db');
  const old = new Database(file);
  old.exec(`CREATE TABLE ledger_entries (
    wallet_id TEXT NOT NULL, seq INTEGER NOT NULL, txn_id TEXT NOT NULL, amount_minor INTEGER NOT NULL,
    balance_after_minor INTEGER NOT NULL, at_ms INTEGER NOT NULL, lsn INTEGER NOT NULL,
    PRIMARY KEY (wallet_id, seq)) WITHOUT ROWID`);
  const rows: EntryRowFields[] = [
    { wallet_id: 'wal_a', seq: 7_000, txn_id: 'txn_1', amount_minor: 500, balance_after_minor: 500, at_ms: 10, lsn: 7 },
    { wallet_id: 'wal_a', seq: 9_000, txn_id: 'txn_2', amount_minor: -200, balance_after_minor: 300, at_ms: 11, lsn: 9 },
  ];
  for (const r of rows) old.prepare('INSERT INTO ledger_entries VALUES (?, ?, ?, ?, ?, ?, ?)').run(r.wallet_id, r.seq, r.txn_id, r.amount_minor, r.balance_after_minor, r.at_ms, r.lsn);
  old.close();
  let store = new ShardStore(file);
  const crcs = store.listsDb!.prepare('SELECT crc FROM ledger_entries ORDER BY seq').pluck().all();
  assert.deepEqual(crcs, rows.map(entryRowChecksum));
  const page = store.entriesPage({ walletId: 'wal_a', seqAbove: 0, seqBelow: Number.MAX_SAFE_INTEGER, rows: 10, order: 'asc' });
  assert.deepEqual(page.map((e) => e.balanceAfterMinor), [500, 300]);
  store.listsDb!.prepare('UPDATE ledger_entries SET amount_minor = -100 WHERE seq = 9000').run();
  assert.throws(() => store.entriesPage({ walletId: 'wal_a', seqAbove: 0, seqBelow: Number.MAX_SAFE_INTEGER, rows: 10, order: 'asc' }), /ledger_entries row entry 9000 of wallet wal_a \(LSN 9\) fails its checksum/);
  store.close();
  store = new ShardStore(file, { readonly: true });
  assert.throws(() => store.entriesPage({ walletId: 'wal_a', seqAbove: 0, seqBelow: Number.MAX_SAFE_INTEGER, rows: 10, order: 'asc' }), /fails its checksum/);
  store.close();
});

test('an event row moved to another account on disk (its owner number altered) → that account\'s event list answers 500 DATA_DAMAGED, never the event; verify names the row', { timeout: 90_000 }, async () => {
  let server = await startServer({ keys, shards: 1 });
  const api = client(server.baseUrl, key);
  const other = client(server.baseUrl, otherKey);
  await creditedWallet(api, 310_000);
  const events = await api('GET', '/v1/events?limit=100');
  assert.equal(events.status, 200);
  const event = events.body.data.find((e: { event_type: string }) => e.event_type === 'payment.completed');
  assert.ok(event !== undefined, JSON.stringify(events.body));
  await creditedWallet(other, 120_000); // the neighbour account gets its own owner number in the file
  const neighbourBefore = await other('GET', '/v1/events?limit=100');
  assert.equal(neighbourBefore.status, 200);
  assert.ok(!JSON.stringify(neighbourBefore.body).includes(event.id));
  await server.stop();

  const file = path.join(server.dataDir, 'shard-0-lists.db');
  sqlite3(file, `UPDATE lists SET o = (SELECT n FROM list_owners WHERE owner LIKE '%neighbour%') WHERE id = '${event.id}'`);
  server = await startServer({ keys, shards: 1, dataDir: server.dataDir });
  try {
    const read = await client(server.baseUrl, otherKey)('GET', '/v1/events?limit=100');
    assert.equal(read.status, 500);
    assert.equal(read.body.error.code, 'DATA_DAMAGED');
    assert.ok(!JSON.stringify(read.body).includes(event.id), 'the moved event is never shown to the other account');
  } finally {
    await server.stop();
  }
  const verify = kobo(server.dataDir, 'verify');
  assert.notEqual(verify.status, 0);
  assert.match(verify.stdout + verify.stderr, new RegExp(`list row ${event.id} \\(kind 7, LSN \\d+\\) fails its checksum`));
});

test('list rows written before they had a checksum (and named customers by id) → a writable open gives each its own, over the numbered columns', () => {
  const file = path.join(tempDataDir('lists'), 'shard-0.db');
  const old = new Database(file);
  old.exec(`CREATE TABLE lists (o INTEGER NOT NULL, k INTEGER NOT NULL, id TEXT NOT NULL, customer_id TEXT, status TEXT, body TEXT,
    lsn INTEGER NOT NULL, PRIMARY KEY (o, k, id)) WITHOUT ROWID`);
  old.prepare('INSERT INTO lists VALUES (?, ?, ?, ?, ?, ?, ?)').run(1, 7, 'evt_1', 'cus_1', 'payment.completed', '', 12);
  old.prepare('INSERT INTO lists VALUES (?, ?, ?, ?, ?, ?, ?)').run(1, 3, 'pay_1', null, null, null, 13);
  old.close();
  const store = new ShardStore(file);
  const rows = store.listsDb!.prepare('SELECT o, k, id, c, status, body, lsn, crc FROM lists ORDER BY id').all() as Array<Parameters<typeof listRowChecksum>[0] & { crc: number }>;
  assert.equal(rows.length, 2);
  assert.deepEqual(rows.map((r) => r.c), [1, null], 'cus_1 numbered, the row without a customer has none');
  for (const row of rows) assert.equal(row.crc, listRowChecksum(row));
  store.close();
});

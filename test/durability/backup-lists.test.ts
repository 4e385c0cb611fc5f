// A backup carries the events and wallet ledger entries (they are derived rows no image holds): payments
// on two accounts, a backup taken online (server running) and one offline, each restored into a fresh
// data dir and started: GET /v1/events pages, GET /v1/events/{id} and every wallet's statement answer
// byte for byte what they answered before the backup, also after the restored server restarts. A
// damaged event or entry row is refused by restore (nothing moves); a backup without these tables
// (older builds) still restores. Real processes over HTTP, real SQLite files.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { client, idem, secretKey, startServer, tempDataDir, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';
import { kobo } from '../helpers/cli.ts';
import { writeManifest } from '../../src/cli/backup-manifest.ts';

// Accounts named so that their order by name is the reverse of the order their first rows were written
// in: a restore that copied the shard files' owner numbers would give each account the other's events.
const KEY_Z = secretKey();
const KEY_A = secretKey();
const KEYS = [`${KEY_Z}@zulu`, `${KEY_A}@alpha`];
const CUSTOMERS_PER_ACCOUNT = 3;
/**
 * Images every few records and the log truncated behind them: event rows point into archived log
 * records (the backup reads their bodies there), and at the online backup some rows are in the files,
 * others still wait in the server's memory (the backup's replay derives those).
 */
const CHURN = { KOBO_SNAPSHOT_EVERY_RECORDS: '6', KOBO_SNAPSHOT_INTERVAL_MS: '0', KOBO_WAL_RETAIN_RECORDS: '0', KOBO_WAL_SEGMENT_RECORDS: '4' };

interface Account {
  key: string;
  walletIds: string[];
  customerIds: string[];
}

/** One GET as the client received it: status and body text, untouched. */
async function raw(baseUrl: string, key: string, urlPath: string): Promise<string> {
  const response = await fetch(baseUrl + urlPath, { headers: { authorization: `Bearer ${key}` } });
  return `${response.status} ${await response.text()}`;
}

/** A list walked with starting_after, `limit` rows a page: each page's text, in order. */
async function walkRaw(baseUrl: string, key: string, listPath: string, limit: number): Promise<string[]> {
  const pages: string[] = [];
  const join = listPath.includes('?') ? '&' : '?';
  for (let cursor: string | null = null; pages.length < 1_000; ) {
    const text = await raw(baseUrl, key, `${listPath}${join}limit=${limit}${cursor === null ? '' : `&starting_after=${cursor}`}`);
    pages.push(text);
    assert.match(text, /^200 /, text);
    const body = JSON.parse(text.slice(4)) as { data: Array<{ id: string }>; has_more: boolean };
    if (!body.has_more) return pages;
    cursor = body.data.at(-1)!.id;
  }
  assert.fail(`${listPath}: more than 1,000 pages`);
}

/** What every list this task is about answers for the accounts, as text. */
async function answers(baseUrl: string, accounts: readonly Account[]): Promise<Record<string, string | string[]>> {
  const out: Record<string, string | string[]> = {};
  for (const account of accounts) {
    const name = account.key.slice(-6);
    out[`${name} events`] = await walkRaw(baseUrl, account.key, '/v1/events', 100);
    out[`${name} events by 3`] = await walkRaw(baseUrl, account.key, '/v1/events', 3);
    out[`${name} payment.completed`] = await walkRaw(baseUrl, account.key, '/v1/events?type=payment.completed', 100);
    out[`${name} events of a customer`] = await walkRaw(baseUrl, account.key, `/v1/events?customer_id=${account.customerIds[0]}`, 100);
    const ids = (JSON.parse((out[`${name} events`] as string[])[0]!.slice(4)) as { data: Array<{ id: string }> }).data.map((e) => e.id);
    for (const id of ids) out[`${name} event ${id}`] = await raw(baseUrl, account.key, `/v1/events/${id}`);
    for (const walletId of account.walletIds) {
      out[`${name} statement ${walletId}`] = await walkRaw(baseUrl, account.key, `/v1/wallets/${walletId}/entries`, 100);
      out[`${name} statement ${walletId} by 2`] = await walkRaw(baseUrl, account.key, `/v1/wallets/${walletId}/entries`, 2);
    }
  }
  return out;
}

/** Customers that are funded by a settled bank transfer and then pay twice from their wallet. */
async function trade(baseUrl: string, account: Account): Promise<void> {
  const api = client(baseUrl, account.key);
  for (let i = 0; i < CUSTOMERS_PER_ACCOUNT; i += 1) {
    const c = await api('POST', '/v1/customers', { idempotencyKey: idem('c'), body: { name: 'Lists Backup', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
    assert.equal(c.status, 201, JSON.stringify(c.body));
    account.customerIds.push(c.body.data.id);
    account.walletIds.push(c.body.data.wallets[0].id);
    await pay(baseUrl, account, c.body.data.id);
  }
}

async function pay(baseUrl: string, account: Account, customerId: string): Promise<void> {
  const api = client(baseUrl, account.key);
  const funded = await api('POST', '/v1/payments', { idempotencyKey: idem('fund'), body: { customer_id: customerId, amount_minor: 500_000, currency: 'NGN', method: 'bank_transfer' } });
  assert.equal(funded.status, 201, JSON.stringify(funded.body));
  assert.equal((await api('POST', `/v1/test_helpers/payments/${funded.body.data.id}/settle`)).status, 200);
  for (const amountMinor of [12_345, 6_789]) {
    const paid = await api('POST', '/v1/payments', { idempotencyKey: idem('pay'), body: { customer_id: customerId, amount_minor: amountMinor, currency: 'NGN', method: 'wallet' } });
    assert.equal(paid.status, 201, JSON.stringify(paid.body));
  }
}

function restoreInto(file: string, label: string): string {
  const dataDir = path.join(tempDataDir(label), 'data');
  const restored = kobo(dataDir, 'restore', file);
  assert.equal(restored.status, 0, restored.stderr + restored.stdout);
  const shards = [...restored.stderr.matchAll(/shard \d: \d+ partitions, (\d+) events, (\d+) wallet ledger entries restored/g)];
  assert.equal(shards.length, 2, restored.stderr);
  assert.ok(shards.reduce((n, m) => n + Number(m[1]), 0) > 0 && shards.reduce((n, m) => n + Number(m[2]), 0) > 0, restored.stderr);
  return dataDir;
}

/** Starts a server on a restored dir, compares, restarts it and compares again. */
async function assertRestoredAnswers(dataDir: string, accounts: readonly Account[], expected: Record<string, string | string[]>): Promise<void> {
  for (const start of ['first start', 'restart']) {
    const server = await startServer({ keys: KEYS, shards: 2, dataDir });
    try {
      assert.deepEqual(await answers(server.baseUrl, accounts), expected, `${start}: the restored lists differ`);
    } finally {
      await server.stop();
    }
  }
  const verify = kobo(dataDir, 'verify');
  assert.equal(verify.status, 0, verify.stdout + verify.stderr);
}

let server: TestServer;
const accounts: Account[] = [
  { key: KEY_Z, walletIds: [], customerIds: [] },
  { key: KEY_A, walletIds: [], customerIds: [] },
];
let onlineFile = '';
let onlineAnswers: Record<string, string | string[]> = {};
let offlineFile = '';
let offlineAnswers: Record<string, string | string[]> = {};
let snapshotOutput = '';

before(async () => {
  server = await startServer({ keys: KEYS, shards: 2, env: CHURN });
  try {
    for (const account of accounts) await trade(server.baseUrl, account);
    onlineAnswers = await answers(server.baseUrl, accounts);
    // Taken while the server runs: the newest rows wait in its memory, so the backup's replay derives them.
    onlineFile = path.join(tempDataDir('lists-backup'), 'online.kobo');
    const online = kobo(server.dataDir, 'snapshot', '--out', onlineFile);
    assert.equal(online.status, 0, online.stderr);
    snapshotOutput = online.stderr;
    // After the backup: in the offline one, not in the online one.
    await pay(server.baseUrl, accounts[1]!, accounts[1]!.customerIds[0]!);
    offlineAnswers = await answers(server.baseUrl, accounts);
  } finally {
    await server.stop();
  }
  // What the offline backup reads: event rows stored empty, their records archived by truncation.
  const pointing = [0, 1].map((shard) => {
    // The log's archive is in the shard file, the list rows in its list file.
    const db = new Database(path.join(server.dataDir, `shard-${shard}-lists.db`), { readonly: true });
    db.prepare('ATTACH DATABASE ? AS s').run(path.join(server.dataDir, `shard-${shard}.db`));
    try {
      const archive = db.prepare("SELECT 1 FROM s.sqlite_master WHERE name = 'log_archive'").get() !== undefined;
      const archivedUpTo = archive ? ((db.prepare('SELECT max(lsn_first + n - 1) FROM s.log_archive').pluck().get() as number | null) ?? 0) : 0;
      return { empty: db.prepare("SELECT count(*) FROM lists WHERE k = 7 AND body = ''").pluck().get() as number, intoArchive: db.prepare("SELECT count(*) FROM lists WHERE k = 7 AND body = '' AND lsn <= ?").pluck().get(archivedUpTo) as number };
    } finally {
      db.close();
    }
  });
  assert.ok(pointing.some((s) => s.intoArchive > 0), JSON.stringify(pointing));
  offlineFile = path.join(path.dirname(onlineFile), 'offline.kobo');
  const offline = kobo(server.dataDir, 'snapshot', '--out', offlineFile);
  assert.equal(offline.status, 0, offline.stderr);
});

describe('events and wallet statements in a backup', () => {
  it('kobo snapshot: the manifest counts the events and the ledger entries', () => {
    assert.match(snapshotOutput, /manifest: 64 partitions, .*ledger_entries [1-9]\d*.*list_events [1-9]\d*/);
    const events = JSON.parse((onlineAnswers[`${KEY_Z.slice(-6)} events`] as string[])[0]!.slice(4)) as { data: unknown[] };
    // Per customer: the funding payment's events and the two wallet payments'.
    assert.ok(events.data.length >= CUSTOMERS_PER_ACCOUNT * 3, `only ${events.data.length} events before the backup`);
  });

  it('online backup, restore into a fresh dir, start → events, each event by id and every statement as before the backup, byte for byte (and after a restart)', { timeout: 120_000 }, async () => {
    await assertRestoredAnswers(restoreInto(onlineFile, 'lists-online'), accounts, onlineAnswers);
  });

  it('offline backup, restore into a fresh dir, start → the same, including what happened after the online backup', { timeout: 120_000 }, async () => {
    assert.notDeepEqual(offlineAnswers, onlineAnswers, 'the payment after the online backup changed the lists');
    await assertRestoredAnswers(restoreInto(offlineFile, 'lists-offline'), accounts, offlineAnswers);
  });

  it('restore: an event or ledger entry row altered in the backup → refused by its checksum; one deleted → refused by the manifest; the data dir unchanged', { timeout: 60_000 }, () => {
    const dataDir = restoreInto(onlineFile, 'lists-damaged');
    const fingerprint = (): string => fs.readdirSync(dataDir).sort().map((f) => `${f}:${fs.statSync(path.join(dataDir, f)).size}:${fs.statSync(path.join(dataDir, f)).mtimeMs}`).join('|');
    const edits: Array<[string, string, RegExp]> = [
      ['event', "UPDATE list_events SET body = replace(body, '\"amount_minor\":', '\"amount_minor\":9') WHERE id = (SELECT max(id) FROM list_events)", /the event \S+ \(LSN \d+, shard \d\) fails its checksum/],
      ['event-owner', "UPDATE list_events SET owner = (SELECT max(owner) FROM list_events) WHERE id = (SELECT min(id) FROM list_events WHERE owner <> (SELECT max(owner) FROM list_events))", /the event \S+ .* fails its checksum/],
      ['entry', 'UPDATE ledger_entries SET balance_after_minor = balance_after_minor + 100 WHERE (shard, wallet_id, seq) = (SELECT shard, wallet_id, seq FROM ledger_entries ORDER BY seq DESC LIMIT 1)', /the ledger entry le_\d+ of wallet \S+ \(LSN \d+, shard \d\) fails its checksum/],
      ['event-gone', 'DELETE FROM list_events WHERE id = (SELECT min(id) FROM list_events)', /table list_events holds \d+ rows; its manifest lists \d+/],
      ['entry-gone', 'DELETE FROM ledger_entries WHERE (shard, wallet_id, seq) = (SELECT shard, wallet_id, seq FROM ledger_entries ORDER BY seq LIMIT 1)', /table ledger_entries holds \d+ rows; its manifest lists \d+/],
    ];
    for (const [name, sql, why] of edits) {
      const file = path.join(path.dirname(onlineFile), `damaged-${name}.kobo`);
      fs.copyFileSync(onlineFile, file);
      const db = new Database(file);
      assert.equal(db.prepare(sql).run().changes, 1, `${name}: the edit changed one row`);
      db.close();
      const before = fingerprint();
      const run = kobo(dataDir, 'restore', file);
      assert.notEqual(run.status, 0, `${name}: restored`);
      assert.match(run.stderr, why);
      assert.equal(fingerprint(), before, `${name}: the data dir is as it was`);
    }
  });

  it('restore: a backup written before events and entries travelled (no such tables, its own manifest) → restores as before; the resources are listed, the older events are not', { timeout: 120_000 }, async () => {
    const file = path.join(path.dirname(onlineFile), 'older.kobo');
    fs.copyFileSync(onlineFile, file);
    const db = new Database(file);
    db.exec("DROP TABLE list_events; DROP TABLE ledger_entries; DELETE FROM meta WHERE key = 'manifest'");
    writeManifest(db);
    db.close();
    const dataDir = path.join(tempDataDir('lists-older'), 'data');
    const restored = kobo(dataDir, 'restore', file);
    assert.equal(restored.status, 0, restored.stderr + restored.stdout);
    const started = await startServer({ keys: KEYS, shards: 2, dataDir });
    try {
      const account = accounts[0]!;
      const api = client(started.baseUrl, account.key);
      const customers = await api('GET', '/v1/customers?limit=100');
      assert.deepEqual(new Set(customers.body.data.map((c: { id: string }) => c.id)), new Set(account.customerIds));
      assert.deepEqual((await api('GET', '/v1/events')).body, { data: [], has_more: false });
      assert.deepEqual((await api('GET', `/v1/wallets/${account.walletIds[0]}/entries`)).body, { data: [], has_more: false });
      const wallet = await api('GET', `/v1/wallets/${account.walletIds[0]}`);
      assert.equal(wallet.status, 200, JSON.stringify(wallet.body));
      const statement = JSON.parse((onlineAnswers[`${KEY_Z.slice(-6)} statement ${account.walletIds[0]}`] as string[])[0]!.slice(4)) as { data: Array<{ balance_after_minor: number }> };
      assert.equal(wallet.body.data.balance_minor, statement.data[0]!.balance_after_minor, "the balance is the image's");
    } finally {
      await started.stop();
    }
  });
});

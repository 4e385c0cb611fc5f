// A backup carries a manifest (partition set, row count of every table, a digest of every row) and
// restore checks it before anything moves: rows deleted from a backup (a partition's image, the
// idempotency records, fifty finished entities, a key) or altered where no row checksum looks are
// refused, and the data dir stays as it was. A backup without a manifest (an older one) restores only
// with --allow-no-manifest. Real SQLite files, real processes.
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { client, idem, secretKey, startServer, tempDataDir, uniqueEmail, uniquePhone } from '../helpers/server.ts';
import { kobo } from '../helpers/cli.ts';

const key = secretKey();
const keys = [`${key}@manifest`];
const PAYMENTS = 30;

let dataDir: string;
let good: string;
let paid: { key: string; body: object; response: unknown };
let snapshotOutput = '';

before(async () => {
  const server = await startServer({ keys, shards: 2 });
  const api = client(server.baseUrl, key);
  const c = await api('POST', '/v1/customers', { idempotencyKey: idem('c'), body: { name: 'Manifest Test', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
  assert.equal(c.status, 201);
  for (let i = 0; i < PAYMENTS; i += 1) {
    const body = { customer_id: c.body.data.id, amount_minor: 10_000 + i, currency: 'NGN', method: 'bank_transfer' };
    const k = idem('pay');
    const r = await api('POST', '/v1/payments', { idempotencyKey: k, body });
    assert.equal(r.status, 201);
    assert.equal((await api('POST', `/v1/test_helpers/payments/${r.body.data.id}/settle`)).status, 200);
    paid = { key: k, body, response: r.body };
  }
  await server.stop();
  dataDir = server.dataDir;
  good = path.join(tempDataDir('manifest'), 'good.kobo');
  const snap = kobo(dataDir, 'snapshot', '--out', good);
  assert.equal(snap.status, 0, snap.stderr);
  snapshotOutput = snap.stderr;
});

/** A copy of the good backup with `sql` run on it. */
function damagedCopy(name: string, sql: string): string {
  const file = path.join(path.dirname(good), `${name}.kobo`);
  fs.copyFileSync(good, file);
  const db = new Database(file);
  const changed = db.prepare(sql).run().changes;
  db.close();
  assert.ok(changed > 0, `${name}: the edit changed nothing`);
  return file;
}

const fingerprint = (): string => fs.readdirSync(dataDir).sort().map((f) => `${f}:${fs.statSync(path.join(dataDir, f)).size}:${fs.statSync(path.join(dataDir, f)).mtimeMs}`).join('|');

function refused(file: string, why: RegExp, ...flags: string[]): void {
  const before = fingerprint();
  const run = kobo(dataDir, 'restore', file, ...flags);
  assert.notEqual(run.status, 0, `${path.basename(file)} was restored:\n${run.stdout}`);
  assert.match(run.stderr, why);
  assert.equal(fingerprint(), before, 'the data dir is as it was');
  assert.deepEqual(fs.readdirSync(path.dirname(dataDir)).filter((f) => f.startsWith(`${path.basename(dataDir)}.`)), [], 'nothing moved aside, nothing half-built');
}

test('restore refuses a backup missing one partition image (it restored "63 partitions" and started)', { timeout: 60_000 }, () => {
  refused(damagedCopy('partition', 'DELETE FROM partitions WHERE partition = 17'), /holds 63 of its 64 partitions \(missing: 17\)/);
});

test('restore refuses a backup whose idempotency records were deleted (an acknowledged key would have created a second payment)', { timeout: 60_000 }, () => {
  refused(damagedCopy('idem', 'DELETE FROM idem'), /table idem holds 0 rows; its manifest lists \d+/);
});

test('restore refuses a backup missing fifty finished entities, or its API key', { timeout: 60_000 }, () => {
  refused(damagedCopy('cold', 'DELETE FROM cold WHERE (kind, id, lsn) IN (SELECT kind, id, lsn FROM cold LIMIT 50)'), /table cold holds \d+ rows; its manifest lists \d+/);
  refused(damagedCopy('key', 'DELETE FROM api_keys'), /table api_keys holds 0 rows; its manifest lists 1/);
});

test('restore refuses a backup altered where no row checksum looks (a key revoked) by its digest, and one whose manifest was removed', { timeout: 60_000 }, () => {
  refused(damagedCopy('key-status', "UPDATE api_keys SET status = 'revoked'"), /differ from its manifest's digest/);
  refused(damagedCopy('manifest-gone', "DELETE FROM meta WHERE key = 'manifest'"), /its manifest is missing/);
});

test('an older backup (no manifest) is refused unless --allow-no-manifest; with it, it restores (partitions still counted) and keys replay', { timeout: 120_000 }, async () => {
  const legacy = damagedCopy('legacy', "UPDATE meta SET value = 'kobo-backup-1' WHERE key = 'format'");
  const db = new Database(legacy);
  db.prepare("DELETE FROM meta WHERE key = 'manifest'").run();
  db.close();
  refused(legacy, /written before backups carried a manifest.*--allow-no-manifest/);
  const legacyShort = damagedCopy('legacy-short', "DELETE FROM partitions WHERE partition = 3");
  const short = new Database(legacyShort);
  short.prepare("UPDATE meta SET value = 'kobo-backup-1' WHERE key = 'format'").run();
  short.prepare("DELETE FROM meta WHERE key = 'manifest'").run();
  short.close();
  refused(legacyShort, /holds 63 of its 64 partitions/, '--allow-no-manifest');
  const restored = kobo(dataDir, 'restore', legacy, '--allow-no-manifest');
  assert.equal(restored.status, 0, restored.stderr);
  assert.match(restored.stdout, /restored 64 partitions/);
  const server = await startServer({ keys, shards: 2, dataDir });
  try {
    const replay = await client(server.baseUrl, key)('POST', '/v1/payments', { idempotencyKey: paid.key, body: paid.body });
    assert.equal(replay.status, 201);
    assert.deepEqual(replay.body, paid.response, 'the acknowledged key replays, no second payment');
  } finally {
    await server.stop();
  }
});

test('the complete backup (its manifest shown by snapshot) restores; its acknowledged keys replay', { timeout: 120_000 }, async () => {
  assert.match(snapshotOutput, /manifest: 64 partitions, .*cold \d+.*idem \d+.*; sha256:[0-9a-f]{64}/);
  const restored = kobo(dataDir, 'restore', good);
  assert.equal(restored.status, 0, restored.stderr);
  const server = await startServer({ keys, shards: 2, dataDir });
  try {
    const replay = await client(server.baseUrl, key)('POST', '/v1/payments', { idempotencyKey: paid.key, body: paid.body });
    assert.deepEqual([replay.status, replay.body], [201, paid.response]);
  } finally {
    await server.stop();
  }
  assert.equal(kobo(dataDir, 'verify').status, 0);
});

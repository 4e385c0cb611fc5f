// Recovery from the shard files: torn tail cut, corruption refused, snapshots faithful to the WAL,
// backup and restore round trip, and a data dir's shard count enforced. Real SQLite files, real processes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import fs from 'node:fs';
import Database from 'better-sqlite3';
import { derivedFileOf } from '../../src/store/derived-file.ts';
import { client, idem, secretKey, startServer, tempDataDir, uniqueEmail, uniquePhone } from '../helpers/server.ts';
import { kobo } from '../helpers/cli.ts';
import { damageRowOf, logRecords } from '../helpers/log.ts';

const key = secretKey();
const keys = [`${key}@recovery`];

async function seed(baseUrl: string, count: number): Promise<Array<{ id: string; walletId: string; key: string; body: object; response: unknown }>> {
  const api = client(baseUrl, key);
  const out = [];
  for (let i = 0; i < count; i += 1) {
    const body = { name: `Rec ${i}`, email: uniqueEmail(), phone: uniquePhone(), country_code: 'KE' };
    const k = idem('seed');
    const r = await api('POST', '/v1/customers', { idempotencyKey: k, body });
    assert.equal(r.status, 201);
    out.push({ id: r.body.data.id, walletId: r.body.data.wallets[0].id, key: k, body, response: r.body });
  }
  return out;
}

function shardWithRecords(dataDir: string): { file: string; max: number; batches: number } {
  for (const name of ['shard-0.db', 'shard-1.db']) {
    const file = path.join(dataDir, name);
    const records = logRecords(file);
    const batches = new Set(records.map((r) => r.batch)).size;
    if (records.length > 0 && batches >= 3) return { file, max: records[records.length - 1]!.lsn, batches };
  }
  throw new Error('no shard with three batches');
}

test('recovery: torn final WAL record → cut at start, earlier records intact', { timeout: 60_000 }, async () => {
  let server = await startServer({ keys });
  const made = await seed(server.baseUrl, 12);
  await server.kill();
  const { file, max } = shardWithRecords(server.dataDir);
  const torn = damageRowOf(file, max);
  assert.equal(torn.n, 1, 'one request at a time: the final batch holds one record');
  server = await startServer({ keys, dataDir: server.dataDir });
  try {
    assert.match(server.output(), /cut 1 torn WAL record/);
    const api = client(server.baseUrl, key);
    const found = await Promise.all(made.map((m) => api('GET', `/v1/customers/${m.id}`)));
    const lost = found.filter((r) => r.status === 404).length;
    assert.equal(lost, 1, 'exactly the torn record is gone');
  } finally {
    await server.stop();
  }
});

test('recovery: corrupt record before the final batch → start refuses, verify names it', { timeout: 60_000 }, async () => {
  let server = await startServer({ keys });
  await seed(server.baseUrl, 12);
  await server.kill();
  const { file } = shardWithRecords(server.dataDir);
  const first = { lsn: logRecords(file)[0]!.lsn };
  damageRowOf(file, first.lsn);
  const verify = kobo(server.dataDir, 'verify');
  assert.notEqual(verify.status, 0);
  assert.match(verify.stderr, new RegExp(`WAL record ${first.lsn} fails its checksum`));
  await assert.rejects(startServer({ keys, dataDir: server.dataDir }), /fails its checksum and is not in the final batch/);
});

test('recovery: snapshot + WAL tail equals full replay; damaged newest snapshot falls back', { timeout: 60_000 }, async () => {
  let server = await startServer({ keys });
  const first = await seed(server.baseUrl, 6);
  await server.stop(); // graceful: every partition snapshotted
  server = await startServer({ keys, dataDir: server.dataDir });
  const second = await seed(server.baseUrl, 6);
  await server.kill();
  const verify = kobo(server.dataDir, 'verify');
  assert.equal(verify.status, 0, verify.stderr);
  assert.match(verify.stdout, /12 customers/);
  // Damage every newest snapshot: recovery must fall back (older image or full replay) and lose nothing.
  for (const name of ['shard-0.db', 'shard-1.db']) {
    const db = new Database(path.join(server.dataDir, name));
    db.prepare('UPDATE snapshots SET crc = crc + 1 WHERE (partition, lsn) IN (SELECT partition, max(lsn) FROM snapshots GROUP BY partition)').run();
    db.close();
  }
  server = await startServer({ keys, dataDir: server.dataDir });
  try {
    const api = client(server.baseUrl, key);
    for (const m of [...first, ...second]) assert.equal((await api('GET', `/v1/customers/${m.id}`)).status, 200);
  } finally {
    await server.stop();
  }
});

test('ops: kobo snapshot while running, restore into a fresh dir → same state, keys replay, writes continue', { timeout: 90_000 }, async () => {
  let server = await startServer({ keys });
  const made = await seed(server.baseUrl, 5);
  const api = client(server.baseUrl, key);
  const pay = await api('POST', '/v1/payments', { idempotencyKey: idem('p'), body: { customer_id: made[0]!.id, amount_minor: 250_000, currency: 'KES', method: 'bank_transfer' } });
  assert.equal(pay.status, 201, JSON.stringify(pay.body));
  assert.equal((await api('POST', `/v1/test_helpers/payments/${pay.body.data.id}/settle`)).status, 200);
  const walletBefore = (await api('GET', `/v1/wallets/${made[0]!.walletId}`)).body.data;
  const backupFile = path.join(tempDataDir('backup'), 'b.kobo');
  const snap = kobo(server.dataDir, 'snapshot', '--out', backupFile);
  assert.equal(snap.status, 0, snap.stderr);
  assert.match(snap.stdout, /64 partitions/);
  const refused = kobo(server.dataDir, 'restore', backupFile);
  assert.notEqual(refused.status, 0, 'restore must refuse while the server runs');
  assert.match(refused.stderr, /stop it first/);
  await server.stop();

  const restored = kobo(server.dataDir, 'restore', backupFile);
  assert.equal(restored.status, 0, restored.stderr);
  assert.match(restored.stdout, /previous data kept at/);
  server = await startServer({ keys, dataDir: server.dataDir });
  try {
    const api2 = client(server.baseUrl, key);
    assert.deepEqual((await api2('GET', `/v1/wallets/${made[0]!.walletId}`)).body.data, walletBefore);
    const replay = await api2('POST', '/v1/customers', { idempotencyKey: made[1]!.key, body: made[1]!.body });
    assert.equal(replay.status, 201);
    assert.deepEqual(replay.body, made[1]!.response);
    const dup = await api2('POST', '/v1/customers', { idempotencyKey: idem('dup'), body: { ...made[2]!.body, phone: uniquePhone() } });
    assert.equal(dup.status, 409, 'the uniqueness index is rebuilt from restored state');
    assert.equal((await seed(server.baseUrl, 2)).length, 2);
  } finally {
    await server.stop();
  }
  const verify = kobo(server.dataDir, 'verify');
  assert.equal(verify.status, 0, verify.stderr);
});

test('ops: a damaged backup (a finished row altered, a page overwritten) → restore refuses; the data dir is untouched and nothing half-built is left', { timeout: 90_000 }, async () => {
  const server = await startServer({ keys });
  const made = await seed(server.baseUrl, 3);
  const api = client(server.baseUrl, key);
  const pay = await api('POST', '/v1/payments', { idempotencyKey: idem('p'), body: { customer_id: made[0]!.id, amount_minor: 250_000, currency: 'KES', method: 'bank_transfer' } });
  assert.equal((await api('POST', `/v1/test_helpers/payments/${pay.body.data.id}/settle`)).status, 200);
  await server.stop();
  const dir = tempDataDir('damaged');
  const good = path.join(dir, 'good.kobo');
  assert.equal(kobo(server.dataDir, 'snapshot', '--out', good).status, 0);
  const fingerprint = (): string => fs.readdirSync(server.dataDir).sort().map((f) => `${f}:${fs.statSync(path.join(server.dataDir, f)).size}:${fs.statSync(path.join(server.dataDir, f)).mtimeMs}`).join('|');
  const before = fingerprint();

  const altered = path.join(dir, 'altered.kobo');
  fs.copyFileSync(good, altered);
  const db = new Database(altered);
  assert.ok((db.prepare('SELECT count(*) AS n FROM cold').get() as { n: number }).n > 0, 'the backup holds finished entities');
  // A whole body is stored deflated (cold-codec.ts) or as text (rows a backup derived itself): one byte
  // of either changes, its checksum does not.
  const changed = db.prepare(`UPDATE cold SET body = CASE WHEN typeof(body) = 'blob' THEN zeroblob(length(body)) ELSE replace(body, '"status"', '"statuz"') END
    WHERE (kind, id, lsn) = (SELECT kind, id, lsn FROM cold WHERE body != '' AND (typeof(body) = 'blob' OR body LIKE '%"status"%') LIMIT 1)`).run().changes;
  assert.equal(changed, 1, 'a finished body was altered');
  const page = (db.prepare("SELECT pageno FROM dbstat WHERE name = 'api_keys' AND pagetype = 'leaf' LIMIT 1").get() as { pageno: number }).pageno;
  const pageSize = db.pragma('page_size', { simple: true }) as number;
  db.close();
  const overwritten = path.join(dir, 'overwritten.kobo');
  fs.copyFileSync(good, overwritten);
  const fd = fs.openSync(overwritten, 'r+');
  fs.writeSync(fd, Buffer.alloc(16, 0xa5), 0, 16, (page - 1) * pageSize);
  fs.closeSync(fd);

  const garbage = path.join(dir, 'garbage.kobo');
  fs.writeFileSync(garbage, 'this is not a backup at all, just some text\n'.repeat(100));
  const truncated = path.join(dir, 'truncated.kobo');
  fs.writeFileSync(truncated, fs.readFileSync(good).subarray(0, 1_000));

  for (const [file, why] of [[altered, /fails its checksum/], [overwritten, /damaged|malformed/], [garbage, /is not a kobo backup, or is damaged/], [truncated, /is not a kobo backup, or is damaged|damaged/]] as const) {
    const refused = kobo(server.dataDir, 'restore', file);
    assert.notEqual(refused.status, 0, `${path.basename(file)} restored:\n${refused.stdout}`);
    assert.match(refused.stderr, why);
    assert.equal(fingerprint(), before, 'the data dir is as it was');
    const siblings = fs.readdirSync(path.dirname(server.dataDir)).filter((f) => f.startsWith(`${path.basename(server.dataDir)}.`));
    assert.deepEqual(siblings, [], 'nothing moved aside, nothing half-built');
  }
  const verify = kobo(server.dataDir, 'verify');
  assert.equal(verify.status, 0, verify.stderr);

  // A snapshot that fails (here: the data dir's shard file is unreadable) leaves no file at --out.
  const shardFile = path.join(server.dataDir, 'shard-0.db');
  const saved = fs.readFileSync(shardFile);
  fs.writeFileSync(shardFile, 'not sqlite'.repeat(1_000));
  const failedOut = path.join(dir, 'failed.kobo');
  const failed = kobo(server.dataDir, 'snapshot', '--out', failedOut);
  fs.writeFileSync(shardFile, saved);
  assert.notEqual(failed.status, 0, failed.stdout);
  assert.deepEqual(fs.readdirSync(dir).filter((f) => f.startsWith('failed.kobo')), [], 'no backup-looking file, no partial');
});

test('ops: verify reads every table: an overwritten page of the idempotency records is a violation, exit non-zero', { timeout: 90_000 }, async () => {
  const server = await startServer({ keys, shards: 1 });
  await seed(server.baseUrl, 40);
  await server.stop();
  assert.equal(kobo(server.dataDir, 'verify').status, 0, 'clean before');
  // The idempotency records are in the shard's derived file; its journal is folded in first, so the
  // overwritten page is the one every reader sees.
  const file = derivedFileOf(path.join(server.dataDir, 'shard-0.db'));
  const db = new Database(file);
  db.pragma('wal_checkpoint(TRUNCATE)');
  const page = (db.prepare("SELECT pageno FROM dbstat WHERE name = 'idem_log' AND pagetype = 'leaf' ORDER BY pageno LIMIT 1").get() as { pageno: number } | undefined)?.pageno;
  const pageSize = db.pragma('page_size', { simple: true }) as number;
  db.close();
  assert.ok(page !== undefined, 'the idempotency records have a leaf page');
  const fd = fs.openSync(file, 'r+');
  fs.writeSync(fd, Buffer.alloc(64, 0x5a), 0, 64, (page - 1) * pageSize + pageSize - 200);
  fs.writeSync(fd, Buffer.alloc(8, 0xff), 0, 8, (page - 1) * pageSize);
  fs.closeSync(fd);
  const verify = kobo(server.dataDir, 'verify');
  assert.notEqual(verify.status, 0, `verify passed a damaged idempotency page:\n${verify.stdout}`);
  assert.doesNotMatch(verify.stderr, /\n\s+at /, 'a report, not a stack trace');
});

test('start: KOBO_SHARDS differs from the data dir layout → refuses with a clear message', { timeout: 30_000 }, async () => {
  const server = await startServer({ keys, shards: 2 });
  await server.stop();
  await assert.rejects(startServer({ keys, dataDir: server.dataDir, shards: 1 }), /created with KOBO_SHARDS=2/);
  assert.ok(fs.existsSync(path.join(server.dataDir, 'layout.json')));
});

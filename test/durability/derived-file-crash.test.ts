// The cold, idempotency and expiry rows in the derived file across kill -9 (issue #22): they go into an open
// transaction of the derived file a chunk a turn and commit every few thousand rows, while partition images
// are taken every few hundred records; replay derives again only what follows the images. Checked over HTTP:
// killed during load, every acknowledged payment reads back and its idempotent replay answers the same bytes;
// a key freed by expiry and reused before the kill answers for its new request, never for the old one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import Database from 'better-sqlite3';
import { derivedFileOf } from '../../src/store/derived-file.ts';
import { COLD_SQL } from '../../src/store/cold-table.ts';
import { IDEM_LOG_SQL } from '../../src/store/idem-log.ts';
import { DUE_SQL } from '../../src/store/due-log.ts';
import { client, idem, secretKey, startServer, tempDataDir, uniqueEmail, uniquePhone } from '../helpers/server.ts';
import { kobo } from '../helpers/cli.ts';

const key = secretKey();
/** Images every 300 records, so several image rounds fall inside the run, between derived-file commits. */
const env = { KOBO_SNAPSHOT_EVERY_RECORDS: '300' };
/** The load stops by itself: at most this many payments, killed once half of them are acknowledged. */
const PAYMENTS_MAX = 3_000;
const KILL_AFTER_ACKS = 1_500;
const IN_FLIGHT = 16;

test('derived file: kill -9 during load with images → every acknowledged payment reads back and replays the same bytes; verify clean', { timeout: 180_000 }, async () => {
  const dataDir = tempDataDir('kobo-derived-crash');
  let server = await startServer({ keys: [`${key}@derivedcrash`], dataDir, shards: 2, env });
  const acknowledged: Array<{ key: string; id: string; text: string }> = [];
  let body = '';
  try {
    const api = client(server.baseUrl, key);
    const customer = await api('POST', '/v1/customers', { body: { name: 'Crash', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' }, idempotencyKey: idem('c') });
    assert.equal(customer.status, 201);
    body = JSON.stringify({ customer_id: customer.body.data.id, amount_minor: 10_000, currency: 'NGN', method: 'bank_transfer' });
    let next = 0;
    let killed: Promise<void> | null = null;
    await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
      while (next < PAYMENTS_MAX && killed === null) {
        next += 1;
        const idemKey = idem('p');
        let response: Response;
        try {
          response = await fetch(`${server.baseUrl}/v1/payments`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': idemKey }, body });
        } catch {
          return; // killed: never acknowledged
        }
        const text = await response.text().catch(() => null);
        if (text === null || response.status !== 201) return;
        acknowledged.push({ key: idemKey, id: (JSON.parse(text) as { data: { id: string } }).data.id, text });
        // Killed while the other requests are in flight, rows waiting in memory and in the open transaction.
        if (acknowledged.length === KILL_AFTER_ACKS) killed = server.kill();
      }
    }));
    await killed;
    assert.ok(acknowledged.length >= KILL_AFTER_ACKS, `only ${acknowledged.length} acknowledged`);

    server = await startServer({ keys: [`${key}@derivedcrash`], dataDir, shards: 2, env });
    const after = client(server.baseUrl, key);
    for (const payment of acknowledged) {
      const read = await after('GET', `/v1/payments/${payment.id}`);
      assert.equal(read.status, 200, `payment ${payment.id} lost`);
      const replay = await fetch(`${server.baseUrl}/v1/payments`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': payment.key }, body });
      assert.equal(replay.status, 201);
      assert.equal(await replay.text(), payment.text, `the replay of ${payment.key} changed`);
    }
  } finally {
    await server.stop();
  }
  const verify = kobo(dataDir, 'verify');
  assert.equal(verify.status, 0, verify.stdout + verify.stderr);
});

test('derived file: a key freed by expiry and reused, then kill -9 → after the restart it answers for the new request, the old one never comes back; verify clean', { timeout: 120_000 }, async () => {
  const dataDir = tempDataDir('kobo-derived-expiry');
  const sweepEnv = { ...env, KOBO_IDEMPOTENCY_SWEEP_MS: '50', KOBO_SHARD_MODE: 'inline' };
  let server = await startServer({ keys: [`${key}@derivedexp`], dataDir, shards: 1, env: sweepEnv });
  const reused = idem('reused');
  const firstBody = { name: 'First', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' };
  const secondBody = { name: 'Second', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' };
  let second: { status: number; body: { data: { id: string } } };
  const later: Array<{ key: string; body: object; id: string }> = [];
  try {
    const api = client(server.baseUrl, key);
    const first = await api('POST', '/v1/customers', { idempotencyKey: reused, body: firstBody });
    assert.equal(first.status, 201);
    // Past retention on the account's clock: the sweep expires the key (its row deleted in the derived file).
    assert.equal((await api('POST', '/v1/test_helpers/clock/advance', { body: { seconds: 49 * 3_600 } })).status, 200);
    second = await until(async () => api('POST', '/v1/customers', { idempotencyKey: reused, body: secondBody }), (r) => r.status === 201, 5_000);
    assert.notEqual(second.body.data.id, first.body.data.id);
    for (let i = 0; i < 20; i += 1) {
      const k = idem('later');
      const b = { name: `Later ${i}`, email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' };
      const r = await api('POST', '/v1/customers', { idempotencyKey: k, body: b });
      assert.equal(r.status, 201);
      later.push({ key: k, body: b, id: r.body.data.id });
    }
    await server.kill();

    server = await startServer({ keys: [`${key}@derivedexp`], dataDir, shards: 1, env: sweepEnv });
    const after = client(server.baseUrl, key);
    const replay = await after('POST', '/v1/customers', { idempotencyKey: reused, body: secondBody });
    assert.equal(replay.status, 201);
    assert.deepEqual(replay.body, second.body, 'the reused key answers for its new request');
    const old = await after('POST', '/v1/customers', { idempotencyKey: reused, body: firstBody });
    assert.equal(old.status, 409, `the expired request came back: ${JSON.stringify(old.body)}`);
    for (const l of later) {
      const again = await after('POST', '/v1/customers', { idempotencyKey: l.key, body: l.body });
      assert.equal(again.body.data?.id, l.id);
    }
  } finally {
    await server.stop();
  }
  const verify = kobo(dataDir, 'verify');
  assert.equal(verify.status, 0, verify.stdout + verify.stderr);
});

/** Puts a stopped data dir's cold, idempotency and expiry rows back in its shard files, as a build before #22 kept them. */
function toOldLayout(dataDir: string, shards: number): void {
  for (let shard = 0; shard < shards; shard += 1) {
    const file = path.join(dataDir, `shard-${shard}.db`);
    const db = new Database(file);
    db.exec(`${COLD_SQL}\n${IDEM_LOG_SQL}\n${DUE_SQL}`);
    db.prepare('ATTACH DATABASE ? AS d').run(derivedFileOf(file));
    for (const table of ['owner_numbers', 'idem_log', 'due', 'cold']) db.exec(`INSERT INTO main.${table} SELECT * FROM d.${table}; DROP TABLE d.${table};`);
    db.exec("DELETE FROM d.list_meta WHERE key = 'moved_rows'");
    db.exec('DETACH DATABASE d');
    db.close();
  }
}

test('derived file: a data dir whose shard files hold the cold, idempotency and expiry rows (before #22) → verify reads them there; the first start moves them: every payment reads and replays the same; verify clean', { timeout: 120_000 }, async () => {
  const dataDir = tempDataDir('kobo-derived-upgrade');
  let server = await startServer({ keys: [`${key}@derivedup`], dataDir, shards: 2 });
  const made: Array<{ key: string; id: string; text: string; body: string }> = [];
  try {
    const api = client(server.baseUrl, key);
    const customer = await api('POST', '/v1/customers', { body: { name: 'Upgrade', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' }, idempotencyKey: idem('c') });
    assert.equal(customer.status, 201);
    for (let i = 0; i < 40; i += 1) {
      const idemKey = idem('u');
      const body = JSON.stringify({ customer_id: customer.body.data.id, amount_minor: 10_000 + i, currency: 'NGN', method: 'bank_transfer' });
      const response = await fetch(`${server.baseUrl}/v1/payments`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': idemKey }, body });
      const text = await response.text();
      assert.equal(response.status, 201, text);
      made.push({ key: idemKey, id: (JSON.parse(text) as { data: { id: string } }).data.id, text, body });
    }
    await server.stop(); // images taken: the payments' rows are only in the files, not replayed again
    toOldLayout(dataDir, 2);
    const before = kobo(dataDir, 'verify');
    assert.equal(before.status, 0, `verify of the old layout: ${before.stdout}${before.stderr}`);

    server = await startServer({ keys: [`${key}@derivedup`], dataDir, shards: 2 });
    const after = client(server.baseUrl, key);
    for (const payment of made) {
      assert.equal((await after('GET', `/v1/payments/${payment.id}`)).status, 200, `payment ${payment.id} lost in the move`);
      const replay = await fetch(`${server.baseUrl}/v1/payments`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': payment.key }, body: payment.body });
      assert.equal(await replay.text(), payment.text, `the replay of ${payment.key} changed`);
    }
  } finally {
    await server.stop();
  }
  for (let shard = 0; shard < 2; shard += 1) {
    const db = new Database(path.join(dataDir, `shard-${shard}.db`), { readonly: true });
    const left = db.prepare("SELECT count(*) FROM sqlite_master WHERE name IN ('cold', 'idem_log', 'due', 'owner_numbers')").pluck().get();
    db.close();
    assert.equal(left, 0, `shard ${shard}: the tables left the shard file`);
  }
  const verify = kobo(dataDir, 'verify');
  assert.equal(verify.status, 0, verify.stdout + verify.stderr);
});

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, ms: number): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

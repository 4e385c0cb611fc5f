// Derived rows are checked when they are read: a finished entity, an idempotency record or an expiry row
// altered on disk (sqlite3 on the shard file, as an audit did) is never served or acted on. A request
// that needs one gets 500 DATA_DAMAGED in the error envelope and the row is logged at fatal; a start
// that needs one refuses, naming it; verify names them all. Real SQLite files, real processes.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import Database from 'better-sqlite3';
import { derivedFileOf } from '../../src/store/derived-file.ts';
import { client, idem, secretKey, startServer, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';
import { kobo } from '../helpers/cli.ts';
import { until } from '../helpers/wait.ts';
import { damageRowOf, logRecords } from '../helpers/log.ts';

const key = secretKey();
const keys = [`${key}@damage`];

/** Runs SQL on a stopped server's shard file with the sqlite3 shell, as an operator (or an audit) would. */
function sqlite3(file: string, sql: string): void {
  const run = spawnSync('sqlite3', [file, sql], { encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
}

async function customer(api: ReturnType<typeof client>): Promise<string> {
  const r = await api('POST', '/v1/customers', { idempotencyKey: idem('c'), body: { name: 'Damage Test', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body.data.id as string;
}

const fatalLines = (server: TestServer): Array<Record<string, unknown>> =>
  server.output().split('\n').filter((l) => l.startsWith('{') && l.includes('"fatal"')).map((l) => JSON.parse(l) as Record<string, unknown>);

interface Damaged {
  server: TestServer;
  api: ReturnType<typeof client>;
  file: string;
  customerId: string;
  txnId: string;
  paymentId: string;
  payKey: string;
  payBody: Record<string, unknown>;
  replayKey: string;
  waitingId: string;
}

let damaged: Damaged;

/** One data dir with a finished transaction, two idempotency records and an expiry row altered on disk. */
before(async () => {
  let server = await startServer({ keys, shards: 1 });
  let api = client(server.baseUrl, key);
  const customerId = await customer(api);
  const payKey = idem('pay');
  const payBody = { customer_id: customerId, amount_minor: 250_000, currency: 'NGN', method: 'bank_transfer' };
  const paid = await api('POST', '/v1/payments', { idempotencyKey: payKey, body: payBody });
  assert.equal(paid.status, 201, JSON.stringify(paid.body));
  assert.equal((await api('POST', `/v1/test_helpers/payments/${paid.body.data.id}/settle`)).status, 200);
  const txnId = paid.body.data.transaction_id as string;
  assert.equal((await api('GET', `/v1/transactions/${txnId}`)).body.data.amount_minor, 250_000);
  const replayKey = idem('replay');
  assert.equal((await api('POST', '/v1/payments', { idempotencyKey: replayKey, body: { ...payBody, amount_minor: 120_000 } })).status, 201);
  const waiting = await api('POST', '/v1/payments', { idempotencyKey: idem('wait'), body: { ...payBody, amount_minor: 90_000 } });
  assert.equal(waiting.status, 201);
  await server.stop();

  // The finished, idempotency and expiry rows are in the shard's derived file, beside the log's.
  const file = derivedFileOf(path.join(server.dataDir, 'shard-0.db'));
  sqlite3(file, `UPDATE cold SET body = replace(body, '"amountMinor":250000', '"amountMinor":990000') WHERE id = '${txnId}' AND kind = 0`);
  // Its reply is in its log record (the row points there: log v2); the row's status is altered instead.
  sqlite3(file, `UPDATE idem_log SET status = 200, json = replace(json, '120000', '999999') WHERE key = '${replayKey}'`);
  // The first payment's key now names another scope: read as a "miss", it would run the payment again.
  sqlite3(file, `UPDATE idem_log SET key = key || '#' WHERE key = '${payKey}'`);
  // The waiting collection's expiry row now says it expired two days ago.
  sqlite3(file, `UPDATE due SET expires_at_ms = expires_at_ms - 172800000 WHERE id = '${waiting.body.data.id}'`);

  server = await startServer({ keys, shards: 1, dataDir: server.dataDir, env: { KOBO_COLLECTION_SWEEP_MS: '200' } });
  api = client(server.baseUrl, key);
  damaged = { server, api, file, customerId, txnId, paymentId: paid.body.data.id, payKey, payBody, replayKey, waitingId: waiting.body.data.id };
});

after(async () => {
  await damaged?.server.stop();
});

test('a finished transaction altered on disk: the server starts, GET answers 500 DATA_DAMAGED in the envelope (never the altered amount), logged at fatal; the rest is served', { timeout: 60_000 }, async () => {
  const { server, api, txnId, paymentId, customerId } = damaged;
  assert.equal((await api('GET', '/readyz', { key: null })).status, 200, 'the server starts: nothing it starts from is damaged');
  const read = await api('GET', `/v1/transactions/${txnId}`);
  assert.equal(read.status, 500, `the altered amount was served: ${JSON.stringify(read.body)}`);
  assert.equal(read.body.error.code, 'DATA_DAMAGED');
  assert.match(read.body.error.message, /damaged/);
  assert.equal(read.body.error.request_id, read.headers.get('x-request-id'));
  assert.doesNotMatch(JSON.stringify(read.body), /990000|LSN|cold/, 'no row detail leaves the server');
  assert.equal((await api('POST', `/v1/transactions/${txnId}/retry`, { idempotencyKey: idem('r') })).body.error?.code, 'DATA_DAMAGED', 'nor is it acted on');
  assert.equal((await api('GET', `/v1/payments/${paymentId}`)).status, 200, 'its payment, undamaged, is still served');
  assert.equal((await api('GET', `/v1/customers/${customerId}`)).status, 200, 'and the rest of the shard too');
  await until(async () => fatalLines(server), (lines) => lines.some((l) => l.table === 'cold' && String(l.row).includes(txnId)), 'the row logged at fatal', 5_000);
});

test('idempotency records altered on disk: the same key and body answer 500 DATA_DAMAGED, never a second payment nor an altered reply; logged at fatal', { timeout: 60_000 }, async () => {
  const { server, api, payKey, payBody, replayKey } = damaged;
  const again = await api('POST', '/v1/payments', { idempotencyKey: payKey, body: payBody });
  assert.deepEqual([again.status, again.body.error?.code], [500, 'DATA_DAMAGED'], `an acknowledged key ran again: ${JSON.stringify(again.body)}`);
  const altered = await api('POST', '/v1/payments', { idempotencyKey: replayKey, body: { ...payBody, amount_minor: 120_000 } });
  assert.deepEqual([altered.status, altered.body.error?.code], [500, 'DATA_DAMAGED'], `an altered reply was replayed: ${JSON.stringify(altered.body)}`);
  await until(async () => fatalLines(server), (lines) => lines.filter((l) => l.table === 'idem_log').length === 2, 'both rows logged at fatal', 5_000);
});

test('an expiry row altered on disk: the sweep does not act on it (the collection still waits, the row is kept) and logs it at fatal', { timeout: 60_000 }, async () => {
  const { server, api, waitingId } = damaged;
  await until(async () => fatalLines(server), (lines) => lines.some((l) => l.table === 'due' && String(l.row).includes(waitingId)), 'the sweep reports the damaged expiry row', 10_000);
  assert.equal((await api('GET', `/v1/payments/${waitingId}`)).body.data.status, 'pending');
  const db = new Database(damaged.file, { readonly: true });
  assert.equal((db.prepare('SELECT count(*) AS n FROM due WHERE id = ?').get(waitingId) as { n: number }).n, 1, 'kept for the operator, not dropped');
  db.close();
});

test('verify names each damaged row: the finished transaction, both idempotency records, the expiry row', { timeout: 60_000 }, async () => {
  await damaged.server.stop();
  const verify = kobo(damaged.server.dataDir, 'verify');
  assert.notEqual(verify.status, 0);
  assert.match(verify.stderr, new RegExp(`cold row ${damaged.txnId} .* fails its checksum`));
  assert.equal(verify.stderr.match(/idempotency record of LSN \d+ \(partition \d+\) fails its checksum/g)?.length, 2, verify.stderr);
  assert.match(verify.stderr, new RegExp(`expiry row of ${damaged.waitingId} .* fails its checksum`));
});

test('a finished row that points into a damaged log row: the server starts (images cover it), GET answers 500 DATA_DAMAGED, never a guess; verify names the record', { timeout: 120_000 }, async () => {
  let server = await startServer({ keys, shards: 1 });
  const api = client(server.baseUrl, key);
  const customerId = await customer(api);
  const created = await api('POST', '/v1/payments', { idempotencyKey: idem('p'), body: { customer_id: customerId, amount_minor: 310_000, currency: 'NGN', method: 'bank_transfer' } });
  assert.equal(created.status, 201);
  await server.stop(); // every partition imaged; the waiting payment's row points into its log record
  const file = path.join(server.dataDir, 'shard-0.db');
  const paymentId = created.body.data.id as string;
  const row = new Database(derivedFileOf(file), { readonly: true });
  const coldBody = row.prepare('SELECT body FROM cold WHERE id = ?').pluck().get(paymentId) as string;
  row.close();
  assert.equal(coldBody, '', 'the row holds no second copy of the payment');
  const lsn = logRecords(file).find((r) => r.body.includes(paymentId) && r.body.includes('payment.opened'))!.lsn;
  damageRowOf(file, lsn);
  server = await startServer({ keys, shards: 1, dataDir: server.dataDir });
  try {
    const read = await client(server.baseUrl, key)('GET', `/v1/payments/${paymentId}`);
    assert.deepEqual([read.status, read.body.error?.code], [500, 'DATA_DAMAGED'], JSON.stringify(read.body));
  } finally {
    await server.stop();
  }
  const verify = kobo(server.dataDir, 'verify');
  assert.notEqual(verify.status, 0);
  assert.match(verify.stderr, new RegExp(`WAL record ${lsn} fails its checksum`));
});

test('start: a damaged WAL record below every newest image is not read (the state does not need it): the server starts; verify names it', { timeout: 120_000 }, async () => {
  let server = await startServer({ keys, shards: 1 });
  const customerId = await customer(client(server.baseUrl, key));
  await server.stop(); // every partition imaged after the customer's record
  const file = path.join(server.dataDir, 'shard-0.db');
  const firstLsn = logRecords(file)[0]!.lsn;
  damageRowOf(file, firstLsn);
  server = await startServer({ keys, shards: 1, dataDir: server.dataDir });
  try {
    assert.equal((await client(server.baseUrl, key)('GET', `/v1/customers/${customerId}`)).body.data.name, 'Damage Test', 'served from the image, not the damaged record');
  } finally {
    await server.stop();
  }
  const verify = kobo(server.dataDir, 'verify');
  assert.notEqual(verify.status, 0);
  assert.match(verify.stderr, new RegExp(`WAL record ${firstLsn} fails its checksum`));
});

test('a front-end idempotency record (webhooks.db) altered on disk: the replay answers 500 DATA_DAMAGED, never the altered reply nor a second subscription; verify names it', { timeout: 120_000 }, async () => {
  let server = await startServer({ keys, shards: 1 });
  const subKey = idem('sub');
  const body = { url: 'http://127.0.0.1:9/hooks', events: ['payment.completed'] };
  const created = await client(server.baseUrl, key)('POST', '/v1/webhooks/subscriptions', { idempotencyKey: subKey, body });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  await server.stop();
  sqlite3(path.join(server.dataDir, 'webhooks.db'), `UPDATE front_idempotency SET body = replace(body, '127.0.0.1:9', '127.0.0.1:7') WHERE scope LIKE '%:${subKey}'`);
  server = await startServer({ keys, shards: 1, dataDir: server.dataDir });
  try {
    const api = client(server.baseUrl, key);
    const replay = await api('POST', '/v1/webhooks/subscriptions', { idempotencyKey: subKey, body });
    assert.deepEqual([replay.status, replay.body.error?.code], [500, 'DATA_DAMAGED'], `an altered reply was replayed: ${JSON.stringify(replay.body)}`);
    assert.equal((await api('GET', '/v1/webhooks/subscriptions')).body.data.length, 1, 'no second subscription');
    await until(async () => fatalLines(server), (lines) => lines.some((l) => l.table === 'front_idempotency'), 'logged at fatal', 5_000);
  } finally {
    await server.stop();
  }
  const verify = kobo(server.dataDir, 'verify');
  assert.notEqual(verify.status, 0);
  assert.match(verify.stderr, /webhooks\.db: the front-end idempotency record of .* fails its checksum/);
});

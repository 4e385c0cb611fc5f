// Replies a log record names instead of carrying (issue #22: records hold no replies): a payment's
// stored reply is its view, so the record keeps `{view}` and every reader rebuilds the bytes — a replay
// from memory, from a row pointing into the log, after kill -9 and replay, after the log segment is
// truncated (the row takes the rebuilt bytes), and in a backup restored elsewhere. A card's reply
// depends on the server's public URL, so it stays whole in the record.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import Database from 'better-sqlite3';
import { derivedFileOf } from '../../src/store/derived-file.ts';
import { client, idem, secretKey, startServer, tempDataDir, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';
import { kobo } from '../helpers/cli.ts';
import { logRecords } from '../helpers/log.ts';

const key = secretKey();
const keys = [`${key}@views`];
/** Snapshots after a few records and no retained tail: the log segments holding the payments go soon. */
const churn = { KOBO_SNAPSHOT_EVERY_RECORDS: '6', KOBO_SNAPSHOT_INTERVAL_MS: '0', KOBO_WAL_RETAIN_RECORDS: '0', KOBO_WAL_SEGMENT_RECORDS: '4', KOBO_SHARD_MODE: 'inline' };
const SHARD_FILES = ['shard-0.db', 'shard-1.db'];

interface Sent {
  key: string;
  body: Record<string, unknown>;
  status: number;
  /** The reply's exact bytes. */
  text: string;
  id: string;
}

async function post(server: TestServer, idemKey: string, body: unknown): Promise<{ status: number; text: string }> {
  const response = await fetch(`${server.baseUrl}/v1/payments`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': idemKey },
    body: JSON.stringify(body),
  });
  return { status: response.status, text: await response.text() };
}

/** The idem.stored event of the record that stored `scopeKey`, as the log holds it. */
function storedEvent(dataDir: string, idemKey: string): Record<string, unknown> | undefined {
  for (const name of SHARD_FILES) {
    for (const record of logRecords(path.join(dataDir, name))) {
      for (const event of JSON.parse(record.body) as Array<{ t: string; record?: { scope: string } }>) {
        if (event.t === 'idem.stored' && event.record?.scope.endsWith(`:${idemKey}`)) return event.record as Record<string, unknown>;
      }
    }
  }
  return undefined;
}

function idemRowJson(dataDir: string, idemKey: string): string | undefined {
  for (const name of SHARD_FILES) {
    // The idempotency rows are in each shard's derived file.
    const db = new Database(derivedFileOf(path.join(dataDir, name)), { readonly: true });
    try {
      const row = db.prepare('SELECT json FROM idem_log WHERE key = ?').get(idemKey) as { json: string | null } | undefined;
      if (row !== undefined) return row.json ?? undefined;
    } finally {
      db.close();
    }
  }
  return undefined;
}

async function customer(server: TestServer, country: 'NG' | 'KE'): Promise<string> {
  const api = client(server.baseUrl, key);
  const phone = country === 'KE' ? `+2547${String(10_000_000 + Math.floor(Math.random() * 89_999_999))}` : uniquePhone();
  const c = await api('POST', '/v1/customers', { idempotencyKey: idem('c'), body: { name: 'View Test', email: uniqueEmail(), phone, country_code: country } });
  assert.equal(c.status, 201, JSON.stringify(c.body));
  return c.body.data.id;
}

async function replaysSame(server: TestServer, sent: Sent[], when: string): Promise<void> {
  for (const s of sent) {
    const again = await post(server, s.key, s.body);
    assert.equal(again.status, s.status, `${when}: ${s.body.method} replay status`);
    assert.equal(again.text, s.text, `${when}: the ${s.body.method} key replays the original bytes`);
  }
}

test('payment replies named by view: the record carries no reply; replays give the same bytes live, after kill -9, after truncation and from a backup', { timeout: 150_000 }, async () => {
  let server = await startServer({ keys, env: churn });
  const dataDir = server.dataDir;
  const sent: Sent[] = [];
  try {
    const ng = await customer(server, 'NG');
    const ke = await customer(server, 'KE');
    const api = client(server.baseUrl, key);
    const funding = await api('POST', '/v1/payments', { idempotencyKey: idem('fund'), body: { customer_id: ng, amount_minor: 5_000_000, currency: 'NGN', method: 'bank_transfer' } });
    assert.equal((await api('POST', `/v1/test_helpers/payments/${funding.body.data.id}/settle`)).status, 200);
    const bodies = [
      { customer_id: ng, amount_minor: 20_000, currency: 'NGN', method: 'bank_transfer' },
      { customer_id: ng, amount_minor: 1_500, currency: 'NGN', method: 'wallet' }, // moves to processing in its own record
      { customer_id: ke, amount_minor: 30_000, currency: 'KES', method: 'mobile_money' },
      { customer_id: ng, amount_minor: 25_000, currency: 'NGN', method: 'card' },
    ];
    for (const body of bodies) {
      const k = idem('view');
      const r = await post(server, k, body);
      assert.equal(r.status, 201, r.text);
      sent.push({ key: k, body, status: r.status, text: r.text, id: JSON.parse(r.text).data.id });
    }
    for (const s of sent) {
      const logged = storedEvent(dataDir, s.key);
      assert.ok(logged !== undefined, `${s.body.method}: its record stored the key`);
      if (s.body.method === 'card') {
        assert.equal(logged.json, s.text, 'a card reply (public URL inside) stays whole in the record');
      } else {
        assert.deepEqual(logged.view, { kind: 'payment', id: s.id }, `${s.body.method}: the record names the reply`);
        assert.equal(logged.json, undefined, `${s.body.method}: and does not carry it`);
      }
    }
    await replaysSame(server, sent, 'live');
    await server.kill();
    server = await startServer({ keys, dataDir, env: churn });
    await replaysSame(server, sent, 'after kill -9 and replay');
    // Writes until the records naming the replies leave the live log: truncation archives them, and the
    // rows keep pointing into the archive (no copy of the reply is made).
    const again = client(server.baseUrl, key);
    const named = (): number => SHARD_FILES.reduce((n, name) => n + logRecords(path.join(dataDir, name)).filter((r) => sent.some((s) => r.body.includes(`:${s.key}"`))).length, 0);
    for (let i = 0; i < 120 && named() > 0; i += 1) {
      // Both customers' shards churn (they may live on different shards).
      const body = i % 2 === 0 ? { customer_id: ng, amount_minor: 10_000 + i, currency: 'NGN', method: 'bank_transfer' } : { customer_id: ke, amount_minor: 10_000 + i, currency: 'KES', method: 'mobile_money' };
      const p = await again('POST', '/v1/payments', { idempotencyKey: idem('churn'), body });
      assert.equal(p.status, 201, JSON.stringify(p.body));
    }
    assert.equal(named(), 0, `the records that stored the keys were truncated: ${SHARD_FILES.map((name) => logRecords(path.join(dataDir, name)).filter((r) => sent.some((s) => r.body.includes(`:${s.key}"`))).map((r) => `${name}@${r.lsn}: ${r.body.slice(0, 300)}`).join(" | ")).join(" ")}`);
    for (const s of sent) assert.equal(idemRowJson(dataDir, s.key), '', `${s.body.method}: the idempotency row still points into its (archived) record`);
    await replaysSame(server, sent, 'after truncation');
    await server.kill();
    server = await startServer({ keys, dataDir, env: churn });
    await replaysSame(server, sent, 'after truncation and kill -9: read from the archive');
  } finally {
    await server.stop();
  }
  const verify = kobo(dataDir, 'verify');
  assert.equal(verify.status, 0, verify.stdout + verify.stderr);
  // A backup while stopped, restored into a fresh data dir: the replies come back byte for byte.
  const backupFile = path.join(tempDataDir('views-backup'), 'backup.kobo');
  const backup = kobo(dataDir, 'snapshot', '--out', backupFile);
  assert.equal(backup.status, 0, backup.stdout + backup.stderr);
  const restoredDir = tempDataDir('views-restored');
  const restore = kobo(restoredDir, 'restore', backupFile);
  assert.equal(restore.status, 0, restore.stdout + restore.stderr);
  const restored = await startServer({ keys, dataDir: restoredDir, env: churn });
  try {
    await replaysSame(restored, sent, 'restored from a backup');
  } finally {
    await restored.stop();
  }
});

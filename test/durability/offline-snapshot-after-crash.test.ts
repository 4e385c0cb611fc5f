// An offline `kobo snapshot` after a kill -9: the server died with derived rows (finished entities,
// idempotency records, expiry rows, list rows) still waiting in memory, and the backup writes fresh images
// into the shard file. The next start replays only from those images, so every row the records before
// them imply must be in the files by then. Checked over HTTP after the restart: reads, idempotent replays
// and list pages.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import os from 'node:os';
import fs from 'node:fs';
import { client, idem, secretKey, startServer, tempDataDir, uniqueEmail, uniquePhone } from '../helpers/server.ts';
import { kobo } from '../helpers/cli.ts';

const key = secretKey();
/** One inline shard with no images and no time-based writes: after kill -9 every derived row was in memory only. */
const env = { KOBO_SNAPSHOT_EVERY_RECORDS: '0', KOBO_SNAPSHOT_INTERVAL_MS: '0', KOBO_SHARD_MODE: 'inline' };
const PAYMENTS = 60;

test('offline snapshot after kill -9 → the restarted server reads, replays and lists every payment acknowledged before the crash', async () => {
  const dataDir = tempDataDir('kobo-offline-snap');
  const backupDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kobo-offline-snap-out-'));
  let server = await startServer({ keys: [`${key}@offsnap`], dataDir, shards: 1, env });
  try {
    const api = client(server.baseUrl, key);
    const customer = await api('POST', '/v1/customers', { body: { name: 'Offline', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' }, idempotencyKey: idem('c') });
    assert.equal(customer.status, 201);
    const body = JSON.stringify({ customer_id: customer.body.data.id, amount_minor: 10_000, currency: 'NGN', method: 'bank_transfer' });
    const sent: Array<{ key: string; id: string; text: string }> = [];
    for (let i = 0; i < PAYMENTS; i += 1) {
      const idemKey = idem('p');
      const response = await fetch(`${server.baseUrl}/v1/payments`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': idemKey }, body });
      const text = await response.text();
      assert.equal(response.status, 201, text);
      sent.push({ key: idemKey, id: (JSON.parse(text) as { data: { id: string } }).data.id, text });
    }
    await server.kill();

    const snap = kobo(dataDir, 'snapshot', '--out', path.join(backupDir, 'after-crash.kobo'));
    assert.equal(snap.status, 0, snap.stderr);

    server = await startServer({ keys: [`${key}@offsnap`], dataDir, shards: 1, env });
    const after = client(server.baseUrl, key);
    for (const payment of sent) {
      const read = await after('GET', `/v1/payments/${payment.id}`);
      assert.equal(read.status, 200, `payment ${payment.id} after the offline snapshot: ${JSON.stringify(read.body)}`);
      const replay = await fetch(`${server.baseUrl}/v1/payments`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': payment.key }, body });
      assert.equal(replay.status, 201);
      assert.equal(await replay.text(), payment.text, 'the idempotent replay answers the same bytes');
    }
    const listed = new Set<string>();
    let cursor: string | null = null;
    for (let page = 0; page < 10; page += 1) {
      const list: { status: number; body: { data: Array<{ id: string }>; has_more: boolean } } = await after('GET', `/v1/payments?limit=100${cursor === null ? '' : `&starting_after=${cursor}`}`);
      assert.equal(list.status, 200);
      for (const p of list.body.data) listed.add(p.id);
      if (!list.body.has_more) break;
      cursor = list.body.data.at(-1)!.id;
    }
    for (const payment of sent) assert.ok(listed.has(payment.id), `payment ${payment.id} is listed after the offline snapshot`);
    const verify = kobo(dataDir, 'verify');
    assert.equal(verify.status, 0, verify.stdout + verify.stderr);
  } finally {
    await server.kill();
    fs.rmSync(backupDir, { recursive: true, force: true });
  }
});

// The list index's own file across kill -9 (issue #22): list rows go into an open transaction of the list
// file a chunk a turn and commit every few thousand rows, while partition images are taken every few hundred
// records. Replay starts at the images, so every list row of a record before an image must have been made
// durable in the list file first; the rows after the last image come back from the replay. Checked over
// HTTP: after the restart every acknowledged payment is listed, newest first, and `kobo verify` is clean.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey, startServer, tempDataDir, uniqueEmail, uniquePhone } from '../helpers/server.ts';
import { kobo } from '../helpers/cli.ts';

const key = secretKey();
/** Images every 300 records, so several image rounds fall inside the run, between list-file commits. */
const env = { KOBO_SNAPSHOT_EVERY_RECORDS: '300', KOBO_SHARD_MODE: 'inline' };
const PAYMENTS = 1_500;
const IN_FLIGHT = 16;

test('list file: images during load, then kill -9 → every acknowledged payment is listed after the restart; verify clean', { timeout: 180_000 }, async () => {
  const dataDir = tempDataDir('kobo-list-crash');
  let server = await startServer({ keys: [`${key}@listcrash`], dataDir, shards: 2, env });
  const acknowledged = new Set<string>();
  try {
    const api = client(server.baseUrl, key);
    const customer = await api('POST', '/v1/customers', { body: { name: 'Lister', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' }, idempotencyKey: idem('c') });
    assert.equal(customer.status, 201);
    const body = JSON.stringify({ customer_id: customer.body.data.id, amount_minor: 10_000, currency: 'NGN', method: 'bank_transfer' });
    let next = 0;
    await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
      while (next < PAYMENTS) {
        next += 1;
        const response = await fetch(`${server.baseUrl}/v1/payments`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': idem('p') }, body });
        const text = await response.text();
        assert.equal(response.status, 201, text);
        acknowledged.add((JSON.parse(text) as { data: { id: string } }).data.id);
      }
    }));
    await server.kill();

    server = await startServer({ keys: [`${key}@listcrash`], dataDir, shards: 2, env });
    const after = client(server.baseUrl, key);
    const listed: string[] = [];
    let cursor: string | null = null;
    for (let pageNo = 0; pageNo < 50; pageNo += 1) {
      const list: { status: number; body: { data: Array<{ id: string }>; has_more: boolean } } = await after('GET', `/v1/payments?limit=100${cursor === null ? '' : `&starting_after=${cursor}`}`);
      assert.equal(list.status, 200);
      listed.push(...list.body.data.map((p) => p.id));
      if (!list.body.has_more) break;
      cursor = list.body.data.at(-1)!.id;
    }
    assert.equal(new Set(listed).size, listed.length, 'no payment listed twice');
    const missing = [...acknowledged].filter((id) => !listed.includes(id));
    assert.deepEqual(missing, [], `${missing.length} of ${acknowledged.size} acknowledged payments are not listed`);
    assert.equal(listed.length, acknowledged.size);
    assert.deepEqual(listed, [...listed].sort().reverse(), 'newest first');
  } finally {
    await server.stop();
  }
  const verify = kobo(dataDir, 'verify');
  assert.equal(verify.status, 0, verify.stdout + verify.stderr);
});

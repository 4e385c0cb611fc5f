// Bounds at their limits: a shard's command queue (KOBO_SHARD_QUEUE_MAX) answers 503 UNAVAILABLE at once
// beyond it — never a lost or half-done request — and a group commit takes at most KOBO_BATCH_COMMANDS_MAX
// commands (the rest go to the next batch, all still answered).
import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey, startServer, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';

const key = secretKey();
let server: TestServer;
let api: ReturnType<typeof client>;

before(async () => {
  server = await startServer({ keys: [`${key}@bounds`], shards: 1, env: { KOBO_SHARD_QUEUE_MAX: '4', KOBO_BATCH_COMMANDS_MAX: '2' } });
  api = client(server.baseUrl, key);
});
after(async () => server.stop());

it('shard queue full → 503 UNAVAILABLE in the envelope; every 201 is real, every refused key is free', async () => {
  const requests = Array.from({ length: 40 }, () => ({ k: idem('burst'), body: { name: 'Burst', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } }));
  const replies = await Promise.all(requests.map((r) => api('POST', '/v1/customers', { idempotencyKey: r.k, body: r.body })));
  const created = replies.filter((r) => r.status === 201);
  const refused = replies.filter((r) => r.status === 503);
  assert.equal(created.length + refused.length, requests.length, JSON.stringify(replies.map((r) => r.status)));
  assert.ok(refused.length > 0, 'the bound was reached');
  assert.ok(created.length >= 4, 'up to the bound, requests are served');
  for (const r of refused) {
    assert.equal(r.body.error.code, 'UNAVAILABLE');
    assert.equal(r.body.error.request_id, r.headers.get('x-request-id'));
  }
  for (const r of created) assert.equal((await api('GET', `/v1/customers/${r.body.data.id}`)).status, 200);
  // A refused request was never stored: its key runs once the queue has room.
  const i = replies.findIndex((r) => r.status === 503);
  const retried = await api('POST', '/v1/customers', { idempotencyKey: requests[i]!.k, body: requests[i]!.body });
  assert.equal(retried.status, 201);
});

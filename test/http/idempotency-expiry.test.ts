// Idempotency records are kept at least 24 hours (48 by default) and then forgotten, on the account's
// sandbox clock: before the cutoff a key still refuses another body; after it the key is free again.
import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey, startServer, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';

const key = secretKey();
let server: TestServer;
let api: ReturnType<typeof client>;

before(async () => {
  server = await startServer({ keys: [`${key}@retention`], env: { KOBO_IDEMPOTENCY_SWEEP_MS: '50' } });
  api = client(server.baseUrl, key);
});
after(async () => server.stop());

const body = (): object => ({ name: 'Keep', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' });
const settle = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 400));

it('retention: a key refuses another body for 48 h, then is forgotten and free again', async () => {
  const k = idem('retained');
  const first = await api('POST', '/v1/customers', { idempotencyKey: k, body: body() });
  assert.equal(first.status, 201);
  await api('POST', '/v1/test_helpers/clock/advance', { body: { seconds: 47 * 3_600 } });
  await settle();
  const kept = await api('POST', '/v1/customers', { idempotencyKey: k, body: body() });
  assert.equal(kept.status, 409, 'still kept after 47 h');
  assert.equal(kept.body.error.code, 'IDEMPOTENCY_REPLAY');
  await api('POST', '/v1/test_helpers/clock/advance', { body: { seconds: 2 * 3_600 } });
  await settle();
  const fresh = await api('POST', '/v1/customers', { idempotencyKey: k, body: body() });
  assert.equal(fresh.status, 201, 'forgotten after 49 h: the key runs a new request');
  assert.notEqual(fresh.body.data.id, first.body.data.id);
});

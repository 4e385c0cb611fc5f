// Changing or removing a transaction PIN. A key scoped to the customer must prove the current PIN
// (X-Transaction-Authorization): a wrong one counts towards the lock, and a locked PIN cannot be
// removed to get around the lock. The account's own keys may reset a forgotten PIN.
import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey, startServer, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';
import { kobo } from '../helpers/cli.ts';

const key = secretKey();
let server: TestServer;
let api: ReturnType<typeof client>;

before(async () => {
  server = await startServer({ keys: [`${key}@pins`], env: { KOBO_PIN_ATTEMPTS_MAX: '3' } });
  api = client(server.baseUrl, key);
});
after(async () => server.stop());

async function customerWithPin(pin: string): Promise<{ id: string; scoped: ReturnType<typeof client> }> {
  const c = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: 'Pin Holder', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
  assert.equal(c.status, 201, JSON.stringify(c.body));
  assert.equal((await api('PATCH', `/v1/customers/${c.body.data.id}`, { body: { pin } })).status, 200);
  const created = kobo(server.dataDir, 'keys', 'create', '--account', 'pins', '--customer', c.body.data.id);
  assert.equal(created.status, 0, created.stderr);
  return { id: c.body.data.id, scoped: client(server.baseUrl, /secret \(shown once\): (sk_\w+_[A-Za-z0-9_-]+)/.exec(created.stdout)![1]!) };
}

const pinSet = async (id: string): Promise<boolean> => (await api('GET', `/v1/customers/${id}`)).body.data.pin_set;

it('customer-scoped key: removing or changing the PIN without the current one → 403 PIN_REQUIRED; with it → 200', async () => {
  const c = await customerWithPin('4821');
  for (const pin of [null, '9999']) {
    const refused = await c.scoped('PATCH', `/v1/customers/${c.id}`, { body: { pin } });
    assert.equal(refused.status, 403, JSON.stringify(refused.body));
    assert.equal(refused.body.error.code, 'PIN_REQUIRED');
  }
  assert.equal(await pinSet(c.id), true);
  const changed = await c.scoped('PATCH', `/v1/customers/${c.id}`, { body: { pin: '7310' }, headers: { 'X-Transaction-Authorization': '4821' } });
  assert.equal(changed.status, 200, JSON.stringify(changed.body));
  const removed = await c.scoped('PATCH', `/v1/customers/${c.id}`, { body: { pin: null }, headers: { 'X-Transaction-Authorization': '7310' } });
  assert.equal(removed.status, 200, JSON.stringify(removed.body));
  assert.equal(await pinSet(c.id), false);
  // With no PIN set there is nothing to prove.
  assert.equal((await c.scoped('PATCH', `/v1/customers/${c.id}`, { body: { pin: '5555' } })).status, 200);
});

it('customer-scoped key: wrong PINs on a change count towards the lock; a locked PIN cannot be removed, even with the right one', async () => {
  const c = await customerWithPin('4821');
  const wrong = await c.scoped('PATCH', `/v1/customers/${c.id}`, { body: { pin: null }, headers: { 'X-Transaction-Authorization': '0000' } });
  assert.equal(wrong.status, 403);
  assert.match(wrong.body.error.message, /2 attempts left/);
  const last = await c.scoped('PATCH', `/v1/customers/${c.id}`, { body: { pin: null }, headers: { 'X-Transaction-Authorization': '1111' } });
  assert.match(last.body.error.message, /1 attempt left/);
  await c.scoped('PATCH', `/v1/customers/${c.id}`, { body: { pin: null }, headers: { 'X-Transaction-Authorization': '2222' } });
  const locked = await c.scoped('PATCH', `/v1/customers/${c.id}`, { body: { pin: null }, headers: { 'X-Transaction-Authorization': '4821' } });
  assert.equal(locked.status, 403, JSON.stringify(locked.body));
  assert.equal(locked.body.error.code, 'PIN_LOCKED');
  assert.equal(await pinSet(c.id), true, 'the PIN is still there');
  // The account (its back office) may reset a forgotten PIN.
  assert.equal((await api('PATCH', `/v1/customers/${c.id}`, { body: { pin: null } })).status, 200);
  assert.equal(await pinSet(c.id), false);
});

// The catalogue read served from the front end's profile cache: it follows a KYC change at once (no
// stale cached profile after an acknowledged PATCH), and another account never reads through it.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey, startServer, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';

const keyA = secretKey();
const keyB = secretKey();
let server: TestServer;

before(async () => {
  server = await startServer({ keys: [`${keyA}@cache-a`, `${keyB}@cache-b`] });
});
after(async () => server.stop());

async function bettingAccess(api: ReturnType<typeof client>, customerId: string): Promise<{ visible: boolean; executable: boolean }> {
  const r = await api('GET', `/v1/services?country=NG&customer_id=${customerId}`);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const betting = (r.body.data.items as Array<{ service_code: string; access: { visible: boolean; executable: boolean } }>).find((i) => i.service_code === 'betting');
  assert.ok(betting !== undefined, 'betting is listed in NG');
  return betting.access;
}

describe('catalogue: cached customer profile', () => {
  it('GET /v1/services after PATCH kyc_level → reflects the new level at once, both ways', async () => {
    const api = client(server.baseUrl, keyA);
    const c = await api('POST', '/v1/customers', { idempotencyKey: idem('c'), body: { name: 'Kyc Cache', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
    assert.equal(c.status, 201);
    const id: string = c.body.data.id;
    assert.deepEqual(await bettingAccess(api, id), { visible: true, executable: false }, 'KYC 0: betting needs level 1');
    assert.deepEqual(await bettingAccess(api, id), { visible: true, executable: false }, 'second read, now from the cache');
    assert.equal((await api('PATCH', `/v1/customers/${id}`, { body: { kyc_level: 2 } })).status, 200);
    assert.deepEqual(await bettingAccess(api, id), { visible: true, executable: true });
    assert.equal((await api('PATCH', `/v1/customers/${id}`, { body: { kyc_level: 0 } })).status, 200);
    assert.deepEqual(await bettingAccess(api, id), { visible: true, executable: false });
  });

  it('GET /v1/services with another account\'s cached customer → 403 FORBIDDEN, as before any cache', async () => {
    const a = client(server.baseUrl, keyA);
    const b = client(server.baseUrl, keyB);
    const c = await a('POST', '/v1/customers', { idempotencyKey: idem('c'), body: { name: 'Owner A', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
    await bettingAccess(a, c.body.data.id); // now cached for account A
    const r = await b('GET', `/v1/services?country=NG&customer_id=${c.body.data.id}`);
    assert.equal(r.status, 403);
    assert.equal(r.body.error.code, 'FORBIDDEN');
  });
});

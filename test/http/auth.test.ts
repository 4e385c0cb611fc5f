// Covers authentication (bearer secret key → key record) and authorization (scopes, source-IP
// allowlist, sandbox/live separation, account and customer ownership) over real HTTP.
// Runs under node:test against one real server process; keys are written into its control.db first.
// Invariant checked: a missing, malformed, unknown, revoked or expired key is 401; a key outside its
// grants is 403 FORBIDDEN; the other environment's resources do not exist (404).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { ControlStore, type NewKey } from '../../src/store/control-store.ts';
import { client, idem, secretKey, startServer, tempDataDir, uniqueEmail, uniquePhone, type ApiResponse, type TestServer } from '../helpers/server.ts';

const ACCOUNT = 'acme';

const keys = {
  main: secretKey(),
  live: secretKey('live'),
  other: secretKey(),
  revoked: secretKey(),
  rotatedOld: secretKey(),
  graceOld: secretKey(),
  revokeLater: secretKey(),
  read: secretKey(),
  paymentsRead: secretKey(),
  customersOnly: secretKey(),
  ipElsewhere: secretKey(),
  ipLoopback: secretKey(),
  ipSubnet: secretKey(),
  ipSecondLoopback: secretKey(),
  ipMalformed: secretKey(),
  customerScoped: secretKey(),
};
let rotatedNew = '';
let graceNew = '';
let revokeLaterId = '';

interface Customer {
  id: string;
  name: string;
  wallets: Array<{ id: string; currency: string }>;
}

let server: TestServer;
let api: ReturnType<typeof client>;
let custA: Customer;
let custB: Customer;
let globexCust: Customer;

function customerBody(name = 'Ada Obi'): Record<string, string> {
  return { name, email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' };
}

async function createCustomer(key: string): Promise<Customer> {
  const res = await api('POST', '/v1/customers', { key, idempotencyKey: idem('cust'), body: customerBody() });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.data as Customer;
}

function assertError(res: ApiResponse, status: number, code: string): void {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.equal(res.body?.error?.code, code, JSON.stringify(res.body));
}

function assertUnauthenticated(res: ApiResponse): void {
  assertError(res, 401, 'UNAUTHENTICATED');
  assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer\b/);
  assert.equal(res.body.data, undefined);
}

/** GET from a chosen local address (127.0.0.x), so the server sees that source IP. */
function getFrom(localAddress: string, urlPath: string, key: string): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port: server.port, path: urlPath, method: 'GET', localAddress, agent: false, headers: { authorization: `Bearer ${key}` } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

before(async () => {
  const dataDir = tempDataDir('kobo-auth');
  const store = new ControlStore(dataDir);
  const nowMs = Date.now();
  const add = (secret: string, extra: Partial<NewKey> = {}) => store.insertKey({ secret, account: ACCOUNT, nowMs, ...extra });
  add(keys.main);
  add(keys.live);
  add(keys.other, { account: 'globex' });
  store.revoke(add(keys.revoked).id);
  rotatedNew = store.rotate(add(keys.rotatedOld).id, { graceMs: 0, nowMs }).secret;
  graceNew = store.rotate(add(keys.graceOld).id, { graceMs: 10 * 60_000, nowMs }).secret;
  revokeLaterId = add(keys.revokeLater).id;
  add(keys.read, { scopes: ['read'] });
  add(keys.paymentsRead, { scopes: ['payments:read'] });
  add(keys.customersOnly, { scopes: ['customers'] });
  add(keys.ipElsewhere, { ipAllow: ['10.1.2.3'] });
  add(keys.ipLoopback, { ipAllow: ['127.0.0.1'] });
  add(keys.ipSubnet, { ipAllow: ['10.0.0.0/8', '127.0.0.0/8'] });
  add(keys.ipSecondLoopback, { ipAllow: ['127.0.0.2'] });
  // Written before the CLI checked entries: one is no address at all.
  add(keys.ipMalformed, { ipAllow: ['999.1.1.1', '127.0.0.1'] });
  store.close();

  server = await startServer({ dataDir });
  api = client(server.baseUrl, keys.main);
  custA = await createCustomer(keys.main);
  custB = await createCustomer(keys.main);
  globexCust = await createCustomer(keys.other);

  // A customer-scoped key needs a customer id, so it is minted while the server runs (as the CLI would).
  const running = new ControlStore(server.dataDir);
  running.insertKey({ secret: keys.customerScoped, account: ACCOUNT, customerId: custA.id, nowMs: Date.now() });
  running.close();
});

after(async () => {
  await server?.stop();
});

describe('authentication', () => {
  it('auth: no Authorization header → 401 UNAUTHENTICATED, nothing created', async () => {
    const body = customerBody();
    const key = idem('noauth');
    assertUnauthenticated(await api('GET', `/v1/customers/${custA.id}`, { key: null }));
    assertUnauthenticated(await api('POST', '/v1/customers', { key: null, idempotencyKey: key, body }));
    // Neither the email nor the idempotency key was consumed by the refused request.
    const created = await api('POST', '/v1/customers', { idempotencyKey: key, body });
    assert.equal(created.status, 201, JSON.stringify(created.body));
  });

  for (const header of ['Basic x', 'Bearer nope', 'Bearer', 'Token KEY', 'KEY', 'Bearer KEY extra', 'Bearer sk_prod_0123456789abcdef', 'Bearer sk_test_short']) {
    it(`auth: malformed Authorization "${header}" → 401 UNAUTHENTICATED`, async () => {
      const value = header.replace('KEY', keys.main);
      assertUnauthenticated(await api('GET', `/v1/customers/${custA.id}`, { key: null, headers: { authorization: value } }));
    });
  }

  it('auth: scheme written in lower case ("bearer <key>") → accepted', async () => {
    const res = await api('GET', `/v1/customers/${custA.id}`, { key: null, headers: { authorization: `bearer ${keys.main}` } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.data.id, custA.id);
  });

  it('auth: unknown well-formed sk_test_ and sk_live_ keys → 401 UNAUTHENTICATED', async () => {
    assertUnauthenticated(await api('GET', `/v1/customers/${custA.id}`, { key: secretKey() }));
    assertUnauthenticated(await api('GET', `/v1/customers/${custA.id}`, { key: secretKey('live') }));
  });

  it('auth: revoked key → 401 UNAUTHENTICATED', async () => {
    assertUnauthenticated(await api('GET', `/v1/customers/${custA.id}`, { key: keys.revoked }));
    assertUnauthenticated(await api('POST', '/v1/customers', { key: keys.revoked, idempotencyKey: idem(), body: customerBody() }));
  });

  it('auth: rotated key with no grace period → old key 401, new key works', async () => {
    assertUnauthenticated(await api('GET', `/v1/customers/${custA.id}`, { key: keys.rotatedOld }));
    const res = await api('GET', `/v1/customers/${custA.id}`, { key: rotatedNew });
    assert.equal(res.status, 200, JSON.stringify(res.body));
  });

  it('auth: rotated key inside its grace period → old and new keys both work', async () => {
    for (const key of [keys.graceOld, graceNew]) {
      const res = await api('GET', `/v1/customers/${custA.id}`, { key });
      assert.equal(res.status, 200, JSON.stringify(res.body));
    }
  });

  it('auth: key revoked while the server runs → 401 once the key cache expires (≈1 s)', async () => {
    const path = `/v1/customers/${custA.id}`;
    assert.equal((await api('GET', path, { key: keys.revokeLater })).status, 200);
    const store = new ControlStore(server.dataDir);
    assert.ok(store.revoke(revokeLaterId));
    store.close();
    const deadline = Date.now() + 3_000;
    let res = await api('GET', path, { key: keys.revokeLater });
    while (res.status === 200 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      res = await api('GET', path, { key: keys.revokeLater });
    }
    assertUnauthenticated(res);
  });

  it('auth: public endpoints (countries, context, openapi) with no key → 200', async () => {
    for (const path of ['/v1/countries', '/v1/countries/NG/context', '/v1/openapi.json']) {
      const res = await api('GET', path, { key: null });
      assert.equal(res.status, 200, `${path}: ${JSON.stringify(res.body)}`);
    }
  });
});

describe('authorization: scopes', () => {
  it("scopes ['read']: GET → 200; POST and PATCH → 403 FORBIDDEN and nothing is created", async () => {
    const got = await api('GET', `/v1/customers/${custA.id}`, { key: keys.read });
    assert.equal(got.status, 200, JSON.stringify(got.body));
    const body = customerBody();
    const key = idem('readonly');
    assertError(await api('POST', '/v1/customers', { key: keys.read, idempotencyKey: key, body }), 403, 'FORBIDDEN');
    assertError(await api('PATCH', `/v1/customers/${custA.id}`, { key: keys.read, body: { name: 'Renamed' } }), 403, 'FORBIDDEN');
    const unchanged = await api('GET', `/v1/customers/${custA.id}`);
    assert.equal(unchanged.body.data.name, custA.name);
    // The refused POST stored no idempotent result and took no email: the same key and body now create.
    const created = await api('POST', '/v1/customers', { idempotencyKey: key, body });
    assert.equal(created.status, 201, JSON.stringify(created.body));
  });

  it("scopes ['payments:read']: GET /v1/customers/{id} → 403; GET /v1/payments/methods → 200; POST /v1/payments → 403", async () => {
    assertError(await api('GET', `/v1/customers/${custA.id}`, { key: keys.paymentsRead }), 403, 'FORBIDDEN');
    const methods = await api('GET', `/v1/payments/methods?customer_id=${custA.id}`, { key: keys.paymentsRead });
    assert.equal(methods.status, 200, JSON.stringify(methods.body));
    assert.equal(methods.body.data.customer_id, custA.id);
    const pay = await api('POST', '/v1/payments', {
      key: keys.paymentsRead,
      idempotencyKey: idem(),
      body: { customer_id: custA.id, amount_minor: 10_000, currency: 'NGN', method: 'bank_transfer' },
    });
    assertError(pay, 403, 'FORBIDDEN');
  });

  it("scopes ['customers']: customers read and write → allowed; wallets and payments → 403 FORBIDDEN", async () => {
    const created = await api('POST', '/v1/customers', { key: keys.customersOnly, idempotencyKey: idem(), body: customerBody() });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal((await api('GET', `/v1/customers/${custA.id}`, { key: keys.customersOnly })).status, 200);
    assertError(await api('GET', `/v1/wallets/${custA.wallets[0]!.id}`, { key: keys.customersOnly }), 403, 'FORBIDDEN');
    assertError(await api('GET', `/v1/payments/methods?customer_id=${custA.id}`, { key: keys.customersOnly }), 403, 'FORBIDDEN');
  });
});

describe('authorization: source-IP allowlist', () => {
  it("ipAllow ['10.1.2.3'], request from 127.0.0.1 → 403 FORBIDDEN", async () => {
    assertError(await api('GET', `/v1/customers/${custA.id}`, { key: keys.ipElsewhere }), 403, 'FORBIDDEN');
  });

  it("ipAllow with an entry that is no address ('999.1.1.1') → that entry allows nothing, the others still do; never a 500", async () => {
    const res = await api('GET', `/v1/customers/${custA.id}`, { key: keys.ipMalformed });
    assert.equal(res.status, 200, JSON.stringify(res.body));
  });

  it("ipAllow ['127.0.0.1'] or a 127.0.0.0/8 subnet, request from 127.0.0.1 → allowed", async () => {
    for (const key of [keys.ipLoopback, keys.ipSubnet]) {
      const res = await api('GET', `/v1/customers/${custA.id}`, { key });
      assert.equal(res.status, 200, JSON.stringify(res.body));
    }
  });

  it("ipAllow ['127.0.0.2']: from 127.0.0.1 → 403; from 127.0.0.2 → 200", async (t) => {
    const fromFirst = await getFrom('127.0.0.1', `/v1/customers/${custA.id}`, keys.ipSecondLoopback);
    assert.equal(fromFirst.status, 403);
    assert.equal(fromFirst.body.error.code, 'FORBIDDEN');
    let fromSecond: { status: number; body: any };
    try {
      fromSecond = await getFrom('127.0.0.2', `/v1/customers/${custA.id}`, keys.ipSecondLoopback);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EADDRNOTAVAIL') return t.skip('127.0.0.2 is not a local address here');
      throw error;
    }
    assert.equal(fromSecond.status, 200, JSON.stringify(fromSecond.body));
  });
});

describe('authorization: environments, accounts and customers', () => {
  it('live key (sk_live_) on the sandbox test helpers → 404 NOT_FOUND; sandbox key → 200', async () => {
    assertError(await api('GET', '/v1/test_helpers/clock', { key: keys.live }), 404, 'NOT_FOUND');
    assertError(await api('POST', '/v1/test_helpers/clock/advance', { key: keys.live, body: { seconds: 60 } }), 404, 'NOT_FOUND');
    assertError(await api('POST', `/v1/test_helpers/payments/${custA.id}/settle`, { key: keys.live }), 404, 'NOT_FOUND');
    const sandbox = await api('GET', '/v1/test_helpers/clock');
    assert.equal(sandbox.status, 200, JSON.stringify(sandbox.body));
    assert.equal(sandbox.body.data.offset_seconds, 0);
  });

  it("live key reading the same account's sandbox customer, wallet or paying for it → 404 NOT_FOUND", async () => {
    assertError(await api('GET', `/v1/customers/${custA.id}`, { key: keys.live }), 404, 'NOT_FOUND');
    assertError(await api('GET', `/v1/wallets/${custA.wallets[0]!.id}`, { key: keys.live }), 404, 'NOT_FOUND');
    const pay = await api('POST', '/v1/payments', {
      key: keys.live,
      idempotencyKey: idem(),
      body: { customer_id: custA.id, amount_minor: 10_000, currency: 'NGN', method: 'bank_transfer' },
    });
    assertError(pay, 404, 'NOT_FOUND');
  });

  it("another account's customer and wallet → 403 FORBIDDEN (read and update)", async () => {
    assertError(await api('GET', `/v1/customers/${globexCust.id}`), 403, 'FORBIDDEN');
    assertError(await api('GET', `/v1/wallets/${globexCust.wallets[0]!.id}`), 403, 'FORBIDDEN');
    assertError(await api('PATCH', `/v1/customers/${globexCust.id}`, { body: { name: 'Hijacked' } }), 403, 'FORBIDDEN');
    assertError(await api('GET', `/v1/customers/${custA.id}`, { key: keys.other }), 403, 'FORBIDDEN');
    const own = await api('GET', `/v1/customers/${globexCust.id}`, { key: keys.other });
    assert.equal(own.status, 200);
    assert.equal(own.body.data.name, globexCust.name);
  });

  it('customer-scoped key: its own customer → 200; another customer of the account → 403 FORBIDDEN', async () => {
    const own = await api('GET', `/v1/customers/${custA.id}`, { key: keys.customerScoped });
    assert.equal(own.status, 200, JSON.stringify(own.body));
    assertError(await api('GET', `/v1/customers/${custB.id}`, { key: keys.customerScoped }), 403, 'FORBIDDEN');
    assertError(await api('GET', `/v1/wallets/${custB.wallets[0]!.id}`, { key: keys.customerScoped }), 403, 'FORBIDDEN');
    assertError(await api('PATCH', `/v1/customers/${custB.id}`, { key: keys.customerScoped, body: { name: 'Other' } }), 403, 'FORBIDDEN');
    assertError(await api('GET', `/v1/payments/methods?customer_id=${custB.id}`, { key: keys.customerScoped }), 403, 'FORBIDDEN');
    const pay = await api('POST', '/v1/payments', {
      key: keys.customerScoped,
      idempotencyKey: idem(),
      body: { customer_id: custB.id, amount_minor: 10_000, currency: 'NGN', method: 'bank_transfer' },
    });
    assertError(pay, 403, 'FORBIDDEN');
  });

  it('customer-scoped key: customer_id left out → acts for its own customer', async () => {
    const methods = await api('GET', '/v1/payments/methods', { key: keys.customerScoped });
    assert.equal(methods.status, 200, JSON.stringify(methods.body));
    assert.equal(methods.body.data.customer_id, custA.id);
    // The account key has no customer of its own: it must name one.
    assertError(await api('GET', '/v1/payments/methods'), 400, 'VALIDATION');
  });

  it('customer-scoped key: the account’s sandbox clock and rail switches → 403 FORBIDDEN, the clock unmoved; the account key may', async () => {
    const before = (await api('GET', '/v1/test_helpers/clock')).body.data.offset_seconds;
    assertError(await api('POST', '/v1/test_helpers/clock/advance', { key: keys.customerScoped, body: { seconds: 3_600 } }), 403, 'FORBIDDEN');
    assertError(await api('POST', '/v1/test_helpers/services/rails', { key: keys.customerScoped, body: { service_code: 'airtime', country: 'NG', down: true } }), 403, 'FORBIDDEN');
    assert.equal((await api('GET', '/v1/test_helpers/clock')).body.data.offset_seconds, before, 'nothing moved');
    const moved = await api('POST', '/v1/test_helpers/clock/advance', { body: { seconds: 1 } });
    assert.equal(moved.status, 200, JSON.stringify(moved.body));
    assert.equal(moved.body.data.offset_seconds, before + 1);
  });

  it('customer-scoped key: POST /v1/customers → 403 FORBIDDEN, nothing created', async () => {
    const body = customerBody();
    const key = idem('scoped');
    assertError(await api('POST', '/v1/customers', { key: keys.customerScoped, idempotencyKey: key, body }), 403, 'FORBIDDEN');
    const created = await api('POST', '/v1/customers', { idempotencyKey: key, body });
    assert.equal(created.status, 201, JSON.stringify(created.body));
  });
});

// Covers POST/GET/PATCH /v1/customers and GET /v1/wallets/{id} over real HTTP against one server.
// Runs under node:test; the server is a separate process with its own data dir (test/helpers/server.ts).
// Invariant checked: email and phone are unique per account (409 DUPLICATE), normalised on the way in,
// a PIN is never returned, and another account's customer or wallet is 403 FORBIDDEN.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey, startServer, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';
import { mintId } from '../../src/ids.ts';

const ULID = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/;
const KEY_A = secretKey();
const KEY_B = secretKey();

let server: TestServer;
let apiA: ReturnType<typeof client>;
let apiB: ReturnType<typeof client>;

interface CustomerData {
  id: string;
  name: string;
  email: string;
  phone: string;
  country_code: string;
  tier: string;
  kyc_level: number;
  pin_set: boolean;
  wallets: Array<{ id: string; currency: string }>;
  created_at: string;
  updated_at: string;
}

function newCustomerBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { name: 'Ada Obi', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG', ...overrides };
}

async function create(api: typeof apiA, body: Record<string, unknown>) {
  return api<{ data: CustomerData; error: { code: string } }>('POST', '/v1/customers', { idempotencyKey: idem('cust'), body });
}

async function createOk(api: typeof apiA = apiA, overrides: Record<string, unknown> = {}): Promise<CustomerData> {
  const response = await create(api, newCustomerBody(overrides));
  assert.equal(response.status, 201, JSON.stringify(response.body));
  return response.body.data;
}

function assertError(response: { status: number; body: unknown }, status: number, code: string): void {
  const body = response.body as { error?: { code: string; message: string; request_id: string } };
  assert.equal(response.status, status, JSON.stringify(body));
  assert.equal(body.error?.code, code, JSON.stringify(body));
  assert.equal(typeof body.error?.message, 'string');
}

before(async () => {
  server = await startServer({ keys: [KEY_A, KEY_B] });
  apiA = client(server.baseUrl, KEY_A);
  apiB = client(server.baseUrl, KEY_B);
});

after(async () => {
  await server?.stop();
});

describe('POST /v1/customers', () => {
  it('create: NG customer → 201 with ULID id, one NGN wallet, tier_1, kyc 0, no PIN', async () => {
    const email = uniqueEmail();
    const phone = uniquePhone();
    const response = await create(apiA, { name: 'Ada Obi', email, phone, country_code: 'NG' });
    assert.equal(response.status, 201);
    const c = response.body.data;
    assert.match(c.id, ULID);
    assert.equal(c.name, 'Ada Obi');
    assert.equal(c.email, email);
    assert.equal(c.phone, phone);
    assert.equal(c.country_code, 'NG');
    assert.equal(c.tier, 'tier_1');
    assert.equal(c.kyc_level, 0);
    assert.equal(c.pin_set, false);
    assert.equal(c.wallets.length, 1);
    assert.match(c.wallets[0]!.id, ULID);
    assert.equal(c.wallets[0]!.currency, 'NGN');
    assert.ok(!Number.isNaN(Date.parse(c.created_at)));
  });

  it('create: GH customer → wallet in GHS', async () => {
    const c = await createOk(apiA, { country_code: 'GH', phone: '+233241234567' });
    assert.deepEqual(c.wallets.map((w) => w.currency), ['GHS']);
  });

  it('create: mixed-case email with spaces → stored trimmed and lower-cased', async () => {
    const local = uniqueEmail();
    const c = await createOk(apiA, { email: `  ${local.toUpperCase()} ` });
    assert.equal(c.email, local.toLowerCase());
  });

  it('create: phone written with spaces → stored as E.164', async () => {
    const phone = uniquePhone(); // +23480XXXXXXXX
    const spaced = `${phone.slice(0, 4)} ${phone.slice(4, 7)} ${phone.slice(7, 10)} ${phone.slice(10)}`;
    const c = await createOk(apiA, { phone: spaced });
    assert.equal(c.phone, phone);
    assert.match(c.phone, /^\+[1-9]\d{6,14}$/);
  });

  it('create: same email in the same account → 409 DUPLICATE', async () => {
    const first = await createOk();
    assertError(await create(apiA, newCustomerBody({ email: first.email })), 409, 'DUPLICATE');
  });

  it('create: same email in another letter case → 409 DUPLICATE', async () => {
    const first = await createOk();
    assertError(await create(apiA, newCustomerBody({ email: first.email.toUpperCase() })), 409, 'DUPLICATE');
  });

  it('create: same phone in the same account → 409 DUPLICATE', async () => {
    const first = await createOk();
    assertError(await create(apiA, newCustomerBody({ phone: first.phone })), 409, 'DUPLICATE');
  });

  it('create: same email and phone under another account → 201 (uniqueness is per account)', async () => {
    const first = await createOk();
    const other = await createOk(apiB, { email: first.email, phone: first.phone });
    assert.notEqual(other.id, first.id);
    assert.equal(other.email, first.email);
  });

  it('create: a rejected duplicate → does not reserve its other value (its phone stays free)', async () => {
    const first = await createOk();
    const phone = uniquePhone();
    assertError(await create(apiA, newCustomerBody({ email: first.email, phone })), 409, 'DUPLICATE');
    const second = await createOk(apiA, { phone });
    assert.equal(second.phone, phone);
  });

  for (const field of ['name', 'email', 'phone', 'country_code']) {
    it(`create: missing ${field} → 400 VALIDATION`, async () => {
      const body = newCustomerBody();
      delete body[field];
      assertError(await create(apiA, body), 400, 'VALIDATION');
    });
  }

  const invalid: Array<[string, Record<string, unknown>]> = [
    ['email without @', { email: 'ada.example.com' }],
    ['email without a domain dot', { email: 'ada@example' }],
    ['phone without +', { phone: '2348031234567' }],
    ['impossible phone +2340000000', { phone: '+2340000000' }],
    ['disabled country CM', { country_code: 'CM' }],
    ['unknown country ZZ', { country_code: 'ZZ' }],
    ['lower-case country ng', { country_code: 'ng' }],
    ['extra field', { nickname: 'ada' }],
    ['empty name', { name: '' }],
    ['numeric phone', { phone: 2348031234567 }],
  ];
  for (const [label, overrides] of invalid) {
    it(`create: ${label} → 400 VALIDATION`, async () => {
      assertError(await create(apiA, newCustomerBody(overrides)), 400, 'VALIDATION');
    });
  }

  it('create: without Idempotency-Key → 422 IDEMPOTENCY_KEY_REQUIRED', async () => {
    assertError(await apiA('POST', '/v1/customers', { body: newCustomerBody() }), 422, 'IDEMPOTENCY_KEY_REQUIRED');
  });

  it('create: same Idempotency-Key and body twice → same customer; other body → 409 IDEMPOTENCY_REPLAY', async () => {
    const key = idem('cust-replay');
    const body = newCustomerBody();
    const first = await apiA('POST', '/v1/customers', { idempotencyKey: key, body });
    const second = await apiA('POST', '/v1/customers', { idempotencyKey: key, body });
    assert.equal(first.status, 201);
    assert.equal(second.status, 201);
    assert.deepEqual(second.body, first.body);
    assertError(await apiA('POST', '/v1/customers', { idempotencyKey: key, body: newCustomerBody() }), 409, 'IDEMPOTENCY_REPLAY');
  });

  it('create: no Authorization → 401 UNAUTHENTICATED', async () => {
    assertError(await apiA('POST', '/v1/customers', { key: null, idempotencyKey: idem(), body: newCustomerBody() }), 401, 'UNAUTHENTICATED');
  });
});

describe('GET /v1/customers/{id}', () => {
  it('get: own customer → 200, same fields as at creation', async () => {
    const c = await createOk();
    const response = await apiA('GET', `/v1/customers/${c.id}`);
    assert.equal(response.status, 200);
    assert.deepEqual(response.body.data, c);
  });

  it('get: malformed id → 400 VALIDATION', async () => {
    assertError(await apiA('GET', '/v1/customers/not-a-ulid'), 400, 'VALIDATION');
  });

  it('get: well-formed ULID that names no customer → 404 NOT_FOUND', async () => {
    assertError(await apiA('GET', `/v1/customers/${mintId(0, Date.now())}`), 404, 'NOT_FOUND');
    assertError(await apiA('GET', `/v1/customers/${mintId(63, Date.now())}`), 404, 'NOT_FOUND');
  });

  it('get: ULID outside every partition → 404 NOT_FOUND', async () => {
    assertError(await apiA('GET', `/v1/customers/${mintId(1000, Date.now())}`), 404, 'NOT_FOUND');
  });

  it('get: another account\'s customer → 403 FORBIDDEN', async () => {
    const c = await createOk(apiB);
    assertError(await apiA('GET', `/v1/customers/${c.id}`), 403, 'FORBIDDEN');
  });
});

describe('PATCH /v1/customers/{id}', () => {
  it('patch: name, tier and kyc_level → 200 with the new values, updated_at not before created_at', async () => {
    const c = await createOk();
    const response = await apiA('PATCH', `/v1/customers/${c.id}`, { body: { name: 'Ada O. Obi', tier: 'tier_2', kyc_level: 2 } });
    assert.equal(response.status, 200);
    assert.equal(response.body.data.name, 'Ada O. Obi');
    assert.equal(response.body.data.tier, 'tier_2');
    assert.equal(response.body.data.kyc_level, 2);
    assert.equal(response.body.data.email, c.email);
    assert.ok(Date.parse(response.body.data.updated_at) >= Date.parse(c.created_at));
    const read = await apiA('GET', `/v1/customers/${c.id}`);
    assert.equal(read.body.data.tier, 'tier_2');
  });

  it('patch: email in upper case and phone with spaces → 200, stored normalised', async () => {
    const c = await createOk();
    const email = uniqueEmail();
    const phone = uniquePhone();
    const response = await apiA('PATCH', `/v1/customers/${c.id}`, { body: { email: email.toUpperCase(), phone: `${phone.slice(0, 4)} ${phone.slice(4)}` } });
    assert.equal(response.status, 200, JSON.stringify(response.body));
    assert.equal(response.body.data.email, email);
    assert.equal(response.body.data.phone, phone);
  });

  it('patch: pin → 200 with pin_set true and no pin or hash in the body; pin null → pin_set false', async () => {
    const c = await createOk();
    const set = await apiA('PATCH', `/v1/customers/${c.id}`, { body: { pin: '482913' } });
    assert.equal(set.status, 200);
    assert.equal(set.body.data.pin_set, true);
    const text = JSON.stringify(set.body);
    assert.ok(!('pin' in set.body.data) && !('pin_hash' in set.body.data));
    assert.ok(!text.includes('482913') && !text.includes('scrypt'), text);
    const read = await apiA('GET', `/v1/customers/${c.id}`);
    assert.equal(read.body.data.pin_set, true);
    assert.ok(!JSON.stringify(read.body).includes('482913'));
    const cleared = await apiA('PATCH', `/v1/customers/${c.id}`, { body: { pin: null } });
    assert.equal(cleared.status, 200);
    assert.equal(cleared.body.data.pin_set, false);
  });

  it('patch: pin of 3 digits or with letters → 400 VALIDATION', async () => {
    const c = await createOk();
    assertError(await apiA('PATCH', `/v1/customers/${c.id}`, { body: { pin: '123' } }), 400, 'VALIDATION');
    assertError(await apiA('PATCH', `/v1/customers/${c.id}`, { body: { pin: '12a4' } }), 400, 'VALIDATION');
  });

  it('patch: an email another customer holds (any case) → 409 DUPLICATE, own email unchanged', async () => {
    const holder = await createOk();
    const c = await createOk();
    assertError(await apiA('PATCH', `/v1/customers/${c.id}`, { body: { email: holder.email.toUpperCase() } }), 409, 'DUPLICATE');
    const read = await apiA('GET', `/v1/customers/${c.id}`);
    assert.equal(read.body.data.email, c.email);
  });

  it('patch: a phone another customer holds → 409 DUPLICATE', async () => {
    const holder = await createOk();
    const c = await createOk();
    assertError(await apiA('PATCH', `/v1/customers/${c.id}`, { body: { phone: holder.phone } }), 409, 'DUPLICATE');
  });

  it('patch: own current email again → 200 (not a duplicate of itself)', async () => {
    const c = await createOk();
    const response = await apiA('PATCH', `/v1/customers/${c.id}`, { body: { email: c.email } });
    assert.equal(response.status, 200);
  });

  it('patch: email changed → old email free for a new customer, new email taken', async () => {
    const c = await createOk();
    const email = uniqueEmail();
    assert.equal((await apiA('PATCH', `/v1/customers/${c.id}`, { body: { email } })).status, 200);
    const reuse = await createOk(apiA, { email: c.email });
    assert.equal(reuse.email, c.email);
    assertError(await create(apiA, newCustomerBody({ email })), 409, 'DUPLICATE');
  });

  it('patch: phone changed → old phone free for a new customer', async () => {
    const c = await createOk();
    assert.equal((await apiA('PATCH', `/v1/customers/${c.id}`, { body: { phone: uniquePhone() } })).status, 200);
    const reuse = await createOk(apiA, { phone: c.phone });
    assert.equal(reuse.phone, c.phone);
  });

  it('patch: {} → 400 VALIDATION', async () => {
    const c = await createOk();
    assertError(await apiA('PATCH', `/v1/customers/${c.id}`, { body: {} }), 400, 'VALIDATION');
  });

  it('patch: unknown field, bad email, tier_9 or kyc_level 4 → 400 VALIDATION', async () => {
    const c = await createOk();
    for (const body of [{ country_code: 'GH' }, { email: 'nope' }, { tier: 'tier_9' }, { kyc_level: 4 }, { phone: '08031234567' }]) {
      assertError(await apiA('PATCH', `/v1/customers/${c.id}`, { body }), 400, 'VALIDATION');
    }
  });

  it('patch: another account\'s customer → 403 FORBIDDEN, customer unchanged', async () => {
    const c = await createOk(apiB);
    assertError(await apiA('PATCH', `/v1/customers/${c.id}`, { body: { name: 'Mallory' } }), 403, 'FORBIDDEN');
    assertError(await apiA('PATCH', `/v1/customers/${c.id}`, { body: { email: uniqueEmail() } }), 403, 'FORBIDDEN');
    const read = await apiB('GET', `/v1/customers/${c.id}`);
    assert.equal(read.body.data.name, 'Ada Obi');
    assert.equal(read.body.data.email, c.email);
  });

  it('create and patch, one rule per shared field: a blank name (spaces, NBSP, ideographic space) → 400 on both, nothing stored', async () => {
    const c = await createOk();
    for (const name of [' ', '   ', '\u00a0', '\u3000 ']) {
      assertError(await create(apiA, newCustomerBody({ name })), 400, 'VALIDATION');
      assertError(await apiA('PATCH', `/v1/customers/${c.id}`, { body: { name } }), 400, 'VALIDATION');
    }
    assert.equal((await apiA('GET', `/v1/customers/${c.id}`)).body.data.name, 'Ada Obi');
  });

  it('create and patch, one rule per shared field: name trimmed, email trimmed and lower-cased, phone to E.164; the same refusals', async () => {
    const email = uniqueEmail();
    const phone = uniquePhone();
    const made = await createOk(apiA, { name: '  Ada Obi ', email: ` ${email.toUpperCase()} `, phone: `${phone.slice(0, 4)} ${phone.slice(4)}` });
    assert.deepEqual([made.name, made.email, made.phone], ['Ada Obi', email, phone]);
    const other = await createOk();
    const email2 = uniqueEmail();
    const phone2 = uniquePhone();
    const patched = await apiA('PATCH', `/v1/customers/${other.id}`, { body: { name: '  Ada Obi ', email: ` ${email2.toUpperCase()} `, phone: `${phone2.slice(0, 4)} ${phone2.slice(4)}` } });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    assert.deepEqual([patched.body.data.name, patched.body.data.email, patched.body.data.phone], ['Ada Obi', email2, phone2]);
    for (const bad of [{ email: ' ada.example.com ' }, { email: '   ' }, { phone: '2348031234567' }, { phone: '+2340000000' }, { phone: '    ' }]) {
      assertError(await create(apiA, newCustomerBody(bad)), 400, 'VALIDATION');
      assertError(await apiA('PATCH', `/v1/customers/${other.id}`, { body: bad }), 400, 'VALIDATION');
    }
  });

  it('patch: unknown customer → 404 NOT_FOUND', async () => {
    assertError(await apiA('PATCH', `/v1/customers/${mintId(7, Date.now())}`, { body: { name: 'X' } }), 404, 'NOT_FOUND');
  });
});

describe('GET /v1/wallets/{id}', () => {
  it('get: a new customer\'s wallet → 200, NGN, balance 0, held 0, available = balance − held', async () => {
    const c = await createOk();
    const walletId = c.wallets[0]!.id;
    const response = await apiA('GET', `/v1/wallets/${walletId}`);
    assert.equal(response.status, 200);
    const w = response.body.data;
    assert.equal(w.id, walletId);
    assert.equal(w.customer_id, c.id);
    assert.equal(w.currency, 'NGN');
    assert.equal(w.balance_minor, 0);
    assert.equal(w.held_minor, 0);
    assert.equal(w.available_minor, w.balance_minor - w.held_minor);
  });

  it('get: another account\'s wallet → 403 FORBIDDEN', async () => {
    const c = await createOk(apiB);
    assertError(await apiA('GET', `/v1/wallets/${c.wallets[0]!.id}`), 403, 'FORBIDDEN');
  });

  it('get: a customer id used as a wallet id → 404 NOT_FOUND', async () => {
    const c = await createOk();
    assertError(await apiA('GET', `/v1/wallets/${c.id}`), 404, 'NOT_FOUND');
  });

  it('get: malformed wallet id → 400 VALIDATION', async () => {
    assertError(await apiA('GET', '/v1/wallets/wallet-1'), 400, 'VALIDATION');
  });
});

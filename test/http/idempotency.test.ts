// Covers Idempotency-Key handling on money-moving POSTs (customers, transactions, payments): required,
// bounded, replayed byte for byte, refused with another payload, stored failures replayed, concurrent
// duplicates collapsed, scoped per account and environment, refusals before execution not stored.
// Runs under node:test against one real server process.
// Invariant checked: two requests with one key never both execute; a retry never charges again.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { client, idem, secretKey, startServer, uniqueEmail, uniquePhone, type ApiResponse, type TestServer } from '../helpers/server.ts';

const IDEMPOTENCY_KEY_LENGTH_MAX = 255;
const keys = {
  acme: secretKey(),
  acmeSecond: secretKey(),
  acmeLive: secretKey('live'),
  globex: secretKey(),
};
let server: TestServer;
let api: ReturnType<typeof client>;
let customerId = '';

interface TextResponse {
  status: number;
  text: string;
  requestId: string;
}

function customerBody(): Record<string, string> {
  return { name: 'Idem Potent', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' };
}

/** POST returning the raw body text, for byte-for-byte comparison of replays. */
async function postText(path: string, options: { key?: string; idempotencyKey?: string; body: unknown }): Promise<TextResponse> {
  const headers: Record<string, string> = { authorization: `Bearer ${options.key ?? keys.acme}`, 'content-type': 'application/json' };
  if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
  const res = await fetch(server.baseUrl + path, { method: 'POST', headers, body: JSON.stringify(options.body) });
  return { status: res.status, text: await res.text(), requestId: res.headers.get('x-request-id') ?? '' };
}

function expectError(res: ApiResponse, status: number, code: string): void {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.equal(res.body?.error?.code, code, JSON.stringify(res.body));
}

async function newCustomer(key = keys.acme): Promise<{ id: string; walletId: string }> {
  const res = await api('POST', '/v1/customers', { key, idempotencyKey: idem('cust'), body: customerBody() });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return { id: res.body.data.id, walletId: res.body.data.wallets[0].id };
}

before(async () => {
  server = await startServer({ keys: [`${keys.acme}@acme`, `${keys.acmeSecond}@acme`, `${keys.acmeLive}@acme`, `${keys.globex}@globex`] });
  api = client(server.baseUrl, keys.acme);
  customerId = (await newCustomer()).id;
});

after(async () => {
  await server?.stop();
});

describe('Idempotency-Key: presence and bound', () => {
  it('POST /v1/customers, /v1/transactions, /v1/payments without a key → 422 IDEMPOTENCY_KEY_REQUIRED, nothing created', async () => {
    const customer = customerBody();
    expectError(await api('POST', '/v1/customers', { body: customer }), 422, 'IDEMPOTENCY_KEY_REQUIRED');
    expectError(
      await api('POST', '/v1/transactions', { body: { type: 'payment', customer_id: customerId, amount_minor: 10_000, currency: 'NGN' } }),
      422,
      'IDEMPOTENCY_KEY_REQUIRED',
    );
    expectError(
      await api('POST', '/v1/payments', { body: { customer_id: customerId, amount_minor: 10_000, currency: 'NGN', method: 'bank_transfer' } }),
      422,
      'IDEMPOTENCY_KEY_REQUIRED',
    );
    // The refused customer was not created: its email and phone are still free.
    const created = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: customer });
    assert.equal(created.status, 201, JSON.stringify(created.body));
  });

  it(`key of ${IDEMPOTENCY_KEY_LENGTH_MAX} characters → accepted; ${IDEMPOTENCY_KEY_LENGTH_MAX + 1} → 400 VALIDATION`, async () => {
    const atBound = `b${idem()}`.padEnd(IDEMPOTENCY_KEY_LENGTH_MAX, 'x');
    const ok = await api('POST', '/v1/customers', { idempotencyKey: atBound, body: customerBody() });
    assert.equal(ok.status, 201, JSON.stringify(ok.body));
    const tooLong = `o${idem()}`.padEnd(IDEMPOTENCY_KEY_LENGTH_MAX + 1, 'x');
    const refused = await api('POST', '/v1/customers', { idempotencyKey: tooLong, body: customerBody() });
    expectError(refused, 400, 'VALIDATION');
    assert.match(refused.body.error.message, /Idempotency-Key/);
  });
});

/** A POST whose Idempotency-Key header is the given raw bytes (fetch would not send them as they are). */
function rawKeyPost(path: string, keyBytes: Buffer, body: unknown): Promise<{ status: number; body: any }> {
  const payload = Buffer.from(JSON.stringify(body));
  const url = new URL(server.baseUrl);
  const head = Buffer.from(`POST ${path} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${keys.acme}\r\nContent-Type: application/json\r\nContent-Length: ${payload.length}\r\nConnection: close\r\nIdempotency-Key: `);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(url.port), url.hostname, () => socket.write(Buffer.concat([head, keyBytes, Buffer.from('\r\n\r\n'), payload])));
    let raw = Buffer.alloc(0);
    socket.on('data', (chunk) => (raw = Buffer.concat([raw, chunk])));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = raw.toString('utf8');
      const [statusLine = ''] = text.split('\r\n');
      const json = text.slice(text.indexOf('\r\n\r\n') + 4);
      resolve({ status: Number(statusLine.split(' ')[1]), body: json === '' ? text : JSON.parse(json) });
    });
  });
}

describe('Idempotency-Key: printable ASCII only', () => {
  it('non-ASCII inside a key, a key of only non-ASCII bytes, or an empty key → 400 VALIDATION, nothing created; spaces inside are fine', async () => {
    const payment = { customer_id: customerId, amount_minor: 12_345, currency: 'NGN', method: 'bank_transfer' };
    for (const key of [Buffer.from(`a-é-${idem()}`), Buffer.from(`${idem()}\u00e9\u00e9x`), Buffer.from('ééé'), Buffer.alloc(0), Buffer.from([0x61, 0xff, 0x62])]) {
      const refused = await rawKeyPost('/v1/payments', key, payment);
      assert.equal(refused.status, 400, `${JSON.stringify(key.toString('latin1'))}: ${JSON.stringify(refused.body)}`);
      assert.equal(refused.body.error.code, 'VALIDATION');
      assert.match(refused.body.error.message, /Idempotency-Key/);
    }
    const spaced = await rawKeyPost('/v1/payments', Buffer.from(`order ${idem()} try 1`), payment);
    assert.equal(spaced.status, 201, JSON.stringify(spaced.body));
  });
});

describe('Idempotency-Key: replay', () => {
  it('POST /v1/customers: same key and body → same status and byte-identical body (same id)', async () => {
    const body = customerBody();
    const idemKey = idem();
    const first = await postText('/v1/customers', { idempotencyKey: idemKey, body });
    const second = await postText('/v1/customers', { idempotencyKey: idemKey, body });
    assert.equal(first.status, 201, first.text);
    assert.equal(second.status, 201);
    assert.equal(second.text, first.text);
    assert.notEqual(second.requestId, first.requestId);
    const id = (JSON.parse(first.text) as { data: { id: string } }).data.id;
    assert.equal((await api('GET', `/v1/customers/${id}`)).status, 200);
  });

  it('POST /v1/transactions and /v1/payments: same key and body → byte-identical 201 with the same ids', async () => {
    const txnBody = { type: 'funding', customer_id: customerId, amount_minor: 12_345, currency: 'NGN', reference: 'idem-txn' };
    const payBody = { customer_id: customerId, amount_minor: 20_000, currency: 'NGN', method: 'bank_transfer' };
    for (const [path, body] of [['/v1/transactions', txnBody], ['/v1/payments', payBody]] as const) {
      const idemKey = idem();
      const first = await postText(path, { idempotencyKey: idemKey, body });
      const second = await postText(path, { idempotencyKey: idemKey, body });
      assert.equal(first.status, 201, `${path}: ${first.text}`);
      assert.equal(second.status, 201);
      assert.equal(second.text, first.text, path);
    }
  });

  it('same key, different body → 409 IDEMPOTENCY_REPLAY; the first result is kept', async () => {
    const idemKey = idem();
    const body = customerBody();
    const first = await api('POST', '/v1/customers', { idempotencyKey: idemKey, body });
    assert.equal(first.status, 201);
    expectError(await api('POST', '/v1/customers', { idempotencyKey: idemKey, body: { ...body, name: 'Someone Else' } }), 409, 'IDEMPOTENCY_REPLAY');
    const again = await api('POST', '/v1/customers', { idempotencyKey: idemKey, body });
    assert.equal(again.status, 201);
    assert.equal(again.body.data.id, first.body.data.id);
    assert.equal(again.body.data.name, body.name);
  });

  it('same key on another endpoint → 409 IDEMPOTENCY_REPLAY', async () => {
    const idemKey = idem();
    assert.equal((await api('POST', '/v1/customers', { idempotencyKey: idemKey, body: customerBody() })).status, 201);
    const txn = await api('POST', '/v1/transactions', {
      idempotencyKey: idemKey,
      body: { type: 'payment', customer_id: customerId, amount_minor: 10_000, currency: 'NGN' },
    });
    expectError(txn, 409, 'IDEMPOTENCY_REPLAY');
  });

  it('stored failure: wallet payment → 422 INSUFFICIENT_FUNDS; after funding, the same key and body → still 422, no charge', async () => {
    const customer = await newCustomer();
    const walletPayment = { customer_id: customer.id, amount_minor: 5_000, currency: 'NGN', method: 'wallet' };
    const idemKey = idem('wallet');
    const first = await api('POST', '/v1/payments', { idempotencyKey: idemKey, body: walletPayment });
    expectError(first, 422, 'INSUFFICIENT_FUNDS');

    const funding = await api('POST', '/v1/payments', {
      idempotencyKey: idem('fund'),
      body: { customer_id: customer.id, amount_minor: 100_000, currency: 'NGN', method: 'bank_transfer' },
    });
    assert.equal(funding.status, 201, JSON.stringify(funding.body));
    const settled = await api('POST', `/v1/test_helpers/payments/${funding.body.data.id}/settle`);
    assert.equal(settled.status, 200, JSON.stringify(settled.body));
    const funded = await api('GET', `/v1/wallets/${customer.walletId}`);
    assert.equal(funded.status, 200);
    assert.ok(funded.body.data.available_minor >= walletPayment.amount_minor, JSON.stringify(funded.body));

    const replay = await api('POST', '/v1/payments', { idempotencyKey: idemKey, body: walletPayment });
    expectError(replay, 422, 'INSUFFICIENT_FUNDS');
    assert.equal(replay.body.error.message, first.body.error.message);
    assert.equal(replay.body.error.request_id, replay.headers.get('x-request-id'));
    const unchanged = await api('GET', `/v1/wallets/${customer.walletId}`);
    assert.equal(unchanged.body.data.balance_minor, funded.body.data.balance_minor);
    assert.equal(unchanged.body.data.held_minor, funded.body.data.held_minor);

    // The wallet could pay now: only the stored result kept the retry from charging.
    const fresh = await api('POST', '/v1/payments', { idempotencyKey: idem('wallet'), body: walletPayment });
    assert.equal(fresh.status, 201, JSON.stringify(fresh.body));
  });
});

describe('Idempotency-Key: concurrency', () => {
  it('20 concurrent POST /v1/customers with one key and body → one customer, 20 identical answers', async () => {
    const body = customerBody();
    const idemKey = idem('burst');
    const answers = await Promise.all(Array.from({ length: 20 }, () => postText('/v1/customers', { idempotencyKey: idemKey, body })));
    for (const answer of answers) {
      assert.equal(answer.status, 201, answer.text);
      assert.equal(answer.text, answers[0]!.text);
    }
    assert.equal(new Set(answers.map((a) => a.requestId)).size, 20);
    const id = (JSON.parse(answers[0]!.text) as { data: { id: string } }).data.id;
    assert.equal((await api('GET', `/v1/customers/${id}`)).status, 200);
    // The one customer holds the email; a new key with the same details is a duplicate, not a second customer.
    expectError(await api('POST', '/v1/customers', { idempotencyKey: idem(), body }), 409, 'DUPLICATE');
  });

  it('20 concurrent POST /v1/transactions with one key and body → one transaction id in every answer', async () => {
    const body = { type: 'payment', customer_id: customerId, amount_minor: 10_000, currency: 'NGN' };
    const idemKey = idem('burst-txn');
    const answers = await Promise.all(Array.from({ length: 20 }, () => postText('/v1/transactions', { idempotencyKey: idemKey, body })));
    const texts = new Set(answers.map((a) => `${a.status} ${a.text}`));
    assert.equal(texts.size, 1, [...texts].join('\n'));
    assert.equal(answers[0]!.status, 201, answers[0]!.text);
  });

  it('20 concurrent requests with one key and 20 different bodies → exactly one 201, nineteen 409 IDEMPOTENCY_REPLAY', async () => {
    const idemKey = idem('race');
    const bodies = Array.from({ length: 20 }, () => customerBody());
    const answers = await Promise.all(bodies.map((body) => api('POST', '/v1/customers', { idempotencyKey: idemKey, body })));
    const created = answers.filter((a) => a.status === 201);
    assert.equal(created.length, 1, answers.map((a) => a.status).join(','));
    for (const answer of answers) if (answer.status !== 201) expectError(answer, 409, 'IDEMPOTENCY_REPLAY');
    // Only the winner's email was registered; every loser's is still free.
    const winnerEmail = created[0]!.body.data.email as string;
    for (const body of bodies) {
      if (body.email === winnerEmail) continue;
      const res = await api('POST', '/v1/customers', { idempotencyKey: idem(), body });
      assert.equal(res.status, 201, JSON.stringify(res.body));
    }
  });
});

describe('Idempotency-Key: scope', () => {
  it('same key string under two accounts → two independent results', async () => {
    const idemKey = idem('shared');
    const acme = await api('POST', '/v1/customers', { idempotencyKey: idemKey, body: customerBody() });
    const globex = await api('POST', '/v1/customers', { key: keys.globex, idempotencyKey: idemKey, body: customerBody() });
    assert.equal(acme.status, 201);
    assert.equal(globex.status, 201, JSON.stringify(globex.body));
    assert.notEqual(globex.body.data.id, acme.body.data.id);
  });

  it('same key string in sandbox and live of one account → independent results', async () => {
    const idemKey = idem('env');
    const body = customerBody();
    const sandbox = await api('POST', '/v1/customers', { idempotencyKey: idemKey, body });
    const live = await api('POST', '/v1/customers', { key: keys.acmeLive, idempotencyKey: idemKey, body });
    assert.equal(sandbox.status, 201);
    assert.equal(live.status, 201, JSON.stringify(live.body));
    assert.notEqual(live.body.data.id, sandbox.body.data.id);
  });

  it('same key from a second key of the same account → replays the first result', async () => {
    const idemKey = idem('account');
    const body = customerBody();
    const first = await postText('/v1/customers', { idempotencyKey: idemKey, body });
    const second = await postText('/v1/customers', { key: keys.acmeSecond, idempotencyKey: idemKey, body });
    assert.equal(first.status, 201);
    assert.equal(second.status, 201);
    assert.equal(second.text, first.text);
  });
});

describe('Idempotency-Key: what is not stored', () => {
  it('schema failure (400) → not stored: the same key with a valid body → 201', async () => {
    const idemKey = idem('invalid');
    const invalid = await api('POST', '/v1/payments', {
      idempotencyKey: idemKey,
      body: { customer_id: customerId, amount_minor: 1.5, currency: 'NGN', method: 'bank_transfer' },
    });
    expectError(invalid, 400, 'VALIDATION');
    const valid = await api('POST', '/v1/payments', {
      idempotencyKey: idemKey,
      body: { customer_id: customerId, amount_minor: 15_000, currency: 'NGN', method: 'bank_transfer' },
    });
    assert.equal(valid.status, 201, JSON.stringify(valid.body));
  });

  it('handler check failure (unknown currency, bad email) → 400, not stored: the same key then → 201', async () => {
    const payKey = idem('currency');
    expectError(
      await api('POST', '/v1/payments', { idempotencyKey: payKey, body: { customer_id: customerId, amount_minor: 15_000, currency: 'QQQ', method: 'bank_transfer' } }),
      400,
      'VALIDATION',
    );
    const paid = await api('POST', '/v1/payments', { idempotencyKey: payKey, body: { customer_id: customerId, amount_minor: 15_000, currency: 'NGN', method: 'bank_transfer' } });
    assert.equal(paid.status, 201, JSON.stringify(paid.body));

    const custKey = idem('email');
    expectError(await api('POST', '/v1/customers', { idempotencyKey: custKey, body: { ...customerBody(), email: 'not-an-email' } }), 400, 'VALIDATION');
    const created = await api('POST', '/v1/customers', { idempotencyKey: custKey, body: customerBody() });
    assert.equal(created.status, 201, JSON.stringify(created.body));
  });
});

describe('Idempotency-Key: malformed input found by the shard', () => {
  it('POST /v1/payments: amount below the method minimum → 400, not stored → the key works with a corrected body', async () => {
    const k = idem('minimum');
    const tooSmall = await api('POST', '/v1/payments', { idempotencyKey: k, body: { customer_id: customerId, amount_minor: 1, currency: 'NGN', method: 'bank_transfer' } });
    expectError(tooSmall, 400, 'VALIDATION');
    const corrected = await api('POST', '/v1/payments', { idempotencyKey: k, body: { customer_id: customerId, amount_minor: 50_000, currency: 'NGN', method: 'bank_transfer' } });
    assert.equal(corrected.status, 201, JSON.stringify(corrected.body));
    const replay = await api('POST', '/v1/payments', { idempotencyKey: k, body: { customer_id: customerId, amount_minor: 50_000, currency: 'NGN', method: 'bank_transfer' } });
    assert.deepEqual(replay.body, corrected.body);
  });
});

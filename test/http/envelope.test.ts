// Covers the HTTP pipeline's envelope and refusals: X-Request-Id on every response, the error body,
// unknown routes and methods, JSON and content-type checks, the body size bound (declared and
// chunked), schema validation of amounts and fields, and an aborted upload.
// Runs under node:test against one real server process started with KOBO_BODY_BYTES_MAX=1024.
// Invariant checked: every response carries X-Request-Id equal to error.request_id, and a request
// refused by the pipeline never reaches a shard.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { client, idem, secretKey, startServer, uniqueEmail, uniquePhone, type ApiResponse, type TestServer } from '../helpers/server.ts';

const BODY_BYTES_MAX = 1024;
const key = secretKey();
let server: TestServer;
let api: ReturnType<typeof client>;
let customerId = '';
const seenRequestIds = new Set<string>();

interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: any;
}

function customerBody(): Record<string, string> {
  return { name: 'Envelope Test', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' };
}

/** Checks the request id of any response, and that an error's body repeats it; returns the id. */
function checkRequestId(status: number, requestId: string | null | undefined, body: any): string {
  assert.match(requestId ?? '', /^req_[0-9a-z]+$/, `status ${status}: X-Request-Id missing`);
  if (status >= 400) {
    assert.deepEqual(Object.keys(body), ['error'], JSON.stringify(body));
    assert.deepEqual(Object.keys(body.error).sort(), ['code', 'message', 'request_id']);
    assert.equal(body.error.request_id, requestId, 'error.request_id equals X-Request-Id');
    assert.equal(typeof body.error.message, 'string');
    assert.ok(body.error.message.length > 0);
  }
  assert.ok(!seenRequestIds.has(requestId!), `request id ${requestId} repeated`);
  seenRequestIds.add(requestId!);
  return requestId!;
}

function expectError(res: ApiResponse, status: number, code: string): void {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.equal(res.body?.error?.code, code, JSON.stringify(res.body));
  checkRequestId(res.status, res.headers.get('x-request-id'), res.body);
}

/** A POST through node:http: `chunks` written one by one; chunked encoding unless Content-Length is set. */
function rawPost(urlPath: string, headers: Record<string, string>, chunks: readonly string[]): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    // A server that refuses a body mid-way answers and closes: the client stops writing once the answer
    // has come (a write after the close would fail with EPIPE and hide the answer), and waits a little
    // between chunks so the answer can come first.
    let answered = false;
    const req = http.request({ host: '127.0.0.1', port: server.port, method: 'POST', path: urlPath, headers, agent: false }, (res) => {
      answered = true;
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text === '' ? null : JSON.parse(text) }));
    });
    req.on('error', (error) => {
      if (!answered) reject(error);
    });
    let index = 0;
    const writeNext = (): void => {
      if (answered) return;
      const chunk = chunks[index];
      index += 1;
      if (chunk === undefined) {
        req.end();
        return;
      }
      req.write(chunk, () => setTimeout(writeNext, 20));
    };
    writeNext();
  });
}

function authHeaders(extra: Record<string, string> = {}): Record<string, string> {
  return { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': idem('raw'), ...extra };
}

before(async () => {
  server = await startServer({ keys: [key], env: { KOBO_BODY_BYTES_MAX: String(BODY_BYTES_MAX) } });
  api = client(server.baseUrl, key);
  const created = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: customerBody() });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  customerId = created.body.data.id;
});

after(async () => {
  await server?.stop();
});

describe('envelope and request id', () => {
  it('X-Request-Id: 200, 201, 400, 401, 404, 405, 409, 415, 422 → present, unique, equal to error.request_id', async () => {
    const replayKey = idem('replay');
    assert.equal((await api('POST', '/v1/customers', { idempotencyKey: replayKey, body: customerBody() })).status, 201);
    const cases: Array<[number, Promise<ApiResponse>]> = [
      [409, api('POST', '/v1/customers', { idempotencyKey: replayKey, body: customerBody() })],
      [422, api('POST', '/v1/customers', { body: customerBody() })],
      [200, api('GET', '/v1/countries', { key: null })],
      [201, api('POST', '/v1/customers', { idempotencyKey: idem(), body: customerBody() })],
      [400, api('POST', '/v1/customers', { idempotencyKey: idem(), rawBody: '{"name":', headers: { 'content-type': 'application/json' } })],
      [401, api('GET', `/v1/customers/${customerId}`, { key: null })],
      [404, api('GET', '/v1/no-such-route', { key: null })],
      [405, api('DELETE', '/v1/customers')],
      [415, api('POST', '/v1/customers', { idempotencyKey: idem(), rawBody: JSON.stringify(customerBody()), headers: { 'content-type': 'text/plain' } })],
    ];
    for (const [status, pending] of cases) {
      const res = await pending;
      assert.equal(res.status, status, JSON.stringify(res.body));
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
      checkRequestId(res.status, res.headers.get('x-request-id'), res.body);
    }
  });

  it('X-Request-Id: 413 → present and equal to error.request_id', async () => {
    const body = JSON.stringify({ ...customerBody(), name: 'x'.repeat(4096) });
    const res = await rawPost('/v1/customers', authHeaders({ 'content-length': String(Buffer.byteLength(body)) }), [body]);
    assert.equal(res.status, 413);
    checkRequestId(res.status, res.headers['x-request-id'] as string, res.body);
  });

  it('X-Request-Id: 100 sequential and 50 concurrent requests → 150 distinct ids', async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 100; i += 1) ids.add((await api('GET', '/v1/countries', { key: null })).headers.get('x-request-id') ?? '');
    const concurrent = await Promise.all(Array.from({ length: 50 }, () => api('GET', `/v1/customers/${customerId}`)));
    for (const res of concurrent) ids.add(res.headers.get('x-request-id') ?? '');
    ids.delete('');
    assert.equal(ids.size, 150);
  });

  it('success → body is { data } with no error key', async () => {
    const res = await api('GET', `/v1/customers/${customerId}`);
    assert.equal(res.status, 200);
    assert.deepEqual(Object.keys(res.body), ['data']);
    assert.equal(res.body.data.id, customerId);
    checkRequestId(res.status, res.headers.get('x-request-id'), res.body);
  });
});

describe('routing', () => {
  it('unknown route → 404 NOT_FOUND in the envelope', async () => {
    expectError(await api('GET', '/v1/nothing-here'), 404, 'NOT_FOUND');
    expectError(await api('GET', `/v1/customers/${customerId}/nothing`), 404, 'NOT_FOUND');
    expectError(await api('POST', '/v2/customers', { body: {} }), 404, 'NOT_FOUND');
  });

  it('wrong method: DELETE /v1/customers, PUT /v1/payments → 405 METHOD_NOT_ALLOWED with Allow: GET, POST (the list and the create)', async () => {
    for (const [method, path] of [['DELETE', '/v1/customers'], ['PUT', '/v1/payments']] as const) {
      const res = await api(method, path);
      expectError(res, 405, 'METHOD_NOT_ALLOWED');
      assert.deepEqual((res.headers.get('allow') ?? '').split(',').map((m) => m.trim()).sort(), ['GET', 'POST']);
    }
  });

  it('wrong method on /v1/customers/{id} → 405 with Allow listing GET and PATCH', async () => {
    const res = await api('DELETE', `/v1/customers/${customerId}`);
    expectError(res, 405, 'METHOD_NOT_ALLOWED');
    const allow = (res.headers.get('allow') ?? '').split(',').map((m) => m.trim()).sort();
    assert.deepEqual(allow, ['GET', 'PATCH']);
  });
});

describe('request bodies', () => {
  it('malformed JSON → 400 VALIDATION', async () => {
    for (const raw of ['{"name":', '{name: 1}', "{'a':1}", '[1,']) {
      const res = await api('POST', '/v1/customers', { idempotencyKey: idem(), rawBody: raw, headers: { 'content-type': 'application/json' } });
      expectError(res, 400, 'VALIDATION');
      assert.match(res.body.error.message, /JSON/);
    }
  });

  it('POST with a body and Content-Type text/plain (or none) → 415 UNSUPPORTED_MEDIA_TYPE, nothing created', async () => {
    const body = customerBody();
    const idemKey = idem('media');
    expectError(await api('POST', '/v1/customers', { idempotencyKey: idemKey, rawBody: JSON.stringify(body), headers: { 'content-type': 'text/plain' } }), 415, 'UNSUPPORTED_MEDIA_TYPE');
    expectError(await api('POST', '/v1/customers', { idempotencyKey: idemKey, rawBody: JSON.stringify(body), headers: { 'content-type': 'application/x-www-form-urlencoded' } }), 415, 'UNSUPPORTED_MEDIA_TYPE');
    const created = await api('POST', '/v1/customers', { idempotencyKey: idemKey, body });
    assert.equal(created.status, 201, JSON.stringify(created.body));
  });

  it('Content-Type application/json; charset=utf-8 → accepted', async () => {
    const res = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: customerBody(), headers: { 'content-type': 'application/json; charset=utf-8' } });
    assert.equal(res.status, 201, JSON.stringify(res.body));
  });

  it('body over the limit with Content-Length declared → 413 PAYLOAD_TOO_LARGE', async () => {
    const body = JSON.stringify({ ...customerBody(), name: 'x'.repeat(4096) });
    const res = await rawPost('/v1/customers', authHeaders({ 'content-length': String(Buffer.byteLength(body)) }), [body]);
    assert.equal(res.status, 413);
    assert.equal(res.body.error.code, 'PAYLOAD_TOO_LARGE');
  });

  it('body over the limit sent chunked (no Content-Length) → 413 PAYLOAD_TOO_LARGE', async () => {
    const body = JSON.stringify({ ...customerBody(), name: 'x'.repeat(4096) });
    const chunks = [body.slice(0, 700), body.slice(700, 1400), body.slice(1400, 2800), body.slice(2800)];
    const res = await rawPost('/v1/customers', authHeaders(), chunks);
    assert.equal(res.status, 413);
    assert.equal(res.body.error.code, 'PAYLOAD_TOO_LARGE');
    checkRequestId(res.status, res.headers['x-request-id'] as string, res.body);
  });

  it('body over the limit without a valid key (none, or a wrong one; declared or chunked) → 401 UNAUTHENTICATED, not 413', async () => {
    const body = JSON.stringify({ ...customerBody(), name: 'x'.repeat(4096) });
    const declared = { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) };
    for (const headers of [declared, { ...declared, authorization: 'Bearer sk_test_not_a_key_at_all' }, { 'content-type': 'application/json' }]) {
      const chunks = 'content-length' in headers ? [body] : [body.slice(0, 2000), body.slice(2000)];
      const res = await rawPost('/v1/customers', headers, chunks);
      assert.equal(res.status, 401, JSON.stringify(headers));
      assert.equal(res.body.error.code, 'UNAUTHENTICATED');
      assert.equal(res.headers['www-authenticate'], 'Bearer realm="kobo"');
    }
  });

  it('small body sent chunked → parsed and accepted (201)', async () => {
    const body = JSON.stringify(customerBody());
    const res = await rawPost('/v1/customers', authHeaders(), [body.slice(0, 20), body.slice(20, 40), body.slice(40)]);
    assert.equal(res.status, 201, JSON.stringify(res.body));
  });

  it(`body of exactly ${BODY_BYTES_MAX} bytes → accepted; ${BODY_BYTES_MAX + 1} bytes → 413`, async () => {
    const json = JSON.stringify(customerBody());
    const atLimit = json.padEnd(BODY_BYTES_MAX, ' ');
    assert.equal(Buffer.byteLength(atLimit), BODY_BYTES_MAX);
    const ok = await api('POST', '/v1/customers', { idempotencyKey: idem(), rawBody: atLimit, headers: { 'content-type': 'application/json' } });
    assert.equal(ok.status, 201, JSON.stringify(ok.body));
    const over = JSON.stringify(customerBody()).padEnd(BODY_BYTES_MAX + 1, ' ');
    const res = await rawPost('/v1/customers', authHeaders({ 'content-length': String(BODY_BYTES_MAX + 1) }), [over]);
    assert.equal(res.status, 413);
  });

  it('after 413 refusals → the server still answers normal requests', async () => {
    const res = await api('GET', `/v1/customers/${customerId}`);
    assert.equal(res.status, 200);
  });
});

describe('schema validation', () => {
  const amountCases: Array<[string, unknown]> = [
    ['a float (1.5)', 1.5],
    ['a string ("100")', '100'],
    ['zero', 0],
    ['negative (-100)', -100],
    ['above 2^53 - 1', 2 ** 53],
    ['null', null],
  ];
  for (const [label, amount] of amountCases) {
    it(`POST /v1/payments and /v1/transactions: amount_minor ${label} → 400 VALIDATION naming amount_minor`, async () => {
      const payment = await api('POST', '/v1/payments', {
        idempotencyKey: idem(),
        body: { customer_id: customerId, amount_minor: amount, currency: 'NGN', method: 'bank_transfer' },
      });
      expectError(payment, 400, 'VALIDATION');
      assert.match(payment.body.error.message, /amount_minor/);
      const txn = await api('POST', '/v1/transactions', {
        idempotencyKey: idem(),
        body: { type: 'payment', customer_id: customerId, amount_minor: amount, currency: 'NGN' },
      });
      expectError(txn, 400, 'VALIDATION');
      assert.match(txn.body.error.message, /amount_minor/);
    });
  }

  it('amount_minor written as a float literal (20000.0, 2e4, 1E5, -1.0) → 400 VALIDATION naming it; 20000 → 201', async () => {
    for (const literal of ['20000.0', '2e4', '1E5', '2.0e4', '-1.0']) {
      for (const [path, rest] of [['/v1/payments', '"currency":"NGN","method":"bank_transfer"'], ['/v1/transactions', '"type":"payment","currency":"NGN"']] as const) {
        const raw = `{"customer_id":"${customerId}","amount_minor":${literal},${rest}}`;
        const res = await api('POST', path, { idempotencyKey: idem(), rawBody: raw, headers: { 'content-type': 'application/json' } });
        expectError(res, 400, 'VALIDATION');
        assert.match(res.body.error.message, /^amount_minor must be an integer/, `${path} ${literal}`);
      }
    }
    const raw = `{ "customer_id" : "${customerId}", "amount_minor" : 20000 , "currency":"NGN","method":"bank_transfer","reference":"ref 2.5e3"}`;
    const ok = await api('POST', '/v1/payments', { idempotencyKey: idem(), rawBody: raw, headers: { 'content-type': 'application/json' } });
    assert.equal(ok.status, 201, `an integer amount (and a float-looking string) are fine: ${JSON.stringify(ok.body)}`);
  });

  it('amount_minor missing → 400 VALIDATION naming amount_minor', async () => {
    const res = await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: customerId, currency: 'NGN', method: 'bank_transfer' } });
    expectError(res, 400, 'VALIDATION');
    assert.match(res.body.error.message, /amount_minor/);
  });

  it('unknown extra field → 400 VALIDATION naming the field', async () => {
    const customer = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: { ...customerBody(), nickname: 'ade' } });
    expectError(customer, 400, 'VALIDATION');
    assert.match(customer.body.error.message, /nickname/);
    const payment = await api('POST', '/v1/payments', {
      idempotencyKey: idem(),
      body: { customer_id: customerId, amount_minor: 10_000, currency: 'NGN', method: 'bank_transfer', fee_minor: 0 },
    });
    expectError(payment, 400, 'VALIDATION');
    assert.match(payment.body.error.message, /fee_minor/);
  });

  it('body that is not an object (array, null, string) → 400 VALIDATION', async () => {
    for (const raw of ['[]', 'null', '"customer"']) {
      expectError(await api('POST', '/v1/customers', { idempotencyKey: idem(), rawBody: raw, headers: { 'content-type': 'application/json' } }), 400, 'VALIDATION');
    }
  });

  it('POST with no body where one is required → 400 VALIDATION', async () => {
    expectError(await api('POST', '/v1/customers', { idempotencyKey: idem() }), 400, 'VALIDATION');
  });
});

describe('aborted requests', () => {
  it('client sends half of a declared body and disconnects → nothing created; the server keeps answering', async () => {
    const idemKey = idem('aborted');
    const half = JSON.stringify(customerBody()).padEnd(1000, ' ').slice(0, 500);
    await new Promise<void>((resolve, reject) => {
      const socket = net.connect(server.port, '127.0.0.1', () => {
        socket.write(
          `POST /v1/customers HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\n` +
            `Content-Type: application/json\r\nIdempotency-Key: ${idemKey}\r\nContent-Length: 1000\r\n\r\n${half}`,
          () => setTimeout(() => {
            socket.destroy();
            resolve();
          }, 50),
        );
      });
      socket.on('error', reject);
    });
    const alive = await api('GET', `/v1/customers/${customerId}`);
    assert.equal(alive.status, 200);
    // Had the aborted request run, this key would now replay it or refuse a different body with 409.
    const created = await api('POST', '/v1/customers', { idempotencyKey: idemKey, body: customerBody() });
    assert.equal(created.status, 201, JSON.stringify(created.body));
  });
});

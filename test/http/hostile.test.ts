// Hostile input against a real server: every case a black-box review found (deep JSON, huge amounts,
// customer-scoped keys on webhooks, SSRF URLs, unsafe text, PIN guessing, slow readers, retried
// helpers) as named regressions, then fast-check bodies derived from the request schemas. Throughout:
// no 5xx, the process never exits, rejected requests store nothing, and `kobo verify` is clean at the end.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import fc from 'fast-check';
import type { TSchema } from 'typebox';
import { client, idem, secretKey, startServer, tempDataDir, uniqueEmail, uniquePhone, type ApiResponse, type TestServer } from '../helpers/server.ts';
import { kobo } from '../helpers/cli.ts';
import { CustomerCreate, CustomerPatch } from '../../src/schemas/customer.schema.ts';
import { PaymentCreate, TransactionCreate } from '../../src/schemas/transaction.schema.ts';
import { ExchangeQuoteCreate } from '../../src/schemas/exchange.schema.ts';
import { BeneficiaryCreate, TransferCreate } from '../../src/schemas/transfer.schema.ts';
import { ServiceOrderCreate, ServiceQuoteCreate } from '../../src/schemas/service-order.schema.ts';
import { SubscriptionCreate } from '../../src/schemas/webhook.schema.ts';

const key = secretKey('test');
const liveKey = secretKey('live');
const dataDir = tempDataDir('kobo-hostile');
let server: TestServer;
let api: ReturnType<typeof client>;
const statuses: number[] = [];
let victim: { id: string; walletId: string };
let scopedKey = '';

/** Every answer of this file goes through here: no 5xx, always the envelope on errors. */
function tracked(base: ReturnType<typeof client>): ReturnType<typeof client> {
  return async (method, urlPath, options) => {
    const response = await base(method, urlPath, options);
    statuses.push(response.status);
    assert.ok(response.status < 500, `${method} ${urlPath} → ${response.status} ${JSON.stringify(response.body)}`);
    if (response.status >= 400) {
      assert.equal(typeof response.body?.error?.code, 'string', JSON.stringify(response.body));
      assert.equal(response.body.error.request_id, response.headers.get('x-request-id'));
    }
    return response;
  };
}

async function start(): Promise<void> {
  server = await startServer({ dataDir, keys: [`${key}@hostile`, `${liveKey}@hostile`], env: { KOBO_WEBHOOK_SUBSCRIPTIONS_MAX: '3' } });
  api = tracked(client(server.baseUrl, key));
}

async function newCustomer(): Promise<{ id: string; walletId: string }> {
  const created = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: 'Ada Obi', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  return { id: created.body.data.id, walletId: created.body.data.wallets[0].id };
}

/** What a rejected request must not change: the victim's wallet and transactions. */
async function victimState(): Promise<string> {
  const wallet = await api('GET', `/v1/wallets/${victim.walletId}`);
  const customer = await api('GET', `/v1/customers/${victim.id}`);
  return JSON.stringify({ wallet: wallet.body.data, customer: customer.body.data });
}

function nested(depth: number): unknown {
  let value: unknown = { leaf: true };
  for (let i = 0; i < depth; i += 1) value = { n: value };
  return value;
}

const orderBody = (extra: Record<string, unknown>) => ({
  country_code: 'NG',
  service_code: 'airtime',
  provider_cost_minor: 10_000,
  currency: 'NGN',
  payment_method: 'wallet',
  customer_id: victim.id,
  phone: '+2348031234567',
  ...extra,
});

before(async () => {
  await start();
  victim = await newCustomer();
  // Fund the victim so that a stray debit would show.
  const payment = await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: victim.id, amount_minor: 500_000, currency: 'NGN', method: 'bank_transfer' } });
  assert.equal(payment.status, 201, JSON.stringify(payment.body));
  assert.equal((await api('POST', `/v1/test_helpers/payments/${payment.body.data.id}/settle`)).status, 200);
  const created = kobo(dataDir, 'keys', 'create', '--account', 'hostile', '--customer', victim.id);
  assert.equal(created.status, 0, created.stderr);
  scopedKey = /secret \(shown once\): (sk_\w+_[A-Za-z0-9_-]+)/.exec(created.stdout)![1]!;
});

after(async () => {
  await server.stop();
});

describe('1. deep and wide JSON, amounts', () => {
  it('service order: metadata nested 3,500 levels (~24 KB) → 400 VALIDATION naming the limit; the server lives', async () => {
    const before = await victimState();
    for (const field of ['metadata', 'validation_snapshot']) {
      const body = orderBody({ [field]: nested(3_500) });
      assert.ok(JSON.stringify(body).length > 20_000);
      const response = await api('POST', '/v1/services/orders', { idempotencyKey: idem('deep'), body });
      assert.equal(response.status, 400);
      assert.equal(response.body.error.code, 'VALIDATION');
      assert.match(response.body.error.message, /deeper than 32 levels/);
    }
    assert.equal(server.child.exitCode, null, 'the server process is alive');
    assert.equal(await victimState(), before);
  });

  it('any JSON body: an array of 3,000 nested arrays, or more than 4,096 members → 400 VALIDATION', async () => {
    const deepArray = await api('POST', '/v1/customers', { idempotencyKey: idem(), rawBody: '['.repeat(3_000) + ']'.repeat(3_000), headers: { 'content-type': 'application/json' } });
    assert.equal(deepArray.status, 400);
    assert.match(deepArray.body.error.message, /deeper than 32/);
    const wide = await api('POST', '/v1/webhooks/subscriptions', { body: { url: 'https://hooks.example.com/', events: new Array(5_000).fill(1) } });
    assert.equal(wide.status, 400);
    assert.match(wide.body.error.message, /more than 4096 keys and array items/);
    // At the bound: 32 levels are accepted by the policy (the schema then decides).
    const atBound = await api('POST', '/v1/services/orders', { idempotencyKey: idem(), body: orderBody({ metadata: nested(29) }) });
    assert.notEqual(atBound.body?.error?.message ?? '', 'The body nests objects and arrays deeper than 32 levels.');
  });

  it('exchange quote USD→NGN from_amount_minor 1e13 → 400 VALIDATION (no internal text)', async () => {
    const us = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: 'Sam Lee', email: uniqueEmail(), phone: '+12025550' + String(100 + Math.floor(Math.random() * 899)), country_code: 'US' } });
    const customerId = us.status === 201 ? us.body.data.id : victim.id;
    for (const [from, to] of [['USD', 'NGN'], ['NGN', 'USD'], ['GBP', 'NGN']]) {
      const response = await api('POST', '/v1/exchange/quotes', { body: { customer_id: customerId, from_currency: from, to_currency: to, from_amount_minor: 10_000_000_000_000 } });
      assert.ok(response.status === 400 || response.status === 422 || response.status === 201, `${from}->${to} ${response.status}`);
      assert.doesNotMatch(JSON.stringify(response.body), /fx:|safe integer range"|stack|at .*\.ts/);
    }
    const huge = await api('POST', '/v1/exchange/quotes', { body: { customer_id: customerId, from_currency: 'USD', to_currency: 'NGN', from_amount_minor: Number.MAX_SAFE_INTEGER } });
    assert.ok(huge.status === 400 || huge.status === 422, String(huge.status));
    if (us.status === 201) {
      const response = await api('POST', '/v1/exchange/quotes', { body: { customer_id: customerId, from_currency: 'USD', to_currency: 'NGN', from_amount_minor: 10_000_000_000_000 } });
      assert.equal(response.status, 400);
      assert.equal(response.body.error.code, 'VALIDATION');
      assert.match(response.body.error.message, /from_amount_minor is too large/);
    }
  });

  it('service quote with the largest safe provider cost → 4xx, never 500', async () => {
    const response = await api('POST', '/v1/services/quote', { body: { provider_cost_minor: Number.MAX_SAFE_INTEGER, currency: 'NGN', country_code: 'NG', service_code: 'airtime', customer_id: victim.id } });
    assert.ok(response.status >= 400 && response.status < 500, String(response.status));
  });
});

describe('2. customer-scoped keys and webhooks', () => {
  it('customer-scoped key: subscriptions create/list, deliveries list, redeliver → 403 FORBIDDEN', async () => {
    const scoped = tracked(client(server.baseUrl, scopedKey));
    const answers = [
      await scoped('POST', '/v1/webhooks/subscriptions', { body: { url: 'http://127.0.0.1:9/hook', events: ['payment.completed'] } }),
      await scoped('GET', '/v1/webhooks/subscriptions'),
      await scoped('GET', '/v1/webhooks/deliveries'),
      await scoped('POST', `/v1/webhooks/deliveries/01ARZ3NDEKTSV4RRFFQ69G5FAV/redeliver`),
    ];
    for (const answer of answers) {
      assert.equal(answer.status, 403, JSON.stringify(answer.body));
      assert.equal(answer.body.error.code, 'FORBIDDEN');
    }
  });
});

describe('3. webhook URL policy over HTTP', () => {
  it('live key: trailing-dot, embedded-IPv4, documentation, non-443 URLs → 400 VALIDATION', async () => {
    const live = tracked(client(server.baseUrl, liveKey));
    for (const url of ['https://localhost./', 'https://foo.internal./x', 'https://[::127.0.0.1]/', 'https://[::ffff:0:127.0.0.1]/', 'https://[64:ff9b::a9fe:a9fe]/', 'https://[2002:7f00:1::]/', 'https://203.0.113.5/', 'https://hooks.example.com:8443/', 'https://100.64.0.1/']) {
      const response = await live('POST', '/v1/webhooks/subscriptions', { body: { url, events: ['payment.completed'] } });
      assert.equal(response.status, 400, url);
      assert.equal(response.body.error.code, 'VALIDATION');
    }
  });
});

describe('4. caps', () => {
  it('webhook subscriptions: the 4th active one with KOBO_WEBHOOK_SUBSCRIPTIONS_MAX=3 → 409 CONFLICT naming the cap', async () => {
    for (let i = 0; i < 3; i += 1) {
      const created = await api('POST', '/v1/webhooks/subscriptions', { body: { url: `http://127.0.0.1:9/hook-${i}`, events: ['payment.completed'] } });
      assert.equal(created.status, 201, JSON.stringify(created.body));
    }
    const refused = await api('POST', '/v1/webhooks/subscriptions', { body: { url: 'http://127.0.0.1:9/hook-4', events: ['payment.completed'] } });
    assert.equal(refused.status, 409);
    assert.equal(refused.body.error.code, 'CONFLICT');
    assert.match(refused.body.error.message, /most allowed \(3\)/);
    assert.equal((await api('GET', '/v1/webhooks/subscriptions')).body.data.length, 3);
  });

  it('slow reader: pipelined requests whose replies are never read are not all executed and buffered', async () => {
    const socket = net.connect(server.port, '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    // The server may drop this connection once its replies back up (that is the point): a write
    // after the drop fails with ECONNRESET or EPIPE, which this client expects and keeps.
    const socketErrors: string[] = [];
    socket.on('error', (error: NodeJS.ErrnoException) => socketErrors.push(error.code ?? error.message));
    socket.pause(); // never read
    const request = `GET /v1/openapi.json HTTP/1.1\r\nHost: x\r\n\r\n`;
    const first = await fetch(`${server.baseUrl}/v1/openapi.json`);
    const remainingBefore = Number(first.headers.get('x-ratelimit-remaining'));
    await first.arrayBuffer();
    for (let i = 0; i < 400 && !socket.destroyed; i += 1) socket.write(request);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const probe = await fetch(`${server.baseUrl}/v1/openapi.json`);
    const remainingAfter = Number(probe.headers.get('x-ratelimit-remaining'));
    await probe.arrayBuffer();
    socket.destroy();
    const executed = remainingBefore - remainingAfter - 1;
    assert.ok(executed < 200, `the server executed ${executed} of 400 pipelined requests nobody read`);
    assert.equal(probe.status, 200); // the server still answers everyone else
    assert.ok(socketErrors.every((code) => code === 'ECONNRESET' || code === 'EPIPE'), socketErrors.join(','));
  });
});

describe('5. text fields', () => {
  const bad: Array<[string, string]> = [['NUL', 'Ada\u0000'], ['C0', 'Ada\u0007'], ['C1', 'Ada\u0085'], ['bidi override', 'Ada\u202Egnp.exe'], ['bidi isolate', 'A\u2066da'], ['zero-width', 'A\u200Bda'], ['BOM', '\uFEFFAda'], ['word joiner', 'A\u2060da'], ['lone surrogate', 'Ada\uD800']];
  for (const [what, name] of bad) {
    it(`customer name with ${what} → 400 VALIDATION naming the field; nothing stored`, async () => {
      const email = uniqueEmail();
      const phone = uniquePhone();
      const response = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: { name, email, phone, country_code: 'NG' } });
      assert.equal(response.status, 400);
      assert.match(response.body.error.message, /^name must not contain/);
      // Nothing stored: the same email and phone are still free.
      const retry = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: 'Ada', email, phone, country_code: 'NG' } });
      assert.equal(retry.status, 201);
    });
  }
  it('reference, narration, metadata keys and PATCH name refuse the same characters', async () => {
    const before = await victimState();
    const payment = await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: victim.id, amount_minor: 1_000, currency: 'NGN', method: 'bank_transfer', reference: 'inv\u202E1' } });
    assert.equal(payment.status, 400);
    assert.match(payment.body.error.message, /^reference must not contain/);
    const transfer = await api('POST', '/v1/transfers', { idempotencyKey: idem(), body: { customer_id: victim.id, beneficiary_id: '01ARZ3NDEKTSV4RRFFQ69G5FAV', amount_minor: 1_000, currency: 'NGN', narration: 'rent\u0000' } });
    assert.equal(transfer.status, 400);
    assert.match(transfer.body.error.message, /^narration must not contain/);
    const order = await api('POST', '/v1/services/orders', { idempotencyKey: idem(), body: orderBody({ metadata: { 'a\u200Bb': 1 } }) });
    assert.equal(order.status, 400);
    assert.match(order.body.error.message, /^metadata has a key that is not allowed/);
    const patch = await api('PATCH', `/v1/customers/${victim.id}`, { body: { name: 'Ada\u2067' } });
    assert.equal(patch.status, 400);
    assert.equal(await victimState(), before);
  });
});

describe('6. data dir permissions', () => {
  it('data dir 0700; databases, their -wal/-shm files and control.db 0600', () => {
    assert.equal(fs.statSync(dataDir).mode & 0o777, 0o700);
    const files = fs.readdirSync(dataDir).filter((f) => /\.db(-wal|-shm)?$/.test(f));
    assert.ok(files.some((f) => f === 'control.db') && files.some((f) => f === 'webhooks.db') && files.some((f) => f.endsWith('-wal')), files.join(','));
    for (const file of files) assert.equal(fs.statSync(path.join(dataDir, file)).mode & 0o077, 0, `${file} is readable by others`);
  });
});

describe('7. Idempotency-Key on any POST', () => {
  it('settle retried with its key → the stored 200 replays; same key on another payment → 409', async () => {
    const payment = await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: victim.id, amount_minor: 20_000, currency: 'NGN', method: 'bank_transfer' } });
    const other = await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: victim.id, amount_minor: 20_000, currency: 'NGN', method: 'bank_transfer' } });
    assert.equal(payment.status, 201, JSON.stringify(payment.body));
    const k = idem('settle');
    const first = await api('POST', `/v1/test_helpers/payments/${payment.body.data.id}/settle`, { idempotencyKey: k });
    const again = await api('POST', `/v1/test_helpers/payments/${payment.body.data.id}/settle`, { idempotencyKey: k });
    assert.equal(first.status, 200);
    assert.equal(again.status, 200);
    assert.deepEqual(again.body, first.body);
    const reused = await api('POST', `/v1/test_helpers/payments/${other.body.data.id}/settle`, { idempotencyKey: k });
    assert.equal(reused.status, 409);
    assert.equal(reused.body.error.code, 'IDEMPOTENCY_REPLAY');
    const unkeyed = await api('POST', `/v1/test_helpers/payments/${payment.body.data.id}/settle`);
    assert.equal(unkeyed.status, 409, 'without a key a second settle is still a conflict');
  });

  it('clock advance, subscription create and cancel replay their first result', async () => {
    const k = idem('clock');
    const first = await api('POST', '/v1/test_helpers/clock/advance', { idempotencyKey: k, body: { seconds: 60 } });
    const again = await api('POST', '/v1/test_helpers/clock/advance', { idempotencyKey: k, body: { seconds: 60 } });
    assert.equal(first.status, 200);
    assert.equal(again.body.data.offset_seconds, first.body.data.offset_seconds, 'the clock moved once');
    const changed = await api('POST', '/v1/test_helpers/clock/advance', { idempotencyKey: k, body: { seconds: 120 } });
    assert.equal(changed.status, 409);
    const live = tracked(client(server.baseUrl, liveKey));
    const sk = idem('sub');
    const sub = await live('POST', '/v1/webhooks/subscriptions', { idempotencyKey: sk, body: { url: 'https://hooks.example.com/kobo', events: ['payment.completed'] } });
    const subAgain = await live('POST', '/v1/webhooks/subscriptions', { idempotencyKey: sk, body: { url: 'https://hooks.example.com/kobo', events: ['payment.completed'] } });
    assert.equal(sub.status, 201);
    assert.equal(subAgain.body.data.id, sub.body.data.id);
    assert.equal((await live('GET', '/v1/webhooks/subscriptions')).body.data.length, 1);
    const txn = await api('POST', '/v1/transactions', { idempotencyKey: idem(), body: { type: 'funding', customer_id: victim.id, amount_minor: 100, currency: 'NGN' } });
    assert.equal(txn.status, 201, JSON.stringify(txn.body));
    const ck = idem('cancel');
    const cancelled = await api('POST', `/v1/transactions/${txn.body.data.id}/cancel`, { idempotencyKey: ck });
    const cancelledAgain = await api('POST', `/v1/transactions/${txn.body.data.id}/cancel`, { idempotencyKey: ck });
    assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body));
    assert.equal(cancelledAgain.status, 200);
    assert.deepEqual(cancelledAgain.body, cancelled.body);
  });
});

describe('8. rate-limit headers', () => {
  it('authenticated 404, 405 and 413 carry X-RateLimit-Remaining and X-RateLimit-Reset', async () => {
    const notFound = await api('GET', '/v1/nothing-here');
    const notAllowed = await api('DELETE', '/v1/customers');
    const tooLarge = await client(server.baseUrl, key)('POST', '/v1/customers', { rawBody: JSON.stringify({ name: 'x'.repeat(70_000) }), headers: { 'content-type': 'application/json' } });
    for (const [response, status] of [[notFound, 404], [notAllowed, 405], [tooLarge, 413]] as Array<[ApiResponse, number]>) {
      assert.equal(response.status, status);
      assert.match(response.headers.get('x-ratelimit-remaining') ?? '', /^\d+$/, String(status));
      assert.match(response.headers.get('x-ratelimit-reset') ?? '', /^\d+$/, String(status));
    }
  });
});

/** A value for `schema`, mostly valid in shape, with hostile strings and numbers mixed in. */
function arbitraryOf(schema: TSchema, depth = 0): fc.Arbitrary<unknown> {
  const s = schema as TSchema & { type?: string; anyOf?: TSchema[]; const?: unknown; properties?: Record<string, TSchema>; items?: TSchema; pattern?: string; maxLength?: number; required?: string[] };
  const hostileString = fc.oneof(
    fc.string({ maxLength: 40 }),
    fc.constantFrom('\u0000', 'a\u202Eb', '\uD800', '\u200B', '../../etc/passwd', '<script>', "' OR 1=1 --", '%00', 'NaN', '01ARZ3NDEKTSV4RRFFQ69G5FAV', 'NGN', 'NG', '+2348031234567', 'https://[::1]/', 'https://localhost./'),
  );
  const hostileNumber = fc.oneof(fc.integer(), fc.constantFrom(0, -1, 1.5, 1e308, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER + 2, 1e13, -0));
  if (s.const !== undefined) return fc.oneof(fc.constant(s.const), hostileString);
  if (s.anyOf !== undefined) return fc.oneof(...s.anyOf.map((x) => arbitraryOf(x, depth)));
  switch (s.type) {
    case 'string':
      return hostileString;
    case 'integer':
    case 'number':
      return hostileNumber;
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return depth > 3 ? fc.constant([]) : fc.array(s.items === undefined ? fc.anything() : arbitraryOf(s.items, depth + 1), { maxLength: 4 });
    case 'object': {
      if (depth > 3) return fc.constant({});
      const shape: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [name, property] of Object.entries(s.properties ?? {})) shape[name] = arbitraryOf(property, depth + 1);
      return fc.tuple(fc.record(shape, { requiredKeys: s.required ?? [] }), fc.dictionary(hostileString, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 2 }), fc.boolean())
        .map(([known, extra, addExtra]) => (addExtra ? { ...extra, ...known } : known));
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

describe('fuzz: bodies derived from the request schemas', () => {
  const routes: Array<[string, string, TSchema]> = [
    ['POST', '/v1/customers', CustomerCreate],
    ['PATCH', '/v1/customers/:victim', CustomerPatch],
    ['POST', '/v1/transactions', TransactionCreate],
    ['POST', '/v1/payments', PaymentCreate],
    ['POST', '/v1/exchange/quotes', ExchangeQuoteCreate],
    ['POST', '/v1/beneficiaries', BeneficiaryCreate],
    ['POST', '/v1/transfers', TransferCreate],
    ['POST', '/v1/services/quote', ServiceQuoteCreate],
    ['POST', '/v1/services/orders', ServiceOrderCreate],
    ['POST', '/v1/webhooks/subscriptions', SubscriptionCreate],
  ];
  it('every route: no 5xx, every error in the envelope, the server stays up', { timeout: 240_000 }, async () => {
    for (const [method, route, schema] of routes) {
      await fc.assert(
        fc.asyncProperty(arbitraryOf(schema), async (body) => {
          const urlPath = route.replace(':victim', victim.id);
          // Hostile bodies aimed at the victim only where the body names a customer, and never with the
          // victim's PIN: whatever is accepted is a legitimate request, so verify still has to be clean.
          await api(method, urlPath, { idempotencyKey: idem('fuzz'), body });
        }),
        { numRuns: 40, seed: 4242 },
      );
      assert.equal(server.child.exitCode, null, `${method} ${route}: the server is alive`);
    }
  });
});

describe('4. PIN attempts (durable lock)', () => {
  it('5 wrong PINs → PIN_LOCKED for the right one too, across a restart, until the window passes', { timeout: 90_000 }, async () => {
    const customer = await newCustomer();
    assert.equal((await api('PATCH', `/v1/customers/${customer.id}`, { body: { pin: '4321' } })).status, 200);
    const attempt = (pin: string) => api('POST', '/v1/transfers', {
      idempotencyKey: idem('pin'),
      headers: { 'x-transaction-authorization': pin },
      body: { customer_id: customer.id, beneficiary_id: '01ARZ3NDEKTSV4RRFFQ69G5FAV', amount_minor: 1_000, currency: 'NGN' },
    });
    const right = await attempt('4321');
    assert.notEqual(right.body.error?.code, 'PIN_REQUIRED', 'the right PIN passes before any lock');
    const wrong = await Promise.all(['0000', '1111', '2222', '3333', '4444', '5555', '6666'].map((pin) => attempt(pin)));
    const codes = wrong.map((r) => r.body.error.code).sort();
    assert.deepEqual(codes, ['PIN_LOCKED', 'PIN_LOCKED', 'PIN_REQUIRED', 'PIN_REQUIRED', 'PIN_REQUIRED', 'PIN_REQUIRED', 'PIN_REQUIRED'], 'parallel guesses cannot pass the limit');
    const locked = await attempt('4321');
    assert.equal(locked.status, 403);
    assert.equal(locked.body.error.code, 'PIN_LOCKED');
    assert.match(locked.headers.get('retry-after') ?? '', /^\d+$/);

    await server.stop();
    await start();
    const afterRestart = await attempt('4321');
    assert.equal(afterRestart.body.error.code, 'PIN_LOCKED', 'a restart does not lift the lock');

    assert.equal((await api('POST', '/v1/test_helpers/clock/advance', { body: { seconds: 16 * 60 } })).status, 200);
    const unlocked = await attempt('4321');
    assert.ok(!['PIN_LOCKED', 'PIN_REQUIRED'].includes(unlocked.body.error?.code), JSON.stringify(unlocked.body));
  });
});

describe('end state', () => {
  it('no 5xx in this file, the server never exited, and kobo verify is clean after a stop', { timeout: 120_000 }, async () => {
    assert.ok(statuses.length > 300, `${statuses.length} requests`);
    assert.equal(statuses.filter((s) => s >= 500).length, 0);
    assert.equal(server.child.exitCode, null);
    assert.doesNotMatch(server.output(), /fatal|RangeError|Maximum call stack/);
    await server.stop();
    const verified = kobo(dataDir, 'verify');
    assert.equal(verified.status, 0, verified.stdout + verified.stderr);
    await start(); // for the after() hook
  });
});

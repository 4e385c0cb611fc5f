// Covers the fixed-window rate limits: per secret key, reads and writes apart, public endpoints per
// source IP, the X-RateLimit-* headers and the 429 RATE_LIMITED refusal.
// Runs under node:test against one real server started with 5 reads and 3 writes a minute.
// Invariant checked: a key never gets more than its limit in a window, and a refused request runs nothing.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import os from 'node:os';
import { RateLimiter, ipSubject } from '../../src/http/rate-limit.ts';
import { client, idem, secretKey, startServer, uniqueEmail, uniquePhone, type ApiResponse, type TestServer } from '../helpers/server.ts';

const READ_PER_MIN = 5;
const WRITE_PER_MIN = 3;
const ACCOUNT = 'ratelimited';
const keys = {
  reader: secretKey(),
  writer: secretKey(),
  sameAccount: secretKey(),
  separate: secretKey(),
};
let server: TestServer;
let api: ReturnType<typeof client>;

function customerBody(): Record<string, string> {
  return { name: 'Rate Limit', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' };
}

interface LimitedResponse {
  status: number;
  remaining: string | null;
  reset: string | null;
  requestId: string | null;
  body: any;
}

function fromApi(res: ApiResponse): LimitedResponse {
  return {
    status: res.status,
    remaining: res.headers.get('x-ratelimit-remaining'),
    reset: res.headers.get('x-ratelimit-reset'),
    requestId: res.headers.get('x-request-id'),
    body: res.body,
  };
}

function assertReset(reset: string | null): void {
  assert.match(reset ?? '', /^\d+$/, 'X-RateLimit-Reset is whole seconds');
  const seconds = Number(reset);
  assert.ok(seconds >= 1 && seconds <= 60, `X-RateLimit-Reset ${seconds} outside 1..60`);
}

function assertLimited(res: LimitedResponse): void {
  assert.equal(res.status, 429, JSON.stringify(res.body));
  assert.equal(res.body.error.code, 'RATE_LIMITED');
  assert.equal(res.remaining, '0');
  assertReset(res.reset);
  assert.ok(res.requestId !== null && res.requestId.length > 0, 'X-Request-Id on 429');
  assert.equal(res.body.error.request_id, res.requestId);
}

/** GET from a chosen local address, so the server sees another source IP. */
function getFrom(localAddress: string, urlPath: string, headers: Record<string, string> = {}, target: { host: string; port: number } = { host: '127.0.0.1', port: server.port }): Promise<LimitedResponse> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: target.host, port: target.port, path: urlPath, method: 'GET', localAddress, agent: false, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          remaining: (res.headers['x-ratelimit-remaining'] as string | undefined) ?? null,
          reset: (res.headers['x-ratelimit-reset'] as string | undefined) ?? null,
          requestId: (res.headers['x-request-id'] as string | undefined) ?? null,
          body: JSON.parse(text),
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

before(async () => {
  server = await startServer({
    keys: [`${keys.reader}@${ACCOUNT}`, `${keys.writer}@${ACCOUNT}`, `${keys.sameAccount}@${ACCOUNT}`, `${keys.separate}@other`],
    env: { KOBO_RATE_LIMIT_READ_PER_MIN: String(READ_PER_MIN), KOBO_RATE_LIMIT_WRITE_PER_MIN: String(WRITE_PER_MIN) },
  });
  api = client(server.baseUrl);
});

after(async () => {
  await server?.stop();
});

describe('rate limits per key', () => {
  it(`reads: ${READ_PER_MIN} GETs → Remaining counts down to 0 with Reset 1..60; the next → 429 RATE_LIMITED`, async () => {
    const path = '/v1/test_helpers/clock';
    for (let i = 1; i <= READ_PER_MIN; i += 1) {
      const res = fromApi(await api('GET', path, { key: keys.reader }));
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.remaining, String(READ_PER_MIN - i));
      assertReset(res.reset);
    }
    assertLimited(fromApi(await api('GET', path, { key: keys.reader })));
    // A refused request does not count, and the window does not reopen early.
    assertLimited(fromApi(await api('GET', path, { key: keys.reader })));
  });

  it('reads exhausted → writes still allowed: counted apart, and limited at their own bound', async () => {
    for (let i = 1; i <= WRITE_PER_MIN; i += 1) {
      const res = fromApi(await api('POST', '/v1/customers', { key: keys.reader, idempotencyKey: idem(), body: customerBody() }));
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assert.equal(res.remaining, String(WRITE_PER_MIN - i));
      assertReset(res.reset);
    }
    assertLimited(fromApi(await api('POST', '/v1/customers', { key: keys.reader, idempotencyKey: idem(), body: customerBody() })));
    assertLimited(fromApi(await api('GET', '/v1/test_helpers/clock', { key: keys.reader })));
  });

  it('writes: POST and PATCH share the write bucket; a 400 after authentication still counts', async () => {
    const created = fromApi(await api('POST', '/v1/customers', { key: keys.writer, idempotencyKey: idem(), body: customerBody() }));
    assert.equal(created.status, 201);
    assert.equal(created.remaining, String(WRITE_PER_MIN - 1));
    const invalid = fromApi(await api('POST', '/v1/customers', { key: keys.writer, idempotencyKey: idem(), body: { name: 'no email' } }));
    assert.equal(invalid.status, 400);
    assert.equal(invalid.remaining, String(WRITE_PER_MIN - 2));
    const patched = fromApi(await api('PATCH', `/v1/customers/${created.body.data.id}`, { key: keys.writer, body: { name: 'Renamed' } }));
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    assert.equal(patched.remaining, '0');
    assertLimited(fromApi(await api('PATCH', `/v1/customers/${created.body.data.id}`, { key: keys.writer, body: { name: 'Again' } })));
    // Reads of this key are untouched by its writes.
    const read = fromApi(await api('GET', `/v1/customers/${created.body.data.id}`, { key: keys.writer }));
    assert.equal(read.status, 200);
    assert.equal(read.body.data.name, 'Renamed');
    assert.equal(read.remaining, String(READ_PER_MIN - 1));
  });

  it('a rate-limited write → not executed: its idempotency key and email stay free', async () => {
    const body = customerBody();
    const idemKey = idem('limited');
    assertLimited(fromApi(await api('POST', '/v1/customers', { key: keys.reader, idempotencyKey: idemKey, body })));
    // Another key of the same account (own bucket, shared idempotency scope) uses the same key with another body.
    const other = fromApi(await api('POST', '/v1/customers', { key: keys.sameAccount, idempotencyKey: idemKey, body: customerBody() }));
    assert.equal(other.status, 201, JSON.stringify(other.body));
    const sameEmail = fromApi(await api('POST', '/v1/customers', { key: keys.sameAccount, idempotencyKey: idem(), body }));
    assert.equal(sameEmail.status, 201, JSON.stringify(sameEmail.body));
  });

  it('two keys → separate buckets: a limited key leaves the other untouched', async () => {
    assertLimited(fromApi(await api('GET', '/v1/test_helpers/clock', { key: keys.reader })));
    const fresh = fromApi(await api('GET', '/v1/test_helpers/clock', { key: keys.separate }));
    assert.equal(fresh.status, 200);
    assert.equal(fresh.remaining, String(READ_PER_MIN - 1));
    assertReset(fresh.reset);
  });
});

describe('rate limits on public endpoints', () => {
  it(`public endpoints → limited per source IP: ${READ_PER_MIN} GETs, then 429; another IP has its own bucket`, async (t) => {
    const paths = ['/v1/countries', '/v1/countries/NG/context', '/v1/openapi.json', '/v1/countries', '/v1/countries/gh/context'];
    assert.equal(paths.length, READ_PER_MIN);
    for (const [i, path] of paths.entries()) {
      const res = await getFrom('127.0.0.1', path);
      assert.equal(res.status, 200, `${path}: ${JSON.stringify(res.body)}`);
      assert.equal(res.remaining, String(READ_PER_MIN - i - 1));
      assertReset(res.reset);
    }
    assertLimited(await getFrom('127.0.0.1', '/v1/countries'));
    // Keys have their own buckets: a keyed request from the same IP is still served.
    const keyed = fromApi(await api('GET', '/v1/test_helpers/clock', { key: keys.separate }));
    assert.equal(keyed.status, 200);
    let other: LimitedResponse;
    try {
      other = await getFrom('127.0.0.2', '/v1/countries');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EADDRNOTAVAIL') return t.skip('127.0.0.2 is not a local address here');
      throw error;
    }
    assert.equal(other.status, 200, JSON.stringify(other.body));
    assert.equal(other.remaining, String(READ_PER_MIN - 1));
  });
});

describe('RateLimiter: bound on remembered windows', () => {
  const T0 = 1_700_000_000_000;

  it('RateLimiter: more live subjects than entriesMax → holds entriesMax; the newest stay limited', () => {
    const limiter = new RateLimiter({ readPerMin: 1, writePerMin: 1, entriesMax: 4 });
    for (let i = 0; i < 10; i += 1) assert.equal(limiter.take(`s${i}`, false, T0 + i).allowed, true);
    assert.equal(limiter.size, 4);
    for (let i = 6; i < 10; i += 1) assert.equal(limiter.take(`s${i}`, false, T0 + 20).allowed, false, `s${i}`);
    assert.equal(limiter.size, 4);
  });

  it('RateLimiter: full map with expired windows → the expired ones go first, live ones are kept', () => {
    const limiter = new RateLimiter({ readPerMin: 1, writePerMin: 1, entriesMax: 3 });
    for (const subject of ['a', 'b', 'c']) limiter.take(subject, false, T0);
    assert.equal(limiter.take('d', false, T0 + 61_000).allowed, true);
    assert.equal(limiter.size, 1);
    limiter.take('e', false, T0 + 61_000);
    limiter.take('f', false, T0 + 61_000);
    assert.equal(limiter.size, 3);
    assert.equal(limiter.take('d', false, T0 + 61_001).allowed, false, 'live window kept');
  });

  it('RateLimiter: a renewed window counts as new → the oldest live window is the one dropped', () => {
    const limiter = new RateLimiter({ readPerMin: 1, writePerMin: 1, entriesMax: 2 });
    limiter.take('a', false, T0);
    limiter.take('b', false, T0 + 30_000);
    assert.equal(limiter.take('a', false, T0 + 61_000).allowed, true, 'a renewed');
    assert.equal(limiter.take('c', false, T0 + 62_000).allowed, true);
    assert.equal(limiter.size, 2);
    assert.equal(limiter.take('a', false, T0 + 62_001).allowed, false, 'a, renewed last, is still limited');
  });
});

describe('failed authentication', () => {
  it('unknown keys from one IP → 401 with X-RateLimit headers, then 429 once the IP budget is spent', async (t) => {
    const statuses: number[] = [];
    let last: LimitedResponse | undefined;
    for (let i = 0; i < READ_PER_MIN + 2; i += 1) {
      try {
        // A source address no other test uses, so this IP's budget starts full.
        last = await getFrom('127.0.0.7', '/v1/customers/01ARZ3NDEKTSV4RRFFQ69G5FAV', { authorization: `Bearer ${secretKey()}` });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EADDRNOTAVAIL') return t.skip('127.0.0.7 is not a local address here');
        throw error;
      }
      statuses.push(last.status);
      assert.notEqual(last.remaining, null, 'a 401 carries X-RateLimit-Remaining');
    }
    assert.deepEqual(statuses, [...Array(READ_PER_MIN).fill(401), 429, 429]);
    assertLimited(last!);
  });
});

describe('IPv6 budgets', () => {
  it('ipSubject: IPv6 addresses share their /64 (compressed or full form, any case, with a zone); IPv4 and IPv4-mapped IPv6 are the IPv4 address', () => {
    const subject = ipSubject('2001:db8:1:2::1');
    for (const ip of ['2001:db8:1:2:ffff:ffff:ffff:ffff', '2001:0DB8:0001:0002:0000:0000:0000:0009', '2001:db8:1:2:a:b:c:d', '2001:db8:1:2::', '2001:db8:1:2::1%eth0']) {
      assert.equal(ipSubject(ip), subject, ip);
    }
    assert.equal(subject, 'ip:2001:db8:1:2::/64');
    for (const ip of ['2001:db8:1:3::1', '2001:db8::1', '2001:db9:1:2::1']) assert.notEqual(ipSubject(ip), subject, ip);
    assert.equal(ipSubject('::1'), 'ip:0:0:0:0::/64');
    assert.equal(ipSubject('fd00:0000:0000:0000:0000:0000:0000:0002'), 'ip:fd00:0:0:0::/64');
    assert.equal(ipSubject('::2:3:4:5:6'), 'ip:0:0:0:2::/64');
    assert.equal(ipSubject('1:2:3:4:5::'), 'ip:1:2:3:4::/64');
    assert.equal(ipSubject('::ffff:1.2.3.4'), 'ip:1.2.3.4', 'IPv4-mapped (dotted) is its IPv4 address');
    assert.equal(ipSubject('0000:0000:0000:0000:0000:ffff:0102:0304'), 'ip:1.2.3.4', 'IPv4-mapped (uWS full form) too');
    assert.equal(ipSubject('1.2.3.4'), 'ip:1.2.3.4');
    assert.notEqual(ipSubject('::ffff:1.2.3.4'), ipSubject('::1'), 'a mapped address is not lumped into ::/64');
  });

  it('a server on :: → an IPv6 client (::1) spends its budget, then 429; an IPv4 client (seen as ::ffff:127.0.0.1) and another /64 keep their own', async (t) => {
    const v6 = await startServer({ env: { HOST: '::', KOBO_RATE_LIMIT_READ_PER_MIN: String(READ_PER_MIN) } });
    try {
      const at = (host: string) => ({ host, port: v6.port });
      let res: LimitedResponse;
      try {
        for (let i = 1; i <= READ_PER_MIN; i += 1) {
          res = await getFrom('::1', '/v1/countries', {}, at('::1'));
          assert.equal(res.status, 200, JSON.stringify(res.body));
          assert.equal(res.remaining, String(READ_PER_MIN - i));
        }
      } catch (error) {
        if (['EADDRNOTAVAIL', 'EAFNOSUPPORT'].includes((error as NodeJS.ErrnoException).code ?? '')) return t.skip('no IPv6 loopback here');
        throw error;
      }
      assertLimited(await getFrom('::1', '/v1/countries', {}, at('::1')));
      const v4 = await getFrom('127.0.0.1', '/v1/countries', {}, at('127.0.0.1'));
      assert.equal(v4.status, 200, 'an IPv4 client is not charged to ::/64 with ::1');
      assert.equal(v4.remaining, String(READ_PER_MIN - 1));
      const global = os.networkInterfaces();
      const other = Object.values(global).flat().find((a) => a !== undefined && a.family === 'IPv6' && !a.internal && !a.address.startsWith('fe80'))?.address;
      if (other === undefined) return t.skip('no second IPv6 address to test another /64 from');
      const elsewhere = await getFrom(other, '/v1/countries', {}, at(other));
      assert.equal(elsewhere.status, 200, `${other} is in another /64`);
      assert.equal(elsewhere.remaining, String(READ_PER_MIN - 1));
    } finally {
      await v6.stop();
    }
  });
});

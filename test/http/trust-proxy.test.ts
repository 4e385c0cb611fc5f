// KOBO_TRUST_PROXY over real HTTP: which address key IP allow-lists, per-IP rate limits and the request
// log see when kobo runs behind reverse proxies. Real server processes; keys made with the CLI's
// --ip-allow; requests sent from chosen local addresses (127.0.0.1, 127.0.0.2, ::1) with forged headers.
// Invariant checked: a forwarding header is believed only from a trusted peer and only as far as
// trusted proxies wrote it; without KOBO_TRUST_PROXY it is never read.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startServer, tempDataDir, type TestServer } from '../helpers/server.ts';
import { kobo } from '../helpers/cli.ts';

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: any;
}

/** A GET from `localAddress` to the server on `host`, with the given header lines (an array: several lines). */
function getFrom(server: TestServer, options: { host?: string; localAddress?: string; path: string; key?: string; headers?: Record<string, string | string[]> }): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | string[]> = { ...options.headers };
    if (options.key !== undefined) headers.authorization = `Bearer ${options.key}`;
    const req = http.request(
      { host: options.host ?? '127.0.0.1', port: server.port, path: options.path, method: 'GET', localAddress: options.localAddress ?? options.host ?? '127.0.0.1', agent: false, headers },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: JSON.parse(text) }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** A key made by the operator CLI, allowed from `ipAllow` only. */
function keyAllowing(dataDir: string, ipAllow: string): string {
  const created = kobo(dataDir, '--init', 'keys', 'create', '--ip-allow', ipAllow);
  assert.equal(created.status, 0, created.stderr);
  const match = /secret \(shown once\): (sk_\w+_[A-Za-z0-9_-]+)/.exec(created.stdout);
  assert.ok(match, created.stdout);
  return match[1]!;
}

function assertAllowed(answer: Answer): void {
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
}

function assertRefusedFrom(answer: Answer, ip: string): void {
  assert.equal(answer.status, 403, JSON.stringify(answer.body));
  assert.equal(answer.body.error.code, 'FORBIDDEN');
  assert.equal(answer.body.error.message, `Requests from ${ip} are not allowed for this key.`);
}

const CLOCK = '/v1/test_helpers/clock';
const ENV = { KOBO_SHARD_MODE: 'inline' };
let untrusting: TestServer;
let byAddress: TestServer;
let byHops: TestServer;
let limited: TestServer;
const keys = { untrusting: '', byAddress: '', byAddressV6: '', byHops: '', byHopsV6: '' };
let secondLoopback = true;

before(async () => {
  const dirs = { untrusting: tempDataDir('kobo-xff-off'), byAddress: tempDataDir('kobo-xff-cidr'), byHops: tempDataDir('kobo-xff-hops'), limited: tempDataDir('kobo-xff-rate') };
  keys.untrusting = keyAllowing(dirs.untrusting, '203.0.113.0/24');
  keys.byAddress = keyAllowing(dirs.byAddress, '203.0.113.0/24');
  keys.byAddressV6 = keyAllowing(dirs.byAddress, '2001:db8:cafe::/48');
  keys.byHops = keyAllowing(dirs.byHops, '203.0.113.0/24');
  keys.byHopsV6 = keyAllowing(dirs.byHops, '2001:db8:cafe::/48');
  [untrusting, byAddress, byHops, limited] = await Promise.all([
    startServer({ dataDir: dirs.untrusting, shards: 1, env: ENV }),
    startServer({ dataDir: dirs.byAddress, shards: 1, env: { ...ENV, KOBO_TRUST_PROXY: '127.0.0.1, ::1' } }),
    // Listening on :: (both families): the peer is ::1 or 127.0.0.1; with a hop count every peer is a proxy.
    startServer({ dataDir: dirs.byHops, shards: 1, env: { ...ENV, HOST: '::', KOBO_TRUST_PROXY: '2', KOBO_TRUST_PROXY_HEADER: 'Forwarded' } }),
    startServer({ dataDir: dirs.limited, shards: 1, env: { ...ENV, KOBO_TRUST_PROXY: '127.0.0.0/8', KOBO_RATE_LIMIT_READ_PER_MIN: '3' } }),
  ]);
  try {
    await getFrom(untrusting, { localAddress: '127.0.0.2', path: '/healthz' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EADDRNOTAVAIL') throw error;
    secondLoopback = false;
  }
});

after(async () => {
  await Promise.all([untrusting, byAddress, byHops, limited].map((s) => s?.stop()));
});

describe('trust proxy: not configured', () => {
  it('X-Forwarded-For 203.0.113.7 without KOBO_TRUST_PROXY → ignored: 403 naming the peer 127.0.0.1', async () => {
    assertRefusedFrom(await getFrom(untrusting, { path: CLOCK, key: keys.untrusting, headers: { 'x-forwarded-for': '203.0.113.7' } }), '127.0.0.1');
  });

  it('Forwarded for=203.0.113.7 without KOBO_TRUST_PROXY → ignored: 403', async () => {
    assertRefusedFrom(await getFrom(untrusting, { path: CLOCK, key: keys.untrusting, headers: { forwarded: 'for=203.0.113.7' } }), '127.0.0.1');
  });
});

describe('trust proxy: a list of proxy addresses (127.0.0.1, ::1), X-Forwarded-For', () => {
  it('trusted peer 127.0.0.1 with X-Forwarded-For 203.0.113.7 → the key allowed 203.0.113.0/24 works (200)', async () => {
    assertAllowed(await getFrom(byAddress, { path: CLOCK, key: keys.byAddress, headers: { 'x-forwarded-for': '203.0.113.7' } }));
  });

  it('trusted peer without the header → the peer is the client: 403 naming 127.0.0.1', async () => {
    assertRefusedFrom(await getFrom(byAddress, { path: CLOCK, key: keys.byAddress }), '127.0.0.1');
  });

  it('untrusted peer 127.0.0.2 spoofing X-Forwarded-For 203.0.113.7 → ignored: 403 naming 127.0.0.2', async (t) => {
    if (!secondLoopback) return t.skip('127.0.0.2 is not a local address here');
    assertRefusedFrom(await getFrom(byAddress, { localAddress: '127.0.0.2', path: CLOCK, key: keys.byAddress, headers: { 'x-forwarded-for': '203.0.113.7' } }), '127.0.0.2');
  });

  it('chain "203.0.113.7, 127.0.0.1" → the trusted hop is passed over: 203.0.113.7 (200)', async () => {
    assertAllowed(await getFrom(byAddress, { path: CLOCK, key: keys.byAddress, headers: { 'x-forwarded-for': '203.0.113.7, 127.0.0.1' } }));
  });

  it('chain "203.0.113.7, 198.51.100.4" → the walk stops at the first untrusted hop: 403 naming 198.51.100.4', async () => {
    assertRefusedFrom(await getFrom(byAddress, { path: CLOCK, key: keys.byAddress, headers: { 'x-forwarded-for': '203.0.113.7, 198.51.100.4' } }), '198.51.100.4');
  });

  it('two header lines (the client\'s spoofed one first, the proxy\'s own after) → the lines combine: 403 naming 198.51.100.4', async () => {
    assertRefusedFrom(await getFrom(byAddress, { path: CLOCK, key: keys.byAddress, headers: { 'x-forwarded-for': ['203.0.113.7', '198.51.100.4'] } }), '198.51.100.4');
  });

  it('malformed X-Forwarded-For ("unknown", "999.1.1.1", "") → the proxy that wrote it is the client: 403 naming 127.0.0.1, never a 400 or 500', async () => {
    for (const value of ['unknown', '999.1.1.1', '203.0.113.7, ', '203.0.113.7,,']) {
      assertRefusedFrom(await getFrom(byAddress, { path: CLOCK, key: keys.byAddress, headers: { 'x-forwarded-for': value } }), '127.0.0.1');
    }
  });

  it('ports and brackets a proxy may add ("203.0.113.7:5120", "[2001:db8:cafe::9]:443") → the address alone', async () => {
    assertAllowed(await getFrom(byAddress, { path: CLOCK, key: keys.byAddress, headers: { 'x-forwarded-for': '203.0.113.7:5120' } }));
    assertAllowed(await getFrom(byAddress, { path: CLOCK, key: keys.byAddressV6, headers: { 'x-forwarded-for': '[2001:db8:cafe::9]:443' } }));
  });

  it('IPv6: X-Forwarded-For 2001:db8:cafe::17 → the key allowed 2001:db8:cafe::/48 works; the 203.0.113.0/24 key is refused naming it', async () => {
    assertAllowed(await getFrom(byAddress, { path: CLOCK, key: keys.byAddressV6, headers: { 'x-forwarded-for': '2001:db8:cafe::17' } }));
    assertRefusedFrom(await getFrom(byAddress, { path: CLOCK, key: keys.byAddress, headers: { 'x-forwarded-for': '2001:DB8:CAFE::17' } }), '2001:db8:cafe::17');
  });

  it('the request log\'s ip is the forwarded client', async () => {
    const answer = await getFrom(byAddress, { path: '/v1/countries', headers: { 'x-forwarded-for': '203.0.113.99' } });
    const requestId = String(answer.headers['x-request-id']);
    await new Promise((resolve) => setTimeout(resolve, 400)); // the log writer flushes info lines every 200 ms
    const line = byAddress.output().split('\n').find((l) => l.includes(`"req_id":"${requestId}"`));
    assert.ok(line, byAddress.output());
    assert.equal(JSON.parse(line).ip, '203.0.113.99');
  });
});

describe('trust proxy: a hop count (2) and the Forwarded header, server on ::', () => {
  it('IPv6 peer ::1, Forwarded "for=203.0.113.7, for=\\"[2001:db8::1]:4711\\"" → two hops back: 203.0.113.7 (200)', async () => {
    const forwarded = 'for=203.0.113.7;proto=https, for="[2001:db8::1]:4711";by=_edge';
    assertAllowed(await getFrom(byHops, { host: '::1', path: CLOCK, key: keys.byHops, headers: { forwarded } }));
  });

  it('three hops "for=198.51.100.9, for=203.0.113.7, for=10.0.0.2" → the 2nd from the right: 203.0.113.7; what the client wrote further left is not read', async () => {
    const forwarded = 'for=198.51.100.9, for=203.0.113.7, for=10.0.0.2';
    assertAllowed(await getFrom(byHops, { host: '::1', path: CLOCK, key: keys.byHops, headers: { forwarded } }));
    assertRefusedFrom(await getFrom(byHops, { host: '::1', path: CLOCK, key: keys.byHops, headers: { forwarded: 'for=203.0.113.7, for=198.51.100.9, for=10.0.0.2' } }), '198.51.100.9');
  });

  it('one hop only "for=\\"[2001:db8:cafe::17]\\"" (fewer than the count) → the furthest address: 2001:db8:cafe::17', async () => {
    assertAllowed(await getFrom(byHops, { host: '::1', path: CLOCK, key: keys.byHopsV6, headers: { forwarded: 'for="[2001:db8:cafe::17]"' } }));
    assertRefusedFrom(await getFrom(byHops, { host: '::1', path: CLOCK, key: keys.byHops, headers: { forwarded: 'for="[2001:db8:cafe::17]"' } }), '2001:db8:cafe::17');
  });

  it('IPv4 peer 127.0.0.1 on the dual-stack socket → the same rule: 203.0.113.7 (200)', async () => {
    assertAllowed(await getFrom(byHops, { path: CLOCK, key: keys.byHops, headers: { forwarded: 'for=203.0.113.7, for=10.0.0.2' } }));
  });

  it('X-Forwarded-For when Forwarded is the configured header → not read: 403 naming the peer ::1', async () => {
    assertRefusedFrom(await getFrom(byHops, { host: '::1', path: CLOCK, key: keys.byHops, headers: { 'x-forwarded-for': '203.0.113.7' } }), '::1');
  });

  it('Forwarded for=unknown, an obfuscated _node or an element without for= → the proxy that wrote it: 403 naming ::1', async () => {
    for (const forwarded of ['for=unknown', 'for=_hidden', 'proto=https;by=10.0.0.1', 'for="[2001:db8::1"']) {
      assertRefusedFrom(await getFrom(byHops, { host: '::1', path: CLOCK, key: keys.byHops, headers: { forwarded } }), '::1');
    }
  });
});

describe('trust proxy: per-IP rate limits (3 reads a minute) keyed on the forwarded address', () => {
  it('GET /v1/countries: client A spends its 3 reads → 429; client B behind the same proxy still → 200; A again → 429', async () => {
    const from = (client: string) => getFrom(limited, { path: '/v1/countries', headers: { 'x-forwarded-for': client } });
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await from('203.0.113.10')).status);
    assert.deepEqual(statuses, [200, 200, 200, 429]);
    const other = await from('203.0.113.11');
    assert.equal(other.status, 200, JSON.stringify(other.body));
    assert.equal(other.headers['x-ratelimit-remaining'], '2');
    assert.equal((await from('203.0.113.10')).status, 429);
  });

  it('a client guessing keys is charged to its forwarded address: its refusals turn to 429, another client keeps its 401', async () => {
    const guess = (client: string) => getFrom(limited, { path: CLOCK, key: 'sk_test_notarealkey0000', headers: { 'x-forwarded-for': client } });
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await guess('198.51.100.20')).status);
    assert.deepEqual(statuses, [401, 401, 401, 429]);
    assert.equal((await guess('198.51.100.21')).status, 401);
  });
});

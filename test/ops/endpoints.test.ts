// Operator endpoints over real HTTP: /healthz and /readyz (no key), /metrics in Prometheus text with
// request, shard, WAL and fsync series, KOBO_METRICS_TOKEN guarding /metrics, /docs with no external asset,
// and the JSON request log (request id, route, status, duration; stacks never reach the client).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { client, idem, secretKey, startServer, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';
import { until } from '../helpers/wait.ts';

const key = secretKey();
let server: TestServer;

before(async () => {
  server = await startServer({ keys: [key], shards: 2, env: { KOBO_LOG_LEVEL: 'debug' } });
});
after(async () => {
  await server.stop();
});

async function text(path: string, headers: Record<string, string> = {}): Promise<{ status: number; type: string; body: string }> {
  const response = await fetch(server.baseUrl + path, { headers });
  return { status: response.status, type: response.headers.get('content-type') ?? '', body: await response.text() };
}

/** The value of one sample line, e.g. `kobo_wal_records_total{shard="0"}`; 0 when absent. */
function sample(metrics: string, series: string): number {
  const line = metrics.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

test('GET /healthz and /readyz answer without a key', async () => {
  const health = await text('/healthz');
  assert.equal(health.status, 200);
  assert.deepEqual(JSON.parse(health.body), { status: 'ok' });
  const ready = await text('/readyz');
  assert.equal(ready.status, 200);
  assert.deepEqual(JSON.parse(ready.body), { status: 'ready' });
});

test('GET /metrics: requests by route template and status, latency histogram, shard series', async () => {
  const api = client(server.baseUrl, key);
  const customer = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: 'Metrics', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
  assert.equal(customer.status, 201);
  const id = customer.body.data.id as string;
  assert.equal((await api('GET', `/v1/customers/${id}`)).status, 200);
  const refused = await api('GET', '/v1/customers/cus_nope');
  assert.ok(refused.status >= 400 && refused.status < 500);
  assert.equal((await api('GET', '/nowhere')).status, 404);

  // Shards report once a second: wait until the customer's WAL record is counted.
  const metrics = await until(
    async () => (await text('/metrics')).body,
    (body) => /^kobo_wal_records_total\{shard="\d"\} [1-9]/m.test(body),
    'the shard report with the WAL record',
    5_000,
  );
  const response = await text('/metrics');
  assert.equal(response.status, 200);
  assert.match(response.type, /^text\/plain; version=0\.0\.4/);
  assert.equal(sample(metrics, 'kobo_http_requests_total{method="POST",route="/v1/customers",status="201"}'), 1);
  assert.equal(sample(metrics, 'kobo_http_requests_total{method="GET",route="/v1/customers/:id",status="200"}'), 1);
  assert.ok(sample(metrics, `kobo_http_requests_total{method="GET",route="/v1/customers/:id",status="${refused.status}"}`) >= 1);
  assert.equal(sample(metrics, 'kobo_http_requests_total{method="GET",route="unmatched",status="404"}'), 1);
  assert.ok(!metrics.includes(id), 'labels never carry ids');
  assert.match(metrics, /^kobo_http_request_duration_seconds_bucket\{le="0\.005",method="POST",route="\/v1\/customers"\} \d+$/m);
  assert.match(metrics, /^kobo_group_commit_seconds_count\{shard="\d"\} [1-9]/m);
  assert.match(metrics, /^kobo_journal_fsync_seconds_count\{shard="\d"\} [1-9]/m);
  assert.match(metrics, /^kobo_group_commit_commands_bucket\{le="1",shard="\d"\} [1-9]/m);
  assert.match(metrics, /^kobo_shard_queue_depth\{shard="0"\} 0$/m);
  assert.match(metrics, /^kobo_shard_queue_depth\{shard="1"\} 0$/m);
  for (const name of ['kobo_snapshot_duration_seconds', 'kobo_rail_calls_total', 'kobo_webhook_deliveries_total', 'kobo_process_cpu_seconds_total', 'kobo_nodejs_eventloop_lag_seconds']) {
    assert.match(metrics, new RegExp(`^# TYPE ${name} `, 'm'), name);
  }
});

test('rail answers are counted by rail and outcome (a wallet debit settled by the sandbox rail)', async () => {
  const api = client(server.baseUrl, key);
  const customer = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: 'Rail', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
  const customerId = customer.body.data.id as string;
  const funding = await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: customerId, amount_minor: 100_000, currency: 'NGN', method: 'bank_transfer' } });
  assert.equal(funding.status, 201, JSON.stringify(funding.body));
  assert.equal((await api('POST', `/v1/test_helpers/payments/${funding.body.data.id}/settle`)).status, 200);
  const paid = await api('POST', '/v1/payments', { idempotencyKey: idem(), body: { customer_id: customerId, amount_minor: 1_000, currency: 'NGN', method: 'wallet' } });
  assert.equal(paid.status, 201, JSON.stringify(paid.body));
  await until(async () => (await text('/metrics')).body, (body) => /^kobo_rail_calls_total\{rail="collection",outcome="settled"\} [1-9]/m.test(body), 'a rail answer counted', 5_000);
});

test('the request log is JSON with request id, route, status and duration; debug shows shard recovery', async () => {
  const api = client(server.baseUrl, key);
  const response = await api('GET', '/v1/customers/cus_nope');
  const requestId = response.headers.get('x-request-id')!;
  const line = await until(
    async () => server.output().split('\n').find((l) => l.includes(`"req_id":"${requestId}"`)),
    (found) => found !== undefined,
    'the request log line',
  );
  const entry = JSON.parse(line!) as Record<string, unknown>;
  assert.equal(entry.msg, 'request');
  assert.equal(entry.level, 'info');
  assert.equal(entry.route, '/v1/customers/:id');
  assert.equal(entry.status, response.status);
  assert.equal(typeof entry.ms, 'number');
  assert.match(String(entry.time), /^\d{4}-\d\d-\d\dT/);
  assert.match(server.output(), /"level":"debug".*"msg":"shard 0 recovered"/);
});

test('GET /docs: only local assets under a strict CSP; the renderer script is served here; a <noscript> listing of every operation', async () => {
  const docs = await text('/docs');
  assert.equal(docs.status, 200);
  assert.match(docs.type, /^text\/html/);
  const csp = (await fetch(`${server.baseUrl}/docs`)).headers.get('content-security-policy') ?? '';
  assert.match(csp, /default-src 'none'/);
  assert.match(csp, /script-src 'self';/);
  assert.doesNotMatch(docs.body, /(src|href)="(https?:)?\/\//i, 'no external asset');
  const scripts = [...docs.body.matchAll(/<script src="([^"]+)"><\/script>/g)].map((m) => m[1]);
  assert.deepEqual(scripts, ['/docs/redoc.standalone.js']);
  const bundle = await fetch(`${server.baseUrl}/docs/redoc.standalone.js`);
  assert.equal(bundle.status, 200);
  assert.match(bundle.headers.get('content-type') ?? '', /^text\/javascript/);
  assert.ok((await bundle.text()).length > 500_000, 'the Redoc standalone bundle');
  assert.match(docs.body, /<redoc spec-url="\/v1\/openapi.json"/);
  const openapi = JSON.parse((await text('/v1/openapi.json')).body) as { paths: Record<string, Record<string, unknown>> };
  let operations = 0;
  for (const [path, methods] of Object.entries(openapi.paths)) {
    for (const method of Object.keys(methods)) {
      operations += 1;
      const escaped = path.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
      assert.ok(docs.body.includes(`${method.toUpperCase()}</span> <code>${escaped}</code>`), `${method} ${path} missing from /docs`);
    }
  }
  assert.ok(operations > 30, `expected the whole API, got ${operations} operations`);
  // Bodies and responses are expanded, $refs to components included: the transfer's fields are listed.
  const transfer = docs.body.slice(docs.body.indexOf('POST</span> <code>/v1/transfers</code>'));
  assert.match(transfer.slice(0, transfer.indexOf('</section>')), /<code>beneficiary_id<\/code>.*<code>destination_amount_minor<\/code>/s);
});

test('KOBO_METRICS_TOKEN: /metrics needs the bearer token; /healthz stays open', { timeout: 60_000 }, async () => {
  const guarded = await startServer({ keys: [secretKey()], shards: 1, env: { KOBO_METRICS_TOKEN: 'scrape-secret-1' } });
  try {
    const refused = await fetch(`${guarded.baseUrl}/metrics`);
    assert.equal(refused.status, 401);
    assert.equal(((await refused.json()) as { error: { code: string } }).error.code, 'UNAUTHENTICATED');
    assert.equal((await fetch(`${guarded.baseUrl}/metrics`, { headers: { authorization: 'Bearer wrong' } })).status, 401);
    const allowed = await fetch(`${guarded.baseUrl}/metrics`, { headers: { authorization: 'Bearer scrape-secret-1' } });
    assert.equal(allowed.status, 200);
    assert.match(await allowed.text(), /kobo_http_requests_total/);
    // The scheme is case-insensitive; the token is not, and nothing may follow it.
    assert.equal((await fetch(`${guarded.baseUrl}/metrics`, { headers: { authorization: 'bearer scrape-secret-1' } })).status, 200);
    for (const header of ['Bearer SCRAPE-SECRET-1', 'Bearer scrape-secret-1 extra', 'Basic scrape-secret-1', 'Bearer scrape-secret-12']) {
      assert.equal((await fetch(`${guarded.baseUrl}/metrics`, { headers: { authorization: header } })).status, 401, header);
    }
    assert.equal((await fetch(`${guarded.baseUrl}/healthz`)).status, 200);
  } finally {
    await guarded.stop();
  }
});

test('KOBO_METRICS_TOKEN: the scraper has its own budget, so public requests from its address cannot blind it; a wrong token is charged to the address', { timeout: 60_000 }, async () => {
  const guarded = await startServer({ shards: 1, env: { KOBO_METRICS_TOKEN: 'scrape-secret-2', KOBO_RATE_LIMIT_READ_PER_MIN: '5' } });
  try {
    const statuses: number[] = [];
    for (let i = 0; i < 6; i += 1) statuses.push((await fetch(`${guarded.baseUrl}/v1/countries`)).status);
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429], 'the address has spent its reads');
    for (let i = 0; i < 3; i += 1) {
      const scraped = await fetch(`${guarded.baseUrl}/metrics`, { headers: { authorization: 'Bearer scrape-secret-2' } });
      assert.equal(scraped.status, 200, await scraped.text());
      assert.equal(scraped.headers.get('x-ratelimit-remaining'), String(4 - i), 'charged to the scraper\'s own budget');
    }
    assert.equal((await fetch(`${guarded.baseUrl}/metrics`, { headers: { authorization: 'Bearer wrong' } })).status, 429, 'a wrong token spends the address\'s budget');
  } finally {
    await guarded.stop();
  }
});

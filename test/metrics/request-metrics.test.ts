// The request metrics kept outside prom-client: what a scrape shows is exactly what prom-client's own
// counter and histogram show for the same requests.
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { Counter, Histogram, Registry } from 'prom-client';
import { RequestMetrics } from '../../src/metrics/request-metrics.ts';

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

it('scrape: the same text as prom-client’s Counter and Histogram for the same requests (bounds, +Inf, sum, count)', async () => {
  const ours = new Registry();
  const requests = new RequestMetrics(ours, BUCKETS);
  const theirs = new Registry();
  const count = new Counter({ name: 'kobo_http_requests_total', help: 'HTTP requests answered, by method, route template and status.', labelNames: ['method', 'route', 'status'], registers: [theirs] });
  const seconds = new Histogram({ name: 'kobo_http_request_duration_seconds', help: 'Time from request received to response written, by method and route template.', labelNames: ['method', 'route'], buckets: BUCKETS, registers: [theirs] });
  const samples: Array<[string, string, number, number]> = [
    ['GET', '/v1/wallets/:id', 200, 0.0004],
    ['GET', '/v1/wallets/:id', 200, 0.001], // on a bound: counted in that bucket
    ['GET', '/v1/wallets/:id', 404, 0.02],
    ['POST', '/v1/payments', 201, 0.3],
    ['POST', '/v1/payments', 201, 12], // past the last bound: +Inf only
    ['GET', 'unmatched', 404, 0.00001],
  ];
  for (const [method, route, status, s] of samples) {
    requests.observe(method, route, status, s);
    count.inc({ method, route, status: String(status) });
    seconds.observe({ method, route }, s);
  }
  assert.equal(await ours.metrics(), await theirs.metrics());
  ours.resetMetrics();
  assert.doesNotMatch(await ours.metrics(), /route=/, 'a reset forgets every series');
});

it('reset of one metric: that metric forgets its series, the other keeps its own; later requests count from zero', async () => {
  const ours = new Registry();
  const requests = new RequestMetrics(ours, BUCKETS);
  requests.observe('GET', '/v1/wallets/:id', 200, 0.002);
  requests.observe('POST', '/v1/payments', 201, 0.2);
  ours.getSingleMetric('kobo_http_requests_total')!.reset();
  let text = await ours.metrics();
  assert.doesNotMatch(text, /kobo_http_requests_total\{/, 'the counter forgot its series');
  assert.match(text, /kobo_http_request_duration_seconds_count\{method="GET",route="\/v1\/wallets\/:id"\} 1/, 'the histogram kept its own');
  ours.getSingleMetric('kobo_http_request_duration_seconds')!.reset();
  requests.observe('GET', '/v1/wallets/:id', 200, 0.003);
  text = await ours.metrics();
  assert.match(text, /kobo_http_requests_total\{method="GET",route="\/v1\/wallets\/:id",status="200"\} 1/);
  assert.match(text, /kobo_http_request_duration_seconds_count\{method="GET",route="\/v1\/wallets\/:id"\} 1/);
  assert.doesNotMatch(text, /kobo_http_request_duration_seconds_count\{method="POST"/, 'the reset histogram shows only what came after');
});

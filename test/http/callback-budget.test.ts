// Connector callbacks have a rate budget of their own, per connector, charged only once the signature
// has been checked: unauthenticated traffic from the connector's address (or a NAT it shares) cannot
// starve its callbacks, and forged callbacks are charged to their source IP like any failed
// authentication, never to the connector they name. Over HTTP against a real live server; callbacks
// are signed here with the connector's secret, from chosen loopback addresses.
import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { secretKey, startServer, type TestServer } from '../helpers/server.ts';
import { connectorsFile } from '../helpers/connector.ts';
import { signedHeaders } from '../../src/connectors/signing.ts';
import { mintId } from '../../src/ids.ts';

const SECRET = 'callback-budget-secret-0123';
const OTHER_SECRET = 'callback-budget-secret-4567';
const WRITE_PER_MIN = 60;
const CALLBACKS_PER_MIN = 5;
let server: TestServer;

before(async () => {
  // No connector listens at these URLs: a callback for an unknown payout is acknowledged (applied: false) without any call out.
  const file = connectorsFile([
    { name: 'psp', url: 'http://127.0.0.1:9', secret: SECRET, rails: ['payout'], timeout_ms: 500 },
    { name: 'other', url: 'http://127.0.0.1:9', secret: OTHER_SECRET, rails: ['collection'], timeout_ms: 500 },
  ]);
  server = await startServer({
    keys: [`${secretKey('live')}@acme`],
    env: { KOBO_CONNECTORS_FILE: file, KOBO_RATE_LIMIT_WRITE_PER_MIN: String(WRITE_PER_MIN), KOBO_RATE_LIMIT_CALLBACKS_PER_MIN: String(CALLBACKS_PER_MIN) },
  });
});
after(async () => server?.stop());

interface Answer {
  status: number;
  remaining: string | null;
  retryAfter: string | null;
  body: any;
}

/** POST from a chosen loopback address, so the server sees that source IP. */
function postFrom(localAddress: string, urlPath: string, body: string, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port: server.port, path: urlPath, method: 'POST', localAddress, agent: false, headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...headers } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => {
          let parsed: unknown = text;
          try {
            parsed = JSON.parse(text);
          } catch {
            // the checkout page answers HTML
          }
          resolve({ status: res.statusCode ?? 0, remaining: (res.headers['x-ratelimit-remaining'] as string | undefined) ?? null, retryAfter: (res.headers['retry-after'] as string | undefined) ?? null, body: parsed });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

function callback(from: string, connector: string, secret: string): Promise<Answer> {
  const body = JSON.stringify({ reference: `${mintId(3, Date.now())}:1`, kind: 'payout', status: 'settled', provider_reference: 'BANK-1', failure_code: null, detail: null });
  return postFrom(from, `/v1/connectors/${connector}/callbacks`, body, signedHeaders(secret, body));
}

async function callbacksCounted(connector: string, result: string): Promise<number> {
  const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
  const series = `kobo_connector_callbacks_total{connector="${connector}",result="${result}"} `;
  const line = text.split('\n').find((l) => l.startsWith(series));
  return line === undefined ? 0 : Number(line.slice(series.length));
}

it('60 unauthenticated requests from one IP spend its budget; a signed callback from it is still 200, charged to its connector; forged ones are charged to the IP', async () => {
  // Forged callbacks first, from their own address: 401 each, counted against that IP's budget.
  for (let i = 1; i <= 3; i += 1) {
    const forged = await callback('127.0.0.3', 'psp', 'not-the-connector-secret');
    assert.equal(forged.status, 401, JSON.stringify(forged.body));
    assert.equal(forged.remaining, String(WRITE_PER_MIN - i), 'a forged callback spends its source IP\'s budget');
  }
  assert.equal(await callbacksCounted('psp', 'rejected'), 3);
  // The audit's example: 60 unauthenticated 404s on the public checkout, from the connector's address.
  for (let i = 0; i < WRITE_PER_MIN; i += 1) {
    const probe = await postFrom('127.0.0.1', `/v1/checkout/${mintId(1, Date.now())}/decline?token=abc`, '');
    assert.equal(probe.status, 404, JSON.stringify(probe.body));
  }
  assert.equal((await postFrom('127.0.0.1', `/v1/checkout/${mintId(1, Date.now())}/decline?token=abc`, '')).status, 429, 'the IP budget is spent');
  // Signed callbacks from that address: the connector's own budget, which the forged ones did not touch.
  for (let i = 1; i <= CALLBACKS_PER_MIN; i += 1) {
    const signed = await callback('127.0.0.1', 'psp', SECRET);
    assert.equal(signed.status, 200, JSON.stringify(signed.body));
    assert.equal(signed.body.data.applied, false);
    assert.equal(signed.remaining, String(CALLBACKS_PER_MIN - i));
  }
  const over = await callback('127.0.0.1', 'psp', SECRET);
  assert.equal(over.status, 429, JSON.stringify(over.body));
  assert.equal(over.body.error.code, 'RATE_LIMITED');
  assert.equal(over.remaining, '0');
  assert.match(over.retryAfter ?? '', /^\d+$/);
  // Per connector: another connector's callbacks are untouched.
  const other = await callback('127.0.0.1', 'other', OTHER_SECRET);
  assert.equal(other.status, 200, JSON.stringify(other.body));
  assert.equal(other.remaining, String(CALLBACKS_PER_MIN - 1));
  // A forged callback from the spent address is refused by that address's budget.
  assert.equal((await callback('127.0.0.1', 'psp', 'not-the-connector-secret')).status, 429);
  // A callback naming no connector is unauthenticated traffic too.
  const nobody = await callback('127.0.0.4', 'nobody', SECRET);
  assert.equal(nobody.status, 404);
  assert.equal(nobody.remaining, String(WRITE_PER_MIN - 1));
  assert.equal(await callbacksCounted('psp', 'accepted'), CALLBACKS_PER_MIN);
  assert.ok(await callbacksCounted('psp', 'rejected') >= 4, 'forged and over-budget callbacks are counted rejected');
});

// kobo's side of a connector call over real HTTP: a stand-in connector on 127.0.0.1 answers with bodies
// it signs itself, and callConnector must trust only a verified answer to the very request it sent.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { callConnector } from '../../src/connectors/client.ts';
import { signedHeaders } from '../../src/connectors/signing.ts';
import type { ConnectorConfig } from '../../src/connectors/connector-config.ts';

const SECRET = 'connector-client-test-secret';
/** What the stand-in answers next: the body it signs (or a function of the request body). */
let answer: (request: Record<string, unknown>) => Record<string, unknown> = () => ({});
let sign = (body: string): Record<string, string> => signedHeaders(SECRET, body);
let server: http.Server;
let connector: ConnectorConfig;

before(async () => {
  server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => (raw += chunk.toString()));
    req.on('end', () => {
      const body = JSON.stringify(answer(JSON.parse(raw) as Record<string, unknown>));
      res.writeHead(200, { 'Content-Type': 'application/json', ...sign(body) });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  connector = { name: 'standin', url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, secret: SECRET, rails: ['collection', 'payout', 'fx'] };
});
after(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('callConnector: which answers are trusted', () => {
  it('a signed answer naming the request’s own reference → its outcome', async () => {
    answer = (request) => ({ reference: request.reference, status: 'settled', provider_reference: 'BANK-1', detail: { receipt: 'r1' } });
    assert.deepEqual(await callConnector(connector, 'collection', 'submit', '01JPAYMENT00000000000000001:1', { amount_minor: 100 }), { outcome: 'settled', providerReference: 'BANK-1', detail: { receipt: 'r1' } });
  });

  it('a signed "settled" answering another reference (a replayed FX or payout answer) → unknown, never settled', async () => {
    for (const other of ['fx-3f1c0a9e-1111-4222-8333-944445555666', '01JTRANSFER0000000000000001:1', '01JPAYMENT00000000000000001:2', '']) {
      answer = () => ({ reference: other, status: 'settled', provider_reference: 'BANK-1', detail: { mid_rate: '0.00065' } });
      assert.deepEqual(await callConnector(connector, 'collection', 'submit', '01JPAYMENT00000000000000001:1', {}), { outcome: 'unknown' }, other);
    }
    answer = () => ({ status: 'settled' });
    assert.deepEqual(await callConnector(connector, 'payout', 'requery', '01JTRANSFER0000000000000002:1', {}), { outcome: 'unknown' }, 'an answer naming no reference');
  });

  it('the right reference with a bad or missing signature → unknown', async () => {
    answer = (request) => ({ reference: request.reference, status: 'settled' });
    sign = (body) => signedHeaders('another-secret-of-16+', body);
    assert.deepEqual(await callConnector(connector, 'collection', 'submit', '01JPAYMENT00000000000000003:1', {}), { outcome: 'unknown' });
    sign = () => ({});
    assert.deepEqual(await callConnector(connector, 'collection', 'submit', '01JPAYMENT00000000000000003:1', {}), { outcome: 'unknown' });
    sign = (body) => signedHeaders(SECRET, body);
  });
});
